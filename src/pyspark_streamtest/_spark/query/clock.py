"""The manual ``org.apache.spark.util.Clock`` of one query: a small JVM class the driver
moves through Py4J and the query's stream thread waits on.

``ProcessingTimeExecutor`` reads ``getTimeMillis()`` at the start of a trigger (that
value becomes the batch's ``batchTimestampMs``), runs the trigger, then calls
``waitTillTime(next_trigger_ms)`` and ignores its return value. So:

* while the stream thread sits in ``waitTillTime`` the query is idle, and we know
  the time of its next trigger;
* ``set_time(t)`` with ``t >= next_trigger_ms`` lets exactly one trigger run at ``t``;
* ``release_once()`` lets one trigger run *without* moving time (the trigger then
  runs at the current time and waits for the same next trigger time again).

The clock lives in the JVM (compiled once per JVM with Janino, which every Spark ships
for its code generation), so the stream thread never calls into Python for the time:
Spark reads its trigger clock 20 to 30 times a micro-batch (around every timed section
of its progress report), and each read was a Py4J callback into a Python clock. The
driver's side takes one Py4J call per move and one per wait: :meth:`await_idle` blocks
in the JVM on the clock's monitor, which ``waitTillTime`` notifies as it starts waiting,
so the driver still learns exactly when a trigger is over, without polling.

An interrupt of the stream thread ends its wait only once the driver has said it is
stopping the query (:meth:`stopping`): ``query.stop()`` sets the query inactive, then
interrupts the thread and joins it, and the woken thread sees the query stopped and
ends (its interrupt status kept), as it does when Spark's own manual clock throws the
interrupt out of its wait. Any other interrupt leaves the wait to a move of time: a
trigger runs only when the driver lets it. :meth:`close` releases every wait for good.
"""

from __future__ import annotations

import contextlib
import signal
import threading
import time
from collections.abc import Callable, Iterator

from ...errors import hide_our_frames
from ..jvm import JavaObject, Jvm, compiled_class

__tracebackhide__ = hide_our_frames

_CLASS_NAME = "PysparkStreamtestManualClock"
_NO_WAIT = -(2**63)  # Long.MIN_VALUE: no thread is waiting

_SOURCE = """
public class PysparkStreamtestManualClock implements org.apache.spark.util.Clock {
    private long now;
    private long waitTarget = Long.MIN_VALUE;
    private long waitCalls;
    private boolean releasePending;
    private boolean closed;
    private boolean stopping;

    public synchronized long getTimeMillis() { return now; }
    public synchronized long nanoTime() { return now * 1000000L; }

    public synchronized long waitTillTime(long targetTime) {
        waitCalls++;
        waitTarget = targetTime;
        notifyAll();
        boolean interrupted = false;
        while (now < targetTime && !releasePending && !closed) {
            try { wait(); } catch (InterruptedException e) {
                interrupted = true;
                if (stopping) break;
            }
        }
        releasePending = false;
        waitTarget = Long.MIN_VALUE;
        notifyAll();
        if (interrupted) Thread.currentThread().interrupt();
        return now;
    }

    public synchronized long waitCalls() { return waitCalls; }
    public synchronized long nextTriggerMs() { return waitTarget; }
    public synchronized boolean isParked() {
        return waitTarget != Long.MIN_VALUE && now < waitTarget && !releasePending && !closed;
    }

    public synchronized boolean setTime(long time) {
        now = time;
        notifyAll();
        return waitTarget != Long.MIN_VALUE && waitTarget <= now;
    }

    public synchronized long setTimeCounted(long time) {
        long calls = waitCalls;
        return setTime(time) ? calls : -1L;
    }

    public synchronized long releaseOnce() {
        releasePending = true;
        notifyAll();
        return waitCalls;
    }

    public synchronized void close() { closed = true; notifyAll(); }
    public synchronized boolean stopping() { stopping = true; return isParked(); }

    public synchronized boolean isIdle(long minWaitCalls) {
        return waitCalls >= minWaitCalls && waitTarget != Long.MIN_VALUE;
    }

    public synchronized boolean awaitIdle(long minWaitCalls, long timeoutMs)
            throws InterruptedException {
        long deadline = System.nanoTime() + timeoutMs * 1000000L;
        while (!isIdle(minWaitCalls)) {
            long left = (deadline - System.nanoTime()) / 1000000L;
            if (left <= 0) return false;
            wait(left);
        }
        return true;
    }
}
"""

def _clock_class(jvm: Jvm) -> JavaObject:
    """The clock class, compiled in this JVM on first use (about 0.2 s, once); it
    implements Spark's Clock interface."""
    return compiled_class(jvm, _SOURCE, _CLASS_NAME, "org.apache.spark.util.Clock")


@contextlib.contextmanager
def _interrupts_deferred() -> Iterator[None]:
    """Hold SIGINT back during a call into the JVM (Unix, main thread): Ctrl-C in the
    middle of a Py4J call would leave the JVM's answer unread on the connection, and the
    next call would read it. The interrupt arrives as soon as the call returns."""
    if not hasattr(signal, "pthread_sigmask") or (
        threading.current_thread() is not threading.main_thread()
    ):
        yield
        return
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})


IDLE_TRIGGER_CONF = {"spark.sql.streaming.pollingDelay": "0"}
"""Per-query setting: after a trigger that runs no batch, Spark's stream thread sleeps
``spark.sql.streaming.pollingDelay`` (10 ms by default) of real time before it asks the
trigger clock for the next trigger. Time is the driver's clock, so that sleep only
delays the moment the driver learns that the query is idle: every driver step that
ends with such a trigger (``process_all_available`` checking that Spark owes no further
batch, a query's first trigger, a clock advance over idle triggers) paid 10 ms for it.
Nothing else reads the setting; the batches, their times and their order are the same."""


class ClockWaitTimeoutError(Exception):
    """The stream thread did not get back to ``waitTillTime`` in time."""


class QueryInactiveError(Exception):
    """The query stopped (normally: it failed) while we waited for it."""


class ManualClock:
    """Processing time for one query; the driver moves it, the stream thread waits on it."""

    # How often a waiting driver thread checks that the query is still alive. This is a
    # liveness check for a query that died without reaching the clock again, not a delay
    # to let Spark catch up: a healthy query wakes the waiter at once (the JVM's wait
    # returns when the stream thread starts waiting on the clock).
    _LIVENESS_CHECK_S = 0.05

    def __init__(self, jvm: Jvm, start_ms: int) -> None:
        self.java: JavaObject = _clock_class(jvm).newInstance()
        """The JVM clock, for the query's ``startQuery``."""
        self._now = int(start_ms)  # only the driver moves the clock: its time, mirrored
        self.java.setTime(self._now)

    # --- driver side ----------------------------------------------------------------------
    @property
    def now_ms(self) -> int:
        return self._now

    @property
    def wait_calls(self) -> int:
        """How many times the stream thread has started waiting on the clock."""
        return int(self.java.waitCalls())

    @property
    def next_trigger_ms(self) -> int | None:
        """The time the idle stream thread waits for, or None while it is running."""
        target = int(self.java.nextTriggerMs())
        return None if target == _NO_WAIT else target

    @property
    def parked(self) -> bool:
        """True while the stream thread waits and nothing has released it: no move of
        the clock up to its next trigger and no :meth:`release_once` it has yet to wake
        from. Unlike :attr:`next_trigger_ms`, which stays set from the release until the
        thread wakes, this is False for a trigger let run but not yet started: only the
        driver moves the clock, so a parked thread stays parked until it does."""
        return bool(self.java.isParked())

    def set_time(self, now_ms: int) -> bool:
        """Move time; True if this wakes the stream thread (a trigger will run)."""
        self._now = int(now_ms)
        return bool(self.java.setTime(self._now))

    def advance_to(self, now_ms: int) -> int | None:
        """Move time; if this wakes the waiting stream thread (a trigger will run), the
        :attr:`wait_calls` it woke from (read with the move, in one call), else None."""
        self._now = int(now_ms)
        calls = int(self.java.setTimeCounted(self._now))
        return None if calls < 0 else calls

    def release_once(self) -> int:
        """Let the idle stream thread run one trigger at the current time; returns the
        :attr:`wait_calls` it is released from (read with the release, in one call)."""
        return int(self.java.releaseOnce())

    def close(self) -> None:
        """Release every wait, now and later (used when the query stops)."""
        self.java.close()

    def stopping(self) -> bool:
        """From now on an interrupt of the waiting stream thread (``query.stop()``'s,
        which comes after the query is marked inactive) ends its wait. Returns
        :attr:`parked` as it was then (read with the change, in one call)."""
        return bool(self.java.stopping())

    def await_idle(
        self, min_wait_calls: int, is_active: Callable[[], bool], timeout_s: float
    ) -> None:
        """Block until the stream thread has entered ``waitTillTime`` at least
        ``min_wait_calls`` times in all and is waiting now, i.e. the trigger(s) we let
        run have finished (batch, sink and progress included)."""
        deadline = time.monotonic() + timeout_s
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise ClockWaitTimeoutError(f"no idle stream thread after {timeout_s:.0f} s")
            wait_ms = max(1, int(min(self._LIVENESS_CHECK_S, remaining) * 1000))
            with _interrupts_deferred():
                if self.java.awaitIdle(min_wait_calls, wait_ms):
                    return
                active = is_active()
                # (idle after all: it got there between the wait and the check)
                if not active and not self.java.isIdle(min_wait_calls):
                    raise QueryInactiveError()
