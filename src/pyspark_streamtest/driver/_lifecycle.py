"""The driver's lifecycle: stop, start, restart, close, and what a failure, an interrupt
or a dead JVM leaves behind. :class:`~pyspark_streamtest.TopologyTestDriver` inherits
it."""

from __future__ import annotations

import atexit
import contextlib
import threading
import time
import weakref
from collections.abc import Callable, Iterator
from datetime import datetime
from typing import Any

from pyspark.sql import SparkSession

from .._spark.connect.session import ConnectLink
from .._spark.query.callbacks import reset_session_thread_connection
from .._spark.runtime.liveness import jvm_is_gone
from ..core import open_drivers as _open_drivers
from ..core.records import BatchRecord
from ..core.time import PythonClockFreeze, require_aware, to_ms
from ..errors import (
    BackfillNeverEndsError,
    BatchFailedError,
    DriverClosedError,
    DriverInterruptedError,
    SparkDiedError,
    StaleTopicError,
    StreamTestError,
    hide_our_frames,
)
from ._state_access import StateAccess
from ._time_control import TimeControl
from .queries import History, Queries
from .topology import BuiltOutput, TopologyFunction

__tracebackhide__ = hide_our_frames

__all__ = ["Lifecycle"]


class Lifecycle:
    """Starting and stopping the queries, and closing the driver for good."""

    _spark: SparkSession
    _link: ConnectLink | None
    _queries: Queries
    _history: History
    _time: TimeControl
    _state: StateAccess
    _closed: bool
    _run: Any
    _generation: int
    _outputs: dict[str, BuiltOutput]
    _begin_run: Callable[[int], None]
    _upgrade: Callable[[TopologyFunction], None]
    _new_version: Callable[[TopologyFunction | None, Callable[..., object] | None],
                           TopologyFunction | None]
    _closed_because: tuple[type[BaseException], str] | None
    """The kind and text of the error that closed the driver (not the error itself: its
    traceback would keep the frames, and the driver, alive)."""

    def _track(self, *, register: bool = True) -> None:
        """Called once a run's queries exist: a driver nobody closes stops its queries
        and deletes its checkpoints when it is garbage-collected, or at the latest when
        the interpreter exits; the pytest plugin sees it as open (from its first run on:
        a reset keeps the registration, so a fixture's driver stays the fixture's)."""
        self._release = weakref.finalize(
            self, _release_collected, self._queries, self._time.freezes
        )
        if register:
            _open_drivers.register(self)

    def close(self) -> None:
        """Stop every query, release their clocks, delete the checkpoints, unfreeze
        Python's clock. Idempotent. The history (:attr:`batches`) stays readable."""
        if self._closed:
            return
        try:
            self._shutdown()
        except Exception as error:
            if not jvm_is_gone(self._spark, error):
                raise
            # Spark is gone: nothing is left to stop, and the checkpoints are deleted.

    @property
    def closed(self) -> bool:
        """True once :meth:`close` ran (or a failure closed the driver)."""
        return self._closed

    @property
    def is_running(self) -> bool:
        """True while the queries run: from creation until :meth:`stop`, and again after
        :meth:`start`; False once every query has ended by itself (see
        :attr:`ended_outputs`)."""
        return not self._closed and self._queries.running

    @property
    def ended_outputs(self) -> tuple[str, ...]:
        """The outputs whose query ended by itself, as in production: a job's query with
        ``trigger(availableNow=True)`` or ``trigger(once=True)`` reads the backlog it
        finds when it starts and ends. Its batches, outputs and state stay readable;
        :meth:`restart` runs it again on its checkpoint (the job's next scheduled run),
        reading what was piped since."""
        return self._queries.ended

    def stop(self) -> None:
        """Stop every query, as Spark's ``StopStream``: checkpoints, state, the watermark
        and the history stay. While stopped, records piped are queued, processing time
        may move (:meth:`advance_wall_clock` and :meth:`jump_wall_clock` run nothing and
        return ``[]``), state stores and outputs can be read, and
        :meth:`process_all_available` and :meth:`advance_watermark_to` raise
        :class:`~pyspark_streamtest.errors.DriverStoppedError`. Stopping stopped queries
        does nothing."""
        self._check_open()
        try:
            self._queries.stop()
        except BaseException as error:
            raise self._close_after_failure(error) from None

    def start(self) -> list[BatchRecord]:
        """Start every query again from its checkpoint at the current processing time, as
        Spark's ``StartStream``, and return the batches Spark runs on start. The records
        piped while stopped reach the sources first, so the first trigger (which Spark
        runs at once) is a data batch with them if there are any; otherwise it runs
        nothing (see :meth:`restart` for the no-data batch a restart does not run).
        Batch ids continue, state and outputs carry on. Starting running queries does
        nothing and returns ``[]``.

        After :class:`~pyspark_streamtest.errors.StreamingQueryFailedError` the queries
        are stopped with their checkpoints, and starting them retries the failed batch
        (same batch id, same records), as Spark's recovery does: it fails again with the
        same error while the cause remains, and runs once the cause is gone."""
        self._check_open()
        if self._queries.running:
            return []
        self._queries.check_checkpoints()
        self._state.restarted()
        ran: list[BatchRecord] = []

        def record(batches: list[BatchRecord]) -> None:
            self._history.absorb(batches)
            ran.extend(batches)

        try:
            self._queries.start(self._time.now_ms, record)
        except (BatchFailedError, BackfillNeverEndsError):
            self._stop_after_failure()
            raise
        except BaseException as error:
            raise self._close_after_failure(error) from None
        return ran

    def restart(
        self, *, topology: TopologyFunction | None = None, app: Callable[..., object] | None = None
    ) -> list[BatchRecord]:
        """:meth:`stop` then :meth:`start`: every query starts again from its checkpoint,
        as after a crash or a deploy. State and the watermark are recovered by Spark;
        batch ids continue. Records piped but not yet processed reach the sources before
        the start, and Spark runs a first trigger at once: a data batch if records wait,
        else nothing. A no-data batch that
        Spark owed before the restart (to emit windows or evict state after the
        watermark moved) is *not* run: a restarted query has no last execution to ask,
        so what was due is done by the next data batch (checked by property tests
        against Spark on every supported line). Returns the batches that ran.

        ``topology`` upgrades in place, as a deploy of a new version of the job does:
        the new version's topology function runs (the old one's DataFrames are dropped)
        and each of its outputs goes on from the checkpoint of the old output of the
        same name; an output it adds starts on a fresh checkpoint and reads what is
        piped from then on (Kafka's ``startingOffsets=latest``), and an output it drops
        stops for good. Records piped but not yet processed, and a failed batch
        awaiting its retry, go on into the new version: restarting with a fixed version
        is how a test "fixes and resumes". Spark decides which changes a checkpoint
        allows; a change it refuses raises
        :class:`~pyspark_streamtest.errors.IncompatibleCheckpointError` from the first
        batch that runs after the upgrade (the queries stop; ``restart(topology=...)``
        with the old version rolls back). Topic handles made before an upgrade raise
        :class:`~pyspark_streamtest.errors.StaleTopicError`: create them again. ``app``
        does the same for a driver made by :meth:`from_app`: the job's next version
        (its ``main``), run with the same ``from_app`` settings.

        Raises :class:`~pyspark_streamtest.errors.CheckpointMissingError`, with nothing
        stopped, when a query's checkpoint was deleted (Spark would silently start
        over); :meth:`start` checks the same."""
        self._check_open()
        new_version = self._new_version(topology, app)  # checked before stopping anything
        self._queries.check_checkpoints()
        self.stop()
        if new_version is not None:
            self._upgrade(new_version)
        return self.start()

    def reset(self, *, start_time: datetime | None = None) -> None:
        """Return the driver to what it was just after it was created, keeping what costs
        time to make: the session and the topology's DataFrames (the topology function
        does not run again).

        Every query stops and its checkpoint is deleted; every input's source is
        emptied; new queries start on fresh checkpoints at ``start_time`` (default: the
        driver's own), as at creation. Batch ids start at 0 again; the history,
        outputs, state, watermarks, Kafka partitions and offsets are new; a frozen
        Python clock is frozen again at the new time. A run after ``reset()`` gives
        the same batches as a new driver would (property tests that make a driver per
        example can reset one instead). Topic handles made before are of the old run:
        using one raises :class:`~pyspark_streamtest.errors.StaleTopicError`; create
        them again."""
        self._check_open()
        now_ms = (self._run.start_ms if start_time is None
                  else to_ms(require_aware(start_time, "start_time")))
        try:
            self._release_run()
            for built in self._outputs.values():
                for _, stream in built.streams:
                    stream.reset()
            self._generation += 1
            self._begin_run(now_ms)
        except BaseException as error:
            if self._closed:  # _begin_run closed the driver on its way out
                raise
            raise self._close_after_failure(error) from None

    def _check_current(self, generation: int) -> None:
        """A topic handle's check: the driver is open and the handle is of this run."""
        self._check_open()
        if generation != self._generation:
            raise StaleTopicError(
                "this topic handle was made before driver.reset() or an upgrade "
                "(restart(topology=...)); its records, offsets and record time belong to the "
                "old run: call create_input_topic / create_output_topic again"
            )

    @contextlib.contextmanager
    def _spark_calls(self) -> Iterator[None]:
        """Around calls into Spark that do not change the queries (reads): a dead JVM
        closes the driver with :class:`SparkDiedError`; other errors pass unchanged."""
        try:
            yield
        except StreamTestError:
            raise
        except Exception as error:
            if not jvm_is_gone(self._spark, error):
                raise
            raise self._close_after_failure(error) from None

    # --- internals ------------------------------------------------------------------------
    def _check_open(self) -> None:
        if not self._closed:
            return
        why = self._closed_because
        if why is None:
            raise DriverClosedError(
                "this TopologyTestDriver is closed; create a new driver (queries, clocks and "
                "checkpoints of a closed driver are gone)"
            )
        kind, text = why
        if issubclass(kind, SparkDiedError):
            raise SparkDiedError(f"this TopologyTestDriver closed itself: {text}")
        if not issubclass(kind, Exception):  # KeyboardInterrupt, SystemExit
            raise DriverInterruptedError(
                f"this TopologyTestDriver was interrupted ({kind.__name__}) in the middle "
                "of a step and closed itself (a half-run batch cannot be trusted); create a "
                "new driver"
            )
        first = text.splitlines()[0] if text else "(no message)"
        raise DriverClosedError(
            f"this TopologyTestDriver closed itself after {kind.__name__}: {first}; create "
            "a new driver"
        )

    def _close_after_failure(self, error: BaseException) -> BaseException:
        """Close while ``error`` is on its way to the caller. Returns the error to raise:
        :class:`SparkDiedError` when the JVM is gone, else ``error`` itself. Later calls
        say why the driver closed."""
        if not isinstance(error, StreamTestError) and jvm_is_gone(self._spark, error):
            error = SparkDiedError(
                f"the Spark JVM is gone ({type(error).__name__}: {str(error)[:200]}); the "
                "driver closed itself. Nothing that needs Spark can run in this process "
                "any more: under pytest, the tests that use Spark after this one fail "
                "saying so"
            )
        self._closed_because = (type(error), str(error))
        if not isinstance(error, Exception):  # an interrupt, perhaps mid-call into Py4J
            reset_session_thread_connection(self._spark)
        with contextlib.suppress(BaseException):
            self._shutdown()
        return error

    def _stop_after_failure(self) -> None:
        """Stop the queries after one failed (their checkpoints stay: a start retries the
        failed batch); close the driver if even that fails."""
        try:
            self._queries.stop()
        except BaseException as error:
            self._close_after_failure(error)

    def _shutdown(self) -> None:
        self._closed = True
        _open_drivers.unregister(self)
        try:
            self._release_run()
        finally:
            if self._link is not None:  # the Connect relations it handed out
                self._link.close()

    def _release_run(self) -> None:
        """Release the current run now (queries, checkpoints, Python clock), instead of
        when the driver is collected."""
        if self._release.detach() is not None:
            _release(self._queries, self._time.freezes)


_RELEASING: list[threading.Thread] = []
_RELEASE_TIMEOUT_S = 120.0


def _release_collected(queries: Queries, freezes: list[PythonClockFreeze]) -> None:
    """What the garbage collector runs for a driver nobody closed. The collector may run
    it in the middle of a Py4J call of this very thread, so calling Spark from here
    could garble that call: the release runs on a thread of its own (with its own
    connection). :func:`await_released` waits for it; the pytest plugin does after
    every test, and so does the interpreter's exit. At exit (finalizers run from
    ``atexit``, outside any call) it runs at once."""
    if getattr(weakref.finalize, "_shutdown", False):  # the interpreter is exiting
        _release(queries, freezes)
        return
    thread = threading.Thread(
        target=_release, args=(queries, freezes), name="pyspark-streamtest-release",
        daemon=True,
    )
    with _RELEASING_LOCK:
        _RELEASING.append(thread)
    thread.start()


def await_released(timeout_s: float = _RELEASE_TIMEOUT_S) -> None:
    """Wait (bounded) until the releases of collected drivers have finished."""
    deadline = time.monotonic() + timeout_s
    while True:
        with _RELEASING_LOCK:
            if not _RELEASING:
                return
            thread = _RELEASING.pop()
        thread.join(max(0.0, deadline - time.monotonic()))


_RELEASING_LOCK = threading.Lock()
atexit.register(await_released)


def _release(queries: Queries, freezes: list[PythonClockFreeze]) -> None:
    """Stop the queries, delete the checkpoints and give Python's clock back; what
    ``close()`` and the garbage collector do (it holds no reference to the driver)."""
    try:
        queries.close()
    finally:
        while freezes:
            freezes.pop().stop()
