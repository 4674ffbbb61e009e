"""The model's machinery shared by every operator: what an operator is, the
multiple-watermark policy, and the run of a schedule batch by batch (the face is
:mod:`pyspark_streamtest.testing.model`, whose module doc states the rules).

An operator of one input (a windowed count, a deduplication) and one of two (a
stream-stream join) run the same loop: records wait for a trigger, a batch runs with
the watermark fixed when it was planned and drops late rows by the one before, a
no-data batch is owed when the watermark moved, a restart forgets that debt. What
differs is what one batch does (:meth:`Operator.process_piped`) and which inputs have
a watermark of their own (:meth:`Operator.watermark_delays`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any, Literal

from ..core.time import from_ms, to_ms
from ..errors import hide_our_frames
from .schedule import AdvanceWatermark, Drain, Event, ModelBatch, Pipe, Restart, Schedule, Tick

__tracebackhide__ = hide_our_frames

__all__ = ["EPOCH_MS", "Operator", "events_input", "global_watermark", "interval_text",
           "simulate", "to_ms_delta"]

EPOCH_MS = 0

Piped = Sequence[tuple[str | None, Event]]
"""A batch's events, each with the input it was piped into (None: the runner's input)."""


class Operator:
    """A stateful operator of the model. ``delay`` is the watermark delay (None: no
    ``withWatermark``); ``process`` handles one batch and returns (rows, late events)."""

    delay: timedelta | None = None
    #: Rule 3: append/update-mode operators with a watermark run no-data batches.
    runs_no_data_batches: bool = False

    def process(self, state: dict[Any, Any], events: Sequence[Event], watermark: int,
                late_watermark: int) -> tuple[list[dict[str, Any]], list[Event]]:
        raise NotImplementedError

    def process_piped(self, state: dict[Any, Any], piped: Piped, watermark: int,
                      late_watermark: int) -> tuple[list[dict[str, Any]], list[Event]]:
        """One batch of events with the inputs they were piped into; an operator of one
        input reads them all as one stream (:meth:`process`)."""
        return self.process(state, [event for _, event in piped], watermark, late_watermark)

    def watermark_delays(self) -> Mapping[str | None, timedelta]:
        """The ``withWatermark`` delay of each input with one, by input name (``None``:
        every input, as for an operator of one input); empty without a watermark. Spark
        keeps one watermark per such input and combines them (:func:`global_watermark`)."""
        return {} if self.delay is None else {None: self.delay}

    def check(self, schedule: Schedule) -> None:
        """Refuses, with a typed error, a schedule the operator does not model."""

    def topology(self, *, input: str = "events", output: str = "out") -> Callable[..., None]:
        """The Spark pipeline this operator models, reading ``input`` (plain input
        ``key STRING, value STRING, ts TIMESTAMP``, event time ``ts``) and writing
        ``output`` with the model's column names."""
        raise NotImplementedError


def to_ms_delta(delta: timedelta) -> int:
    return delta // timedelta(milliseconds=1)


def interval_text(delta: timedelta) -> str:
    """A ``withWatermark`` or SQL interval of ``delta`` (whole seconds, else ms)."""
    ms = to_ms_delta(delta)
    return f"{ms // 1000} seconds" if ms % 1000 == 0 else f"{ms} milliseconds"


def events_input(t: Any, name: str) -> Any:
    """The model's plain input ``name``: ``key STRING, value STRING, ts TIMESTAMP``."""
    return t.input(name, schema="key STRING, value STRING, ts TIMESTAMP", timestamp_column="ts")


def global_watermark(
    candidates: Sequence[int | None], *, policy: Literal["min", "max"] = "min"
) -> int:
    """Spark's multiple-watermark policy: with several ``withWatermark`` inputs, the
    global watermark is the minimum (default, ``spark.sql.streaming.multipleWatermarkPolicy
    = min``) or maximum of the per-input watermarks (each: max event time seen minus its
    delay, in ms). An input that has seen no event time yet (None) counts as the epoch
    (``WatermarkTracker.updateWatermark``: "Populate 0 if we haven't seen any data yet"),
    so under ``min`` one silent input holds the watermark at the epoch. The caller keeps
    the result from going back (the tracker only moves forward)."""
    values = [0 if c is None else c for c in candidates]
    if not values:
        return EPOCH_MS
    return min(values) if policy == "min" else max(values)


@dataclass
class _Run:
    operator: Operator
    state: dict[Any, Any] = field(default_factory=dict)
    pending: list[tuple[str | None, Event]] = field(default_factory=list)
    batches: list[ModelBatch] = field(default_factory=list)
    next_watermark: int = EPOCH_MS
    last_watermark: int = EPOCH_MS
    #: the newest event time per watermarked input since the query (re)started: Spark's
    #: ``WatermarkTracker`` keeps it in memory only, so a restart forgets it
    newest: dict[str | None, int] = field(default_factory=dict)
    owed: bool = False

    def run_batch(self, piped: list[tuple[str | None, Event]]) -> None:
        op = self.operator
        delays = op.watermark_delays()
        watermark, late_watermark = self.next_watermark, self.last_watermark
        rows, late = op.process_piped(self.state, piped, watermark, late_watermark)
        for into, event in piped:  # rule 1: every row counts toward max event time, late or not
            node = into if into in delays else None
            t = to_ms(event.timestamp)
            self.newest[node] = max(self.newest.get(node, t), t)
        after = watermark
        if delays:
            per_input = [self.newest[node] - to_ms_delta(delay) if node in self.newest else None
                         for node, delay in delays.items()]
            after = max(watermark, global_watermark(per_input))
        self.batches.append(ModelBatch(
            batch_id=len(self.batches),
            watermark=from_ms(watermark) if delays else None,
            watermark_after=from_ms(after) if delays else None,
            events=tuple(e for _, e in piped), rows=tuple(rows), late=tuple(late)))
        self.last_watermark, self.next_watermark = watermark, after
        self.owed = bool(delays) and op.runs_no_data_batches and after > watermark  # rule 3

    def trigger(self, *, restarting: bool = False) -> bool:
        if self.pending:
            piped, self.pending = self.pending, []
            self.run_batch(piped)
            return True
        if self.owed and not restarting:
            self.run_batch([])
            return True
        return False

    def drain(self) -> None:
        for _ in range(1000):
            if not self.trigger():
                return
        raise AssertionError("the model never became idle")  # pragma: no cover


def simulate(schedule: Schedule, operator: Operator) -> list[ModelBatch]:
    """The batches Spark runs for ``schedule`` through ``operator`` (see the module doc),
    as the driver runs it with :func:`pyspark_streamtest.testing.strategies.run_schedule`."""
    operator.check(schedule)
    run = _Run(operator)
    for step in schedule.steps:
        if isinstance(step, Pipe):
            run.pending.extend((step.input, event) for event in step.events)
        elif isinstance(step, Tick):
            run.trigger()
        elif isinstance(step, Drain):
            run.drain()
        elif isinstance(step, Restart):
            run.owed = False  # rule 4
            run.newest.clear()
            run.trigger(restarting=True)
        elif isinstance(step, AdvanceWatermark):
            run.drain()
            target = to_ms(step.to)
            if operator.watermark_delays() and target > run.next_watermark:
                run.next_watermark = target
                run.owed = operator.runs_no_data_batches and target > run.last_watermark
            run.drain()
        else:  # pragma: no cover
            raise TypeError(f"unknown step {step!r}")
    return run.batches
