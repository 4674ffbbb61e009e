"""The differential oracle: every query the driver runs, run again by Spark alone.

With ``STREAMTEST_ORACLE=1`` (the plugin's ``--streamtest-oracle``) each
:class:`~pyspark_streamtest.driver.queries.QueryRunner` gets an :class:`OracleQuery`: the same
output built again by the topology function, over memory streams of its own that get
the same offsets as the driver's (the same JSON lines, blocks and empty offsets, in the
same calls), started through the same ``startQuery`` with the same settings, but with
Spark's JVM ``ManualClock`` and ``MemorySink`` (``_spark/alone.py``): no driver code in
its triggers. Whenever a trigger of the driver's query runs a batch, the oracle's clock
moves to that trigger's time and Spark runs its batch; the two batches are compared
field by field (:func:`differences`), and the first difference raises
:class:`~pyspark_streamtest.errors.OracleMismatchError`. When the query stops, the
state stores of both checkpoints are compared (PySpark 4.0+). A file input that lands
files needs no tee: Spark alone's query reads the same landing directory, through
Spark's file source, from its own checkpoint.

Where the driver differs from Spark alone on purpose, :data:`DELIBERATE` says how and
why; the guarantees page shows that table. What the oracle cannot follow (a batch that
failed, a crash the test injects, a query resumed from a copied checkpoint) ends the
comparison of that query, counted in :data:`STATS` with its reason.
"""

from __future__ import annotations

import math
import os
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from pyspark.sql import Row

from .._spark.alone import (
    AloneQuery,
    AloneQueryError,
    is_deterministic,
    reads_processing_time,
    state_rows,
)
from .._spark.jvm import Jvm
from .._spark.query.memory_stream import JsonMemoryStream
from .._spark.query.watermark import progress_watermark
from .._spark.versions import capabilities
from ..core.query_names import ORACLE_PREFIX
from ..core.records import BatchRecord
from ..core.time import from_ms, to_ms
from ..errors import OracleMismatchError, hide_our_frames
from .topology import LandingSource

__tracebackhide__ = hide_our_frames

__all__ = ["DELIBERATE", "ORACLE_ENV", "STATS", "Deliberate", "OracleQuery", "deliberate_table",
           "differences", "oracle_enabled"]

ORACLE_ENV = "STREAMTEST_ORACLE"
"""Set to ``1`` to run every driver query again by Spark alone and compare."""

def oracle_enabled() -> bool:
    return os.environ.get(ORACLE_ENV, "").strip().lower() not in ("", "0", "false", "no")


@dataclass(frozen=True)
class Deliberate:
    """A way the driver differs from Spark alone on purpose."""

    name: str
    what: str
    why: str


DELIBERATE: tuple[Deliberate, ...] = (
    Deliberate(
        "same-time trigger",
        "A trigger the driver runs at the processing time of the batch before it (the "
        "no-data batch after a moved watermark, `process_all_available()`) runs at that "
        "time; Spark alone runs it at its next trigger time (here 1 ms later, the oracle's "
        "trigger interval). Its `batchTimestampMs`, and what `current_timestamp()` and "
        "processing-time timeouts and timers see in that batch, differ by that much: "
        "for a plan that reads the processing time (`current_timestamp()`, "
        "`flatMapGroupsWithState`, `applyInPandasWithState`, `transformWithState`) the "
        "oracle then compares what that batch and the later ones of the query read (id, "
        "input rows, watermark), not their rows out or state, nor the state stores after "
        "them (a timer set in such a batch is 1 ms later in Spark alone). The first trigger on "
        "start, which runs no batch in either, runs in Spark alone 1 ms before the "
        "start time, so that the first batch runs at the start time in both.",
        "A test says when processing time moves; the batches Spark owes at one time run "
        "at that time, as they do under Spark's default trigger, which runs them at once."),
    Deliberate(
        "triggers that run nothing",
        "The driver skips the later triggers of a query whose trigger ran nothing while "
        "`advance_wall_clock` walks through several intervals; the oracle compares the "
        "triggers that ran a batch.",
        "Nothing was piped in between and no timeout or watermark is pending, so Spark's "
        "triggers there run no batch either (a query with timers or timeouts runs a batch "
        "at every trigger and is never skipped)."),
    Deliberate(
        "non-deterministic expressions",
        "Rows of a query whose plan has a non-deterministic expression (`uuid()`, `rand()` "
        "without a seed, a UDF marked non-deterministic) are compared by number, not by "
        "value.",
        "Two runs of such a plan differ by design, Spark alone against itself too. Within "
        "the driver, a `foreachBatch` function and the output see the same values (the "
        "batch runs once)."),
    Deliberate(
        "progress timings",
        "`durationMs`, rates and memory figures of the progress are not compared.",
        "They are wall-clock measurements of the machine, different on every run."),
    Deliberate(
        "injected crashes",
        "After `crash_before_commit` / `crash_before_sink` the oracle stops comparing that "
        "query: the rows an at-least-once sink wrote in the crashed attempt stay in the "
        "output, as in production.",
        "Spark alone has no way to fail a batch on demand; the crash is the test's."),
    Deliberate(
        "failed batches",
        "After a batch fails, the oracle stops comparing that query (a restart retries "
        "the batch in the driver only). Restarts, upgrades (`restart(topology=...)`) and "
        "drivers made from a checkpoint saved with the oracle on are compared: Spark "
        "alone goes on from its own checkpoint, saved and copied beside the driver's.",
        "Spark alone would fail the same batch with the same error; what the driver "
        "reports of a failure is checked by the reliability tests."),
)


def deliberate_table() -> str:
    """:data:`DELIBERATE` as the Markdown table the guarantees page shows."""
    rows = ["| difference | the driver, and Spark alone | why |", "|---|---|---|"]
    rows.extend(f"| {d.name} | {d.what} | {d.why} |" for d in DELIBERATE)
    return "\n".join(rows) + "\n"


@dataclass
class OracleStats:
    """What the oracle compared in this process."""

    queries: int = 0
    batches: int = 0
    state_stores: int = 0
    same_time_triggers: int = 0
    input_only_batches: int = 0
    """Batches of which only what they read was compared (see "same-time trigger")."""
    not_followed: Counter[str] = field(default_factory=Counter)

    def as_dict(self) -> dict[str, Any]:
        return {"queries": self.queries, "batches": self.batches,
                "state_stores": self.state_stores,
                "same_time_triggers": self.same_time_triggers,
                "input_only_batches": self.input_only_batches,
                "not_followed": dict(self.not_followed)}


STATS = OracleStats()


class TeeStream:
    """A driver memory stream whose offsets also go to the oracle's stream."""

    def __init__(self, primary: JsonMemoryStream, alone: JsonMemoryStream,
                 following: Callable[[], bool]) -> None:
        self._primary = primary
        self._alone = alone
        self._following = following

    def __getattr__(self, name: str) -> Any:
        return getattr(self._primary, name)

    def add_json_lines(self, lines: list[str]) -> None:
        self._primary.add_json_lines(lines)
        if self._following():
            self._alone.add_json_lines(lines)

    def add_json_blocks(self, blocks: list[list[str]]) -> None:
        self._primary.add_json_blocks(blocks)
        if self._following():
            self._alone.add_json_blocks(blocks)

    def add_empty_batch(self) -> None:
        self._primary.add_empty_batch()
        if self._following():
            self._alone.add_empty_batch()

    def pad_to(self, offset: int | None) -> None:
        self._primary.pad_to(offset)
        if self._following():
            self._alone.pad_to(offset)


class OracleQuery:
    """One output's query run by Spark alone beside the driver's: it owns the Spark-alone
    query, the streams the driver's offsets are teed to, and the comparison of each batch
    and, at the stop, of the state stores."""

    def __init__(self, jvm: Jvm, rebuild: Callable[[], Any], *, output: str, alone_of: str,
                 checkpoint: str, output_mode: str, timeout_s: float) -> None:
        built = rebuild()
        self._jvm = jvm
        self._streams: dict[str, Any] = dict(built.streams)
        self._dataframe = built.dataframe
        self._has_watermark = bool(built.has_watermark)
        self._deterministic = is_deterministic(built.dataframe)
        self._reads_clock = reads_processing_time(built.dataframe)
        self._clock_apart = False  # a batch of a clock-reading plan ran at another time
        self._output = output
        self._name = ORACLE_PREFIX + alone_of  # after the driver's query's name
        self.checkpoint = checkpoint
        self._output_mode = output_mode
        self._timeout_s = timeout_s
        self._query: AloneQuery | None = None
        self.following = True
        STATS.queries += 1

    def tee(self, streams: Iterable[tuple[str, Any]]) -> tuple[tuple[str, Any], ...]:
        """The driver's memory streams, each also feeding the oracle's stream of the same
        input. A file input's source stays as it is: Spark alone's query reads the same
        landing directory (from its own checkpoint), so there is nothing to hand over."""
        return tuple(
            (name, stream if isinstance(stream, LandingSource)
             else TeeStream(stream, self._streams[name], lambda: self.following))
            for name, stream in streams)

    def drop(self, reason: str) -> None:
        """Stop comparing this query from now on."""
        if self.following:
            self.following = False
            STATS.not_followed[reason] += 1
        self._stop_query()

    # --- the driver's events ----------------------------------------------------------------
    def start(self, now_ms: int, batches: Sequence[tuple[BatchRecord, list[Row]]]) -> None:
        """The driver's query started at ``now_ms`` and its first trigger ran ``batches``."""
        if not self.following:
            return
        # Spark runs a trigger at once on start. Where the driver's ran no batch, Spark
        # alone's runs at the millisecond before, so that its next trigger can be at the
        # start time itself, when the driver's first batch often runs.
        self._query = AloneQuery(
            self._jvm, self._dataframe, name=self._name, checkpoint=self.checkpoint,
            output_mode=self._output_mode, start_ms=now_ms - (0 if batches else 1),
            timeout_s=self._timeout_s)
        try:
            progress = self._query.await_first_trigger()
        except AloneQueryError as error:
            raise self._mismatch(batches[0][0] if batches else None, "the start",
                                 "ran", f"failed: {error}") from None
        if not batches:
            if progress is not None:
                raise self._mismatch(None, "batches run on start", "none",
                                     f"batch {progress.get('batchId')}")
            return
        if len(batches) > 1:
            self.drop("the driver ran several batches in one trigger")
            return
        record, rows = batches[0]
        if progress is None:
            raise self._mismatch(record, "batches run on start", f"batch {record.batch_id}",
                                 "none")
        self._compare(record, rows, progress, now_ms)

    def after_trigger(self, batches: Sequence[tuple[BatchRecord, list[Row]]]) -> None:
        """A trigger of the driver's query ran ``batches`` (nothing to do for none)."""
        if not self.following or not batches:
            return
        if len(batches) > 1:
            self.drop("the driver ran several batches in one trigger")
            return
        record, rows = batches[0]
        assert self._query is not None
        driver_ms = to_ms(record.processing_time)
        try:
            progress = self._query.run_trigger_at(driver_ms, record.batch_id)
        except (AloneQueryError, TimeoutError) as error:
            raise self._mismatch(record, "the batch", "ran", f"did not: {error}") from None
        self._compare(record, rows, progress, driver_ms)

    def resume(self) -> None:
        """The driver's query goes on from a copied checkpoint (an upgrade, a saved
        checkpoint): Spark alone goes on from the copy of its own checkpoint beside it
        (the query set copies it), if the checkpoint was made with the oracle on. The
        streams' padding and carried records reach both through :class:`TeeStream`."""
        if not os.path.isdir(self.checkpoint):
            self.drop("resumed from a checkpoint saved without the oracle")

    def force_watermark(self, ms: int, next_batch_id: int) -> None:
        if self.following and self._query is not None:
            self._query.force_watermark(ms, next_batch_id)

    def stop(self, driver_checkpoint: str, last: BatchRecord | None) -> None:
        """The driver's query stopped: compare the state stores, then stop."""
        if self._query is None:
            return
        try:
            if self.following and last is not None and last.state_operators and (
                    capabilities(self._jvm).state_data_source):
                if self._clock_apart:
                    STATS.not_followed["state read at another processing time"] += 1
                else:
                    self._compare_state(driver_checkpoint, last)
        finally:
            self._stop_query()

    def _stop_query(self) -> None:
        query, self._query = self._query, None
        if query is not None:
            query.stop()

    # --- comparing ----------------------------------------------------------------------------
    def _compare(self, record: BatchRecord, rows: list[Row], progress: Mapping[str, Any],
                 driver_ms: int) -> None:
        assert self._query is not None
        if self._query.now_ms != driver_ms:
            STATS.same_time_triggers += 1
            # A plan that reads the clock may answer differently from now on (a timer set
            # in this batch is 1 ms later in Spark alone): compare what batches read only.
            self._clock_apart = self._clock_apart or self._reads_clock
        if self._clock_apart:
            STATS.input_only_batches += 1
        after = self._query.watermark_ms() if self._has_watermark else None
        found = differences(record, rows, progress, self._query.batch_rows(), after,
                            compare_values=self._deterministic,
                            compare_outcome=not self._clock_apart)
        if found:
            name, ours, theirs = found[0]
            raise self._mismatch(record, name, ours, theirs)
        STATS.batches += 1

    def _compare_state(self, driver_checkpoint: str, last: BatchRecord) -> None:
        spark = self._jvm.spark
        for operator_id in range(len(last.state_operators)):
            ours = state_rows(spark, driver_checkpoint, operator_id)
            theirs = state_rows(spark, self.checkpoint, operator_id)
            if isinstance(ours, str) and isinstance(theirs, str):
                continue  # not readable (a join side, a transformWithState variable)
            if isinstance(ours, str) or isinstance(theirs, str) or (
                    sorted_rows(ours) != sorted_rows(theirs)):
                raise self._mismatch(
                    last, f"state of operator {operator_id} after the batch",
                    _rows_text(ours), _rows_text(theirs))
            STATS.state_stores += 1

    def _mismatch(self, record: BatchRecord | None, name: str, ours: object,
                  theirs: object) -> OracleMismatchError:
        batch = "on start" if record is None else f"batch {record.batch_id}"
        self.following = False
        return OracleMismatchError(
            f"output {self._output!r}, {batch}: {name} differs from Spark alone (the same "
            f"micro-batches with Spark's own clock and memory sink)\n"
            f"  driver:      {ours}\n  Spark alone: {theirs}")


_OPERATOR_FIELDS = ("operatorName", "numRowsTotal", "numRowsUpdated", "numRowsRemoved",
                    "numRowsDroppedByWatermark")


def differences(record: BatchRecord, rows: list[Row], progress: Mapping[str, Any],
                alone_rows: list[Row], alone_watermark_after_ms: int | None, *,
                compare_values: bool = True, compare_outcome: bool = True,
                ) -> list[tuple[str, object, object]]:
    """Every field in which the driver's batch differs from Spark alone's, in the order
    a user reads them: (field, driver's value, Spark alone's value). Without
    ``compare_values`` (a plan with non-deterministic expressions) rows are compared
    by number only; without ``compare_outcome`` (a plan that reads the processing time,
    run by Spark alone at another time) only what the batch read is compared: its id,
    input rows and watermark."""
    found: list[tuple[str, object, object]] = []

    def check(name: str, ours: object, theirs: object) -> None:
        if ours != theirs:
            found.append((name, ours, theirs))

    check("batch id", record.batch_id, progress.get("batchId"))
    check("numInputRows", record.num_input_rows, int(progress.get("numInputRows", 0)))
    if record.watermark is not None or (progress.get("eventTime") or {}).get("watermark"):
        check("watermark", record.watermark, progress_watermark(progress))
    if alone_watermark_after_ms is not None:
        check("watermark after the batch", record.watermark_after,
              from_ms(alone_watermark_after_ms))
    if not compare_outcome:
        return found
    ours_ops = [{k: op.get(k) for k in _OPERATOR_FIELDS} for op in record.state_operators]
    theirs_ops = [{k: op.get(k) for k in _OPERATOR_FIELDS}
                  for op in progress.get("stateOperators") or ()]
    check("state operators (rows total/updated/removed/dropped by watermark)",
          ours_ops, theirs_ops)
    if (sorted_rows(rows) != sorted_rows(alone_rows) if compare_values
            else len(rows) != len(alone_rows)):
        found.append(("rows out", _rows_text(rows), _rows_text(alone_rows)))
    return found


def _canonical(value: Any) -> Any:
    """A value as a sortable, comparable key (maps by sorted items, NaN as a string)."""
    if isinstance(value, Row):
        return ("row", tuple(_canonical(v) for v in value))
    if isinstance(value, dict):
        return ("map", tuple(sorted((repr(_canonical(k)), _canonical(v))
                                    for k, v in value.items())))
    if isinstance(value, (list, tuple)):
        return ("seq", tuple(_canonical(v) for v in value))
    if isinstance(value, float) and math.isnan(value):
        return ("nan",)
    return ("v", repr(value))


def sorted_rows(rows: Iterable[Row]) -> list[Any]:
    """Rows as a multiset: Spark promises no order within a batch."""
    return sorted((_canonical(row) for row in rows), key=repr)


def _rows_text(rows: list[Row] | str, limit: int = 5) -> str:
    if isinstance(rows, str):
        return f"not readable: {rows}"
    shown = ", ".join(repr(tuple(r)) for r in rows[:limit])
    more = f" ... {len(rows) - limit} more" if len(rows) > limit else ""
    return f"{len(rows)} rows [{shown}{more}]"
