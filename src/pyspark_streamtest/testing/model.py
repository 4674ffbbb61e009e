"""A reference model of Spark's event-time semantics, small enough to read.

:func:`simulate` runs a :class:`Schedule` (records piped, triggers, restarts, watermark
advances) through one of the operators below and predicts every micro-batch the driver
runs: its id, the watermark it runs with and the one after it, the rows it emits and the
records it drops as late. Each rule cites the Spark behaviour it encodes. The model is
trusted only where our differential tests (``tests/spark/test_properties.py``) check it
against real Spark on generated schedules: tumbling and sliding windows (append and
update), session windows (append), ``dropDuplicates`` with a watermark, and a
latest-value table with tombstones, each with one input; and (``tests/spark/
test_join_properties.py``, PySpark 4.3) a stream-stream join of two inputs,
:class:`StreamJoin`, inner and outer, on a key and a time range.

Rules shared by every operator (Spark 3.4+; the multiple-watermark policy in
:func:`global_watermark`):

1. The watermark a batch runs with is fixed when the batch is planned: the largest event
   time seen in *earlier* batches minus the delay, never moving back; the epoch before
   any event time is seen. (``EventTimeWatermarkExec`` collects max event time per batch;
   ``WatermarkTracker.updateWatermark`` applies it to the next batch, only if higher.)
2. Late rows are filtered with the watermark of the *previous* batch, state is evicted
   and append-mode results emitted with the current one (SPARK-40925, Spark 3.4:
   ``eventTimeWatermarkForLateEvents`` vs ``eventTimeWatermarkForEviction``). A row is
   late when its event time is at or before that watermark; a window row when the
   window *ends* at or before it (``watermarkPredicateForDataForLateEvents`` on the
   window column: ``end <= watermark``).
3. After a batch, Spark owes a *no-data batch* when an append- or update-mode stateful
   operator with a watermark would see a higher watermark
   (``StateStoreSaveExec.shouldRunAnotherBatch``: ``newInputWatermark >
   eventTimeWatermarkForEviction``); it runs at the next trigger unless data arrives
   first (then the data batch does the work). ``spark.sql.streaming.noDataMicroBatches
   .enabled`` is true by default.
4. A restarted query runs a batch at once only for unprocessed data: the no-data batch
   owed before the restart is not run (``lastExecutionRequiresAnotherBatch`` needs the
   last execution, which a new run does not have); data arriving later catches up.
5. With several ``withWatermark`` inputs (a join), each input's watermark is its own
   newest event time minus its delay and the query's is their minimum
   (:func:`global_watermark`). A restart forgets the inputs' newest event times (the
   tracker keeps them in memory; the checkpoint keeps only the query's watermark), so
   after a restart the watermark moves again only once every input has had data.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from datetime import timedelta
from typing import Any, Literal

from ..core.time import from_ms, to_ms
from ..errors import hide_our_frames
from ._join_model import JoinDedup, JoinKind, StreamJoin
from ._simulation import (
    Operator,
    events_input,
    global_watermark,
    interval_text,
    simulate,
    to_ms_delta,
)
from .schedule import (
    AdvanceWatermark,
    Drain,
    Event,
    EventRow,
    ModelBatch,
    Pipe,
    Restart,
    Schedule,
    Tick,
)
from .schedule import Step as Step

__tracebackhide__ = hide_our_frames

__all__ = [
    "AdvanceWatermark",
    "Deduplicate",
    "Drain",
    "Event",
    "EventRow",
    "JoinDedup",
    "JoinKind",
    "LatestValueTable",
    "ModelBatch",
    "Operator",
    "Pipe",
    "Restart",
    "Schedule",
    "SessionCount",
    "StreamJoin",
    "Tick",
    "WindowedCount",
    "global_watermark",
    "last_values",
    "simulate",
    "windows_of",
]


# --- operators of one input ---------------------------------------------------------------------
def windows_of(t_ms: int, size_ms: int, slide_ms: int) -> list[tuple[int, int]]:
    """The windows ``[start, end)`` holding ``t_ms``: starts are multiples of the slide
    (Spark's ``TimeWindowing``: ``start <= t < start + size``, start time 0)."""
    last_start = t_ms - (t_ms % slide_ms)
    found = []
    start = last_start
    while start > t_ms - size_ms:
        found.append((start, start + size_ms))
        start -= slide_ms
    return sorted(found)


@dataclass(frozen=True)
class WindowedCount(Operator):
    """``groupBy(window(ts, size, slide), key).count()`` with ``withWatermark(ts, delay)``.

    Rows: ``{"key", "window": {"start", "end"}, "count"}``. Append mode emits a window
    once, in the batch whose watermark reaches its end (``end <= watermark``), and drops
    it from state; update mode emits every window a batch changed (its new count), then
    evicts windows ending at or before the watermark (``StateStoreSaveExec``: updated
    rows are written out before ``removeKeysOlderThanWatermark``). A row is late per
    window (rule 2), so a sliding-window row can count in some windows and not others.
    Complete mode emits every window in state after each data batch and never evicts
    (the whole result must be kept), so it runs no no-data batches, and it drops *no*
    row as late: rule 2 does not apply (checked against Spark; a pinned example in the
    property tests).
    """

    size: timedelta
    slide: timedelta | None = None
    delay: timedelta | None = timedelta(0)
    mode: Literal["append", "update", "complete"] = "append"
    runs_no_data_batches: bool = True

    def __post_init__(self) -> None:
        if self.mode not in ("append", "update", "complete"):
            raise ValueError(f"mode must be append, update or complete, got {self.mode!r}")
        if self.mode == "complete":  # rule 3 covers append and update only
            object.__setattr__(self, "runs_no_data_batches", False)

    def process(self, state: dict[Any, Any], events: Sequence[Event], watermark: int,
                late_watermark: int) -> tuple[list[dict[str, Any]], list[Event]]:
        size = to_ms_delta(self.size)
        slide = to_ms_delta(self.slide or self.size)
        late: list[Event] = []
        updated: dict[tuple[str, int, int], None] = {}
        for event in events:
            windows = windows_of(to_ms(event.timestamp), size, slide)
            kept = [w for w in windows
                    if self.mode == "complete" or w[1] > late_watermark]
            if len(kept) < len(windows):
                late.append(event)
            for start, end in kept:
                slot = (event.key, start, end)
                state[slot] = state.get(slot, 0) + 1
                updated[slot] = None
        rows = []
        if self.mode == "complete":
            return [self._row(slot, count) for slot, count in sorted(state.items())], late
        if self.mode == "update":
            rows = [self._row(slot, state[slot]) for slot in updated]
        for slot in sorted(state):
            if slot[2] <= watermark:
                if self.mode == "append":
                    rows.append(self._row(slot, state[slot]))
                del state[slot]
        return rows, late

    @staticmethod
    def _row(slot: tuple[str, int, int], count: int) -> dict[str, Any]:
        key, start, end = slot
        return {"key": key, "window": {"start": from_ms(start), "end": from_ms(end)},
                "count": count}

    def topology(self, *, input: str = "events", output: str = "out") -> Callable[..., None]:
        def build(t: Any) -> None:
            from pyspark.sql import functions as F

            events = events_input(t, input)
            if self.delay is not None:
                events = events.withWatermark("ts", interval_text(self.delay))
            window = F.window("ts", interval_text(self.size),
                              interval_text(self.slide or self.size))
            t.output(output, events.groupBy(window.alias("window"), "key").count(),
                     output_mode=self.mode)

        return build


@dataclass(frozen=True)
class SessionCount(Operator):
    """``groupBy(session_window(ts, gap), key).count()`` in append mode.

    Each event opens ``[ts, ts + gap)``; sessions of one key that overlap *or touch*
    merge: two events exactly ``gap`` apart are one session ``[t, t + 2 gap)``, within a
    batch and across batches (checked against Spark: ``tests/spark/test_properties.py``
    pins the case, which random schedules rarely hit). A row is late when its own
    ``[ts, ts + gap)`` ends at or before the previous batch's watermark (rule 2). A
    session is emitted and forgotten once the watermark reaches its end. Rows:
    ``{"key", "session_window": {"start", "end"}, "count"}``. (Spark refuses update
    mode for session windows.)
    """

    gap: timedelta
    delay: timedelta | None = timedelta(0)
    runs_no_data_batches: bool = True

    def process(self, state: dict[Any, Any], events: Sequence[Event], watermark: int,
                late_watermark: int) -> tuple[list[dict[str, Any]], list[Event]]:
        gap = to_ms_delta(self.gap)
        late = []
        fresh: dict[str, list[tuple[int, int, int]]] = {}
        for event in events:
            t = to_ms(event.timestamp)
            if t + gap <= late_watermark:
                late.append(event)
                continue
            fresh.setdefault(event.key, []).append((t, t + gap, 1))
        for key, sessions in fresh.items():
            state[key] = _merge_sessions([*state.get(key, []), *sessions])
        rows = []
        for key in sorted(state):
            keep = []
            for start, end, count in state[key]:
                if end <= watermark:
                    rows.append({"key": key, "session_window": {"start": from_ms(start),
                                                                "end": from_ms(end)},
                                 "count": count})
                else:
                    keep.append((start, end, count))
            if keep:
                state[key] = keep
            else:
                del state[key]
        return rows, late

    def topology(self, *, input: str = "events", output: str = "out") -> Callable[..., None]:
        def build(t: Any) -> None:
            from pyspark.sql import functions as F

            events = events_input(t, input)
            if self.delay is not None:
                events = events.withWatermark("ts", interval_text(self.delay))
            session = F.session_window("ts", interval_text(self.gap)).alias("session_window")
            t.output(output, events.groupBy(session, "key").count(), output_mode="append")

        return build


def _merge_sessions(sessions: Iterable[tuple[int, int, int]]) -> list[tuple[int, int, int]]:
    merged: list[tuple[int, int, int]] = []
    for start, end, count in sorted(sessions):
        if merged and start <= merged[-1][1]:  # touching sessions merge too
            last = merged[-1]
            merged[-1] = (last[0], max(last[1], end), last[2] + count)
        else:
            merged.append((start, end, count))
    return merged


@dataclass(frozen=True)
class Deduplicate(Operator):
    """``withWatermark(ts, delay).dropDuplicates(["key", "value", "ts"])``.

    The first copy of a (key, value, ts) not seen before is emitted at once; state keeps
    it until the watermark reaches ``ts`` (evicted when ``ts <= watermark``), so a copy
    arriving later is dropped as a duplicate while the original is in state. A row is
    late when ``ts`` is at or before the previous batch's watermark (rule 2), whether or
    not it is a duplicate. Rows: ``{"key", "value", "ts"}``.
    """

    delay: timedelta | None = timedelta(0)
    runs_no_data_batches: bool = True

    def process(self, state: dict[Any, Any], events: Sequence[Event], watermark: int,
                late_watermark: int) -> tuple[list[dict[str, Any]], list[Event]]:
        rows, late = [], []
        for event in events:
            t = to_ms(event.timestamp)
            if t <= late_watermark:
                late.append(event)
                continue
            slot = (event.key, event.value, t)
            if slot in state:
                continue
            state[slot] = None
            rows.append({"key": event.key, "value": event.value, "ts": event.timestamp})
        for slot in [s for s in state if s[2] <= watermark]:
            del state[slot]
        return rows, late

    def topology(self, *, input: str = "events", output: str = "out") -> Callable[..., None]:
        def build(t: Any) -> None:
            events = events_input(t, input)
            if self.delay is not None:
                events = events.withWatermark("ts", interval_text(self.delay))
            t.output(output, events.dropDuplicates(["key", "value", "ts"])
                     .select("key", "value", "ts"), output_mode="append")

        return build


@dataclass(frozen=True)
class LatestValueTable(Operator):
    """The latest value per key of a Kafka-shaped changelog (a tombstone, value None,
    makes it None): ``groupBy(key).agg(max_by(value, offset))`` in update mode, written
    to a Kafka topic. Each batch emits, for every key it saw, the value of the key's
    highest offset so far. No watermark, no late rows, no no-data batches. Read as a
    table with tombstones deleting keys, it is :func:`last_values` of the events.
    Rows: ``{"key", "value"}``."""

    delay: timedelta | None = None
    runs_no_data_batches: bool = False

    def process(self, state: dict[Any, Any], events: Sequence[Event], watermark: int,
                late_watermark: int) -> tuple[list[dict[str, Any]], list[Event]]:
        touched: dict[str, None] = {}
        for event in events:  # arrival order is offset order on one partition
            state[event.key] = event.value
            touched[event.key] = None
        return [{"key": key, "value": state[key]} for key in touched], []

    def topology(self, *, input: str = "events", output: str = "out") -> Callable[..., None]:
        def build(t: Any) -> None:
            from pyspark.sql import functions as F

            changes = t.kafka_input(input)
            latest = changes.groupBy("key").agg(F.max_by("value", "offset").alias("value"))
            t.kafka_output(output, latest, topic=output, output_mode="update")

        return build


def last_values(events: Iterable[Event]) -> dict[str, str]:
    """The table a changelog describes: the last value per key, keys whose last record
    is a tombstone removed."""
    table: dict[str, str] = {}
    for event in events:
        if event.value is None:
            table.pop(event.key, None)
        else:
            table[event.key] = event.value
    return table
