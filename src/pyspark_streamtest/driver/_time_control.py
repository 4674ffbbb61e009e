"""Moving time: processing time (the trigger clock) and, as a test-only control, the
event-time watermark. Each move runs exactly the triggers Spark runs."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator, Sequence
from datetime import datetime, timedelta

from ..core.records import BatchRecord
from ..core.time import (
    PythonClockFreeze,
    check_in_range,
    duration_ms,
    from_ms,
    require_aware,
    to_ms,
)
from ..errors import (
    BatchFailedError,
    DriverStoppedError,
    InvalidArgumentError,
    StreamTestError,
    TimeWentBackwardsError,
    hide_our_frames,
)
from .queries import History, Queries, QueryRunner, names_text

__tracebackhide__ = hide_our_frames

__all__ = ["TimeControl"]

MAX_ROUNDS = 10_000
"""How many rounds :meth:`TimeControl.process_all_available` runs before giving up."""


class TimeControl:
    """The driver's processing time, in milliseconds, and the verbs that move it.

    ``on_query_failed`` stops the driver's queries (checkpoints stay, so a restart
    retries the failed batch, as Spark's recovery does): it is called, with the error on
    its way to the caller, when a query fails. ``on_failure`` closes the driver: it is
    called when a trigger does not finish in time, the step is interrupted or Spark
    is gone, and returns the error to raise (SparkDiedError for a dead JVM)."""

    def __init__(
        self,
        queries: Queries,
        history: History,
        *,
        now_ms: int,
        on_failure: Callable[[BaseException], BaseException],
        on_query_failed: Callable[[], None],
    ) -> None:
        self._queries = queries
        self._history = history
        self._on_failure = on_failure
        self._on_query_failed = on_query_failed
        self.now_ms = now_ms
        self.freezes: list[PythonClockFreeze] = []
        """The freeze of Python's clock, while there is one (shared with the driver's
        release, which gives the clock back)."""

    def use_queries(self, queries: Queries) -> None:
        """Step ``queries`` from now on (a new version of the topology's)."""
        self._queries = queries

    def freeze_python_clock(self) -> None:
        """Freeze this process's clock at the driver's time; it moves with the driver."""
        self.freezes.append(PythonClockFreeze(self.current_time))

    @property
    def current_time(self) -> datetime:
        return from_ms(self.now_ms)

    # --- the verbs --------------------------------------------------------------------
    def advance_wall_clock(self, delta: timedelta) -> list[BatchRecord]:
        target = check_in_range(self.now_ms + duration_ms(delta, "delta"), "processing time")
        if not self._queries.running:
            self._set_time(target)  # stopped: time moves, nothing runs
            return []
        ran: list[BatchRecord] = []
        # A query whose trigger ran nothing runs nothing at its later triggers on the way
        # (nothing is piped meanwhile): skip them. Queries may have different intervals.
        # A query with a backlog its read limits hold back, or counting time towards
        # maxTriggerDelay, is never quiet: each of its triggers admits what Spark's would.
        quiet: set[str] = set()
        while True:
            due = {r.name: r.next_trigger_ms for r in self._queries.active
                   if r.name not in quiet and r.next_trigger_ms is not None}
            next_trigger = min(due.values(), default=None)
            if next_trigger is None or next_trigger > target:
                break
            batches = self._move_clock(next_trigger)
            ran.extend(batches)
            busy = {b.output for b in batches} | {
                r.name for r in self._queries.active if r.counts_every_trigger}
            quiet |= {name for name, ms in due.items() if ms == next_trigger} - busy
        ran.extend(self._move_clock(target))
        return ran

    def jump_wall_clock(self, delta: timedelta) -> list[BatchRecord]:
        target = check_in_range(self.now_ms + duration_ms(delta, "delta"), "processing time")
        if not self._queries.running:
            self._set_time(target)
            return []
        return self._move_clock(target)

    def process_all_available(self) -> list[BatchRecord]:
        self._require_running("process_all_available()")
        busy = self._queries.active
        ran: list[BatchRecord] = []
        for _ in range(MAX_ROUNDS):
            if not busy:
                return ran
            before = {id(r): r.last_batch for r in busy}
            ran.extend(self._release_triggers(busy))
            still_busy = []
            for runner in busy:
                last = runner.last_batch
                if last is None or last is before[id(runner)]:
                    continue
                if runner.has_backlog:
                    # Read limits left records for the next trigger: Spark runs it.
                    still_busy.append(runner)
                    continue
                if last.is_data_batch and not (
                        runner.built.runs_no_data_batches or runner.built.reads_files):
                    # No watermark, no timeouts: Spark owes nothing without data. (Landed
                    # files may owe more data batches: maxFilesPerTrigger and its kin.)
                    continue
                previous = before[id(runner)]
                timeout_only = (
                    not last.is_data_batch
                    and previous is not None
                    and last.watermark == previous.watermark
                )
                if not timeout_only:
                    still_busy.append(runner)
            busy = still_busy
        raise self._on_failure(StreamTestError(
            f"process_all_available() ran {MAX_ROUNDS} rounds and Spark still had batches to "
            "run; the queries never become idle. The driver is closed."
        ))

    def advance_watermark_to(self, watermark: datetime, output: str | None) -> list[BatchRecord]:
        self._require_running("advance_watermark_to()")
        target = to_ms(require_aware(watermark, "watermark"))
        runners = self._with_watermark(output)
        for runner in runners:
            current = runner.watermark_ms()
            assert current is not None
            if target < current:
                raise TimeWentBackwardsError(
                    f"cannot move the watermark of output {runner.name!r} back from "
                    f"{from_ms(current).isoformat()} to {from_ms(target).isoformat()}; "
                    "watermarks only move forward"
                )
        self.flush_inputs()  # records piped before the call are processed first
        ran = self.process_all_available()
        with self._closing_on_failure():
            for runner in runners:
                if target > (runner.watermark_ms() or 0):
                    runner.force_watermark(target)
        return ran + self.process_all_available()

    def _with_watermark(self, output: str | None) -> list[QueryRunner]:
        if output is not None:
            runner = self._queries.runner(output)
            if runner.watermark_ms() is None:
                raise InvalidArgumentError(
                    f"output {output!r} has no event-time watermark (no withWatermark in its "
                    "query), so there is nothing to advance"
                )
            if not runner.running:
                raise DriverStoppedError(
                    f"the query of output {output!r} has ended (trigger availableNow or "
                    "once); driver.restart() runs it again")
            return [runner]
        runners = [r for r in self._queries.active if r.watermark_ms() is not None]
        if not runners:
            raise InvalidArgumentError(
                "no query of this topology has an event-time watermark (withWatermark); "
                "there is nothing to advance"
            )
        return runners

    def _require_running(self, verb: str) -> None:
        ended = self._queries.ended
        if not self._queries.running and ended:
            raise DriverStoppedError(
                f"{verb} needs running queries, and every query of the driver has ended: "
                f"{names_text(ended)} ran with trigger availableNow or once, which reads "
                "the backlog it finds at its start and ends, as in production. "
                "driver.restart() runs the job again on its checkpoints (the next scheduled "
                "run), reading what was piped since")
        if not self._queries.running:
            raise DriverStoppedError(
                f"{verb} needs running queries, and the driver's queries are stopped "
                "(driver.stop()); call driver.start() to resume them from their checkpoints"
            )

    def _set_time(self, now_ms: int) -> None:
        self.now_ms = now_ms
        for freeze in self.freezes:
            freeze.move_to(self.current_time)

    # --- triggers ---------------------------------------------------------------------
    def _move_clock(self, now_ms: int) -> list[BatchRecord]:
        """Move every query's clock to ``now_ms``; the queries whose next trigger is due
        run it. Returns the batches they ran."""
        self.flush_inputs()
        started = []
        with self._closing_on_failure():  # Spark may run the batch before the call returns
            for runner in self._queries.active:
                calls = runner.clock_set(now_ms)
                if calls is not None:
                    started.append((runner, calls))
        self._set_time(now_ms)
        return self._finish_triggers(started)

    def _release_triggers(self, runners: Sequence[QueryRunner]) -> list[BatchRecord]:
        """Let each of ``runners`` run one trigger at the current time."""
        self.flush_inputs()
        with self._closing_on_failure():  # Spark may run the batch before the call returns
            started = [(runner, runner.clock_release()) for runner in runners]
        return self._finish_triggers(started)

    def flush_inputs(self) -> None:
        with self._closing_on_failure():
            self._queries.flush()

    @contextlib.contextmanager
    def _closing_on_failure(self) -> Iterator[None]:
        """Around calls that move the queries: any error, an interrupt included (a
        Ctrl-C may land while the call that lets a trigger run still waits for its
        answer, and the batch is already running), closes the driver on its way out."""
        try:
            yield
        except BaseException as error:
            failure = self._on_failure(error)
            if failure is error:
                raise
            raise failure from None

    def _finish_triggers(self, started: list[tuple[QueryRunner, int]]) -> list[BatchRecord]:
        """Wait for the triggers let run (in query order) and record their batches.

        Every started trigger is waited for, even after one failed, so no batch another
        query finished (and committed) goes unrecorded. A failed query stops the queries
        (a restart retries its batch); a stuck query, or an interrupt while waiting,
        closes the driver."""
        batches: list[BatchRecord] = []
        failed: BatchFailedError | None = None
        with self._closing_on_failure():
            try:
                for runner, calls in started:
                    try:
                        batches.extend(runner.finish_trigger(calls))
                    except BatchFailedError as error:
                        failed = failed or error
            finally:
                self._history.absorb(batches)
        if failed is not None:
            self._on_query_failed()
            raise failed
        return batches
