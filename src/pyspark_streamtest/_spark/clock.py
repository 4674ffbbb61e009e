"""A manual ``org.apache.spark.util.Clock`` implemented in Python, one per query.

The query's stream thread calls it through the Py4J callback server.
``ProcessingTimeExecutor`` reads ``getTimeMillis()`` at the start of a trigger
(that value becomes the batch's ``batchTimestampMs``), runs the trigger, then calls
``waitTillTime(next_trigger_ms)`` and ignores its return value. So:

* while the stream thread sits in ``waitTillTime`` the query is idle, and we know
  the time of its next trigger;
* ``set_time(t)`` with ``t >= next_trigger_ms`` lets exactly one trigger run at ``t``;
* ``release_once()`` lets one trigger run *without* moving time (the trigger then
  runs at the current time and waits for the same next trigger time again).
"""

from __future__ import annotations

import contextlib
import signal
import threading
import time
from collections.abc import Callable, Iterator

from ..errors import hide_our_frames

__tracebackhide__ = hide_our_frames


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
    # to let Spark catch up: a healthy query wakes the waiter at once through the condition.
    _LIVENESS_CHECK_S = 0.05

    def __init__(self, start_ms: int, on_call: Callable[[], None] = lambda: None) -> None:
        """``on_call`` runs on the calling (callback) thread at each ``getTimeMillis`` and
        ``waitTillTime``."""
        self._on_call = on_call
        self._cv = threading.Condition()
        self._now = int(start_ms)
        self._wait_target: int | None = None
        self._wait_calls = 0
        self._release_pending = False
        self._closed = False

    # --- org.apache.spark.util.Clock (called from the JVM stream thread) ------------------
    def getTimeMillis(self) -> int:  # noqa: N802 (Java interface name)
        self._on_call()
        with self._cv:
            return self._now

    def nanoTime(self) -> int:  # noqa: N802
        with self._cv:
            return self._now * 1_000_000

    def waitTillTime(self, targetTime: int) -> int:  # noqa: N802, N803
        self._on_call()
        with self._cv:
            self._wait_calls += 1
            self._wait_target = int(targetTime)
            self._cv.notify_all()
            while self._now < targetTime and not self._release_pending and not self._closed:
                self._cv.wait()
            self._release_pending = False
            self._wait_target = None
            self._cv.notify_all()
            return self._now

    class Java:
        implements = ["org.apache.spark.util.Clock"]

    # --- driver side ----------------------------------------------------------------------
    @property
    def now_ms(self) -> int:
        with self._cv:
            return self._now

    @property
    def wait_calls(self) -> int:
        with self._cv:
            return self._wait_calls

    @property
    def next_trigger_ms(self) -> int | None:
        """The time the idle stream thread waits for, or None while it is running."""
        with self._cv:
            return self._wait_target

    def set_time(self, now_ms: int) -> bool:
        """Move time; True if this wakes the stream thread (a trigger will run)."""
        with self._cv:
            self._now = int(now_ms)
            wakes = self._wait_target is not None and self._wait_target <= self._now
            self._cv.notify_all()
            return wakes

    def release_once(self) -> None:
        """Let the idle stream thread run one trigger at the current time."""
        with self._cv:
            self._release_pending = True
            self._cv.notify_all()

    def close(self) -> None:
        """Release every wait, now and later (used when the query stops)."""
        with self._cv:
            self._closed = True
            self._cv.notify_all()

    def await_idle(
        self, min_wait_calls: int, is_active: Callable[[], bool], timeout_s: float
    ) -> None:
        """Block until the stream thread has entered ``waitTillTime`` at least
        ``min_wait_calls`` times in all and is waiting now, i.e. the trigger(s) we let
        run have finished (batch, sink and progress included)."""
        deadline = time.monotonic() + timeout_s
        with self._cv:
            while not (self._wait_calls >= min_wait_calls and self._wait_target is not None):
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise ClockWaitTimeoutError(f"no idle stream thread after {timeout_s:.0f} s")
                if not self._cv.wait(min(self._LIVENESS_CHECK_S, remaining)):
                    self._cv.release()
                    try:
                        with _interrupts_deferred():
                            active = is_active()
                    finally:
                        self._cv.acquire()
                    if not active and not (
                        self._wait_calls >= min_wait_calls and self._wait_target is not None
                    ):
                        raise QueryInactiveError()
