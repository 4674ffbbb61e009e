"""The model of a stream-stream join: two inputs joined on a key and a time-range
condition, inner or outer (the face is :mod:`pyspark_streamtest.testing.model`).

What one batch does is Spark's ``StreamingSymmetricHashJoinExec`` (PySpark 3.5.9 to
4.3), reduced to what a test sees: the rows each batch emits and the rows it drops as
late. The watermarks, no-data batches and restarts are the model's shared rules
(:mod:`pyspark_streamtest.testing.model`, rules 1 to 5).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import timedelta
from typing import Any, Literal

from ..core.time import to_ms
from ..errors import InvalidArgumentError, InvalidArgumentTypeError, hide_our_frames
from ._simulation import Operator, Piped, events_input, interval_text, to_ms_delta
from .schedule import AdvanceWatermark, Event, Pipe, Schedule

__tracebackhide__ = hide_our_frames

__all__ = ["JoinDedup", "JoinKind", "StreamJoin"]

JoinKind = Literal["inner", "left_outer", "right_outer", "full_outer"]
_KINDS = ("inner", "left_outer", "right_outer", "full_outer")
JoinDedup = Literal["dropDuplicates", "dropDuplicatesWithinWatermark"]
_DEDUPS = ("dropDuplicates", "dropDuplicatesWithinWatermark")


class _Buffered:
    """A row a side keeps in the join's state, and whether a row of the other side has
    met it (Spark's ``matched`` flag, state format 2)."""

    __slots__ = ("event", "matched", "t")

    def __init__(self, event: Event, matched: bool) -> None:
        self.event, self.matched, self.t = event, matched, to_ms(event.timestamp)


@dataclass(frozen=True)
class StreamJoin(Operator):
    """A stream-stream join of the inputs ``left`` and ``right`` on ``key``, a right row
    meeting a left row when ``right.ts BETWEEN left.ts + lower AND left.ts + upper``;
    each input has its own ``withWatermark(ts, delay)`` (``left_delay``,
    ``right_delay``). ``how`` is ``"inner"``, ``"left_outer"``, ``"right_outer"`` or
    ``"full_outer"``.

    Rows: ``{"key", "left_value", "left_ts", "right_value", "right_ts"}``, the side a
    row lacks as None (``key`` is the key of the side it has). Per batch, with ``W`` the
    watermark it runs with and ``W_late`` the one the batch before ran with:

    * **Late rows.** A row of either input whose own ``ts <= W_late`` is dropped before
      the join (counted in ``numRowsDroppedByWatermark``); it still moves its input's
      watermark (rule 1). An outer join emits nothing for it.
    * **Matches.** Every pair of rows that are not late, of one key and meeting the
      condition, is emitted once, in the batch that brings the second of the two (both
      in one batch: that batch). Each side keeps its rows in state for the rows of the
      other side still to come.
    * **Eviction.** From the condition Spark derives a state watermark per side
      (``StreamingJoinHelper.getStateValueWatermark``, ``<=`` bounds minus one ms):
      left rows with ``ts < W - upper`` and right rows with ``ts < W + lower`` can meet
      no row still to come, and are removed at the end of the batch, after the batch's
      own matches.
    * **Unmatched rows.** An outer join emits an evicted row of its outer side that
      never met a row (``left_outer``: left rows, padded with None for the right;
      ``right_outer``: right rows; ``full_outer``: both), in the batch that evicts it:
      so in the batch after the one that moved the watermark past its bound, or in its
      own batch when it arrives already past it. The watermark is the minimum over both
      inputs, so unmatched rows wait for both inputs' event times (rule 5).

    * **Deduplication first** (``dedup``, None by default): each input deduplicated
      after its ``withWatermark`` and before the join, by
      ``dropDuplicates(["key", "value", "ts"])`` (a copy is dropped while the first is
      in state, until ``ts <= W``) or ``dropDuplicatesWithinWatermark(["key",
      "value"])`` (until ``ts + delay <= W``, so the same key and value at another
      time is a copy too). Late rows are dropped there, by the same rule; the join
      then meets only first copies.

    A no-data batch is owed whenever the watermark moves (rule 3: both sides have a
    state watermark). Not modelled: joins without a watermark on both sides, conditions
    other than this range (windows in the key, other predicates), the ``max``
    watermark policy, left-semi joins and ``AdvanceWatermark`` steps (refused).
    Checked against PySpark 3.5.9, 4.0.5, 4.1.4, 4.2.1 and 4.3; older patch releases
    are not.
    """

    how: JoinKind = "inner"
    lower: timedelta = timedelta(0)
    upper: timedelta = timedelta(seconds=5)
    left: str = "left"
    right: str = "right"
    left_delay: timedelta = timedelta(0)
    right_delay: timedelta = timedelta(0)
    dedup: JoinDedup | None = None
    runs_no_data_batches: bool = True

    def __post_init__(self) -> None:
        if self.how not in _KINDS:
            raise InvalidArgumentError(
                f"how={self.how!r} is not a stream-stream join this model covers; give one "
                f"of {', '.join(map(repr, _KINDS))}")
        if self.dedup is not None and self.dedup not in _DEDUPS:
            raise InvalidArgumentError(
                f"dedup={self.dedup!r} is not a deduplication this model covers; give None "
                f"or one of {', '.join(map(repr, _DEDUPS))}")
        for name in ("lower", "upper", "left_delay", "right_delay"):
            if not isinstance(getattr(self, name), timedelta):
                raise InvalidArgumentTypeError(
                    f"{name}={getattr(self, name)!r} must be a datetime.timedelta")
        for name in ("left_delay", "right_delay"):
            if getattr(self, name) < timedelta(0):
                raise InvalidArgumentError(
                    f"{name}={getattr(self, name)!r} is negative; a watermark delay is "
                    ">= 0 (timedelta(0): no delay)")
        if self.lower > self.upper:
            raise InvalidArgumentError(
                f"lower={self.lower!r} is above upper={self.upper!r}: no right row could "
                "meet a left row; give lower <= upper")
        for name in ("left", "right"):
            if not isinstance(getattr(self, name), str) or not getattr(self, name):
                raise InvalidArgumentTypeError(
                    f"{name}={getattr(self, name)!r} must be an input's name, a non-empty str")
        if self.left == self.right:
            raise InvalidArgumentError(
                f"left and right are both {self.left!r}; name two inputs (a self-join "
                "is not modelled)")

    def watermark_delays(self) -> Mapping[str | None, timedelta]:
        return {self.left: self.left_delay, self.right: self.right_delay}

    def check(self, schedule: Schedule) -> None:
        for index, step in enumerate(schedule.steps):
            if isinstance(step, AdvanceWatermark):
                raise InvalidArgumentError(
                    f"schedule step {index} ({step}): the join model does not model a "
                    "watermark forced on a query of two inputs; leave AdvanceWatermark "
                    "out of join schedules (joined_schedules draws none)")
            if isinstance(step, Pipe) and step.input not in (self.left, self.right):
                raise InvalidArgumentError(
                    f"schedule step {index} ({step}) pipes into {step.input!r}; the join "
                    f"reads {self.left!r} and {self.right!r}: name one of them in each "
                    "Pipe (joined_schedules(left=..., right=...) does)")

    def process_piped(self, state: dict[Any, Any], piped: Piped, watermark: int,
                      late_watermark: int) -> tuple[list[dict[str, Any]], list[Event]]:
        lower, upper = to_ms_delta(self.lower), to_ms_delta(self.upper)
        lefts: list[_Buffered] = state.setdefault("left", [])
        rights: list[_Buffered] = state.setdefault("right", [])
        rows: list[dict[str, Any]] = []
        late: list[Event] = []
        # Spark joins the batch's left rows with the right rows kept from earlier
        # batches, keeps them, then joins the batch's right rows with every kept left row.
        for side, kept, other in ((self.left, lefts, rights), (self.right, rights, lefts)):
            arrived = [e for into, e in piped if into == side]
            for event in self._first_copies(state, side, arrived, watermark,
                                            late_watermark, late):
                row = _Buffered(event, False)
                for met in other:
                    pair = (row, met) if kept is lefts else (met, row)
                    if met.event.key == event.key and (
                            pair[0].t + lower <= pair[1].t <= pair[0].t + upper):
                        rows.append(_joined(pair[0].event, pair[1].event))
                        row.matched = met.matched = True
                kept.append(row)
        # the state watermarks: W - upper - 1 ms for left rows, W + lower - 1 ms for right
        outer = {"left_outer": (True, False), "right_outer": (False, True),
                 "full_outer": (True, True)}.get(self.how, (False, False))
        for kept, gone, emits, is_left in ((lefts, watermark - upper - 1, outer[0], True),
                                           (rights, watermark + lower - 1, outer[1], False)):
            rows.extend(_joined(r.event, None) if is_left else _joined(None, r.event)
                        for r in kept if r.t <= gone and emits and not r.matched)
            kept[:] = [r for r in kept if r.t > gone]
        return rows, late

    def _first_copies(self, state: dict[Any, Any], side: str, events: list[Event],
                      watermark: int, late_watermark: int, late: list[Event]) -> list[Event]:
        """The side's rows that are not late (the late ones added to ``late``) and, with
        ``dedup``, not copies of a row the side's deduplication holds; then its state
        evicted with the batch's watermark."""
        held: dict[tuple[Any, ...], int] = state.setdefault(("dedup", side), {})
        delay = to_ms_delta(self.watermark_delays()[side])
        first = []
        for event in events:
            t = to_ms(event.timestamp)
            if t <= late_watermark:
                late.append(event)
                continue
            if self.dedup is None:
                first.append(event)
                continue
            slot, expires = (((event.key, event.value, t), t) if self.dedup == "dropDuplicates"
                             else ((event.key, event.value), t + delay))
            if slot not in held:
                held[slot] = expires
                first.append(event)
        for slot in [slot for slot, expires in held.items() if expires <= watermark]:
            del held[slot]
        return first

    def topology(self, *, input: str = "events", output: str = "out") -> Callable[..., None]:
        """The join as a topology: the plain inputs ``left`` and ``right`` (``key STRING,
        value STRING, ts TIMESTAMP``, event time ``ts``; ``input`` is not used), each
        with its ``withWatermark`` (and its ``dedup``), joined with the condition as SQL,
        writing ``output`` with the model's columns."""
        def build(t: Any) -> None:
            from pyspark.sql import functions as F

            def side(name: str, prefix: str, delay: timedelta) -> Any:
                rows = (events_input(t, name)
                        .select(F.col("key").alias(f"{prefix}_key"),
                                F.col("value").alias(f"{prefix}_value"),
                                F.col("ts").alias(f"{prefix}_ts"))
                        .withWatermark(f"{prefix}_ts", interval_text(delay)))
                columns = [f"{prefix}_key", f"{prefix}_value"]
                if self.dedup == "dropDuplicates":
                    return rows.dropDuplicates([*columns, f"{prefix}_ts"])
                if self.dedup == "dropDuplicatesWithinWatermark":
                    return rows.dropDuplicatesWithinWatermark(columns)
                return rows

            left = side(self.left, "left", self.left_delay)
            right = side(self.right, "right", self.right_delay)
            condition = (f"left_key = right_key AND right_ts BETWEEN "
                         f"{_shifted('left_ts', self.lower)} AND "
                         f"{_shifted('left_ts', self.upper)}")
            joined = left.join(right, F.expr(condition), self.how)
            t.output(output, joined.select(
                F.coalesce("left_key", "right_key").alias("key"), "left_value", "left_ts",
                "right_value", "right_ts"))

        return build


def _shifted(column: str, delta: timedelta) -> str:
    """``column + INTERVAL ...`` as Spark SQL (a negative delta subtracts)."""
    sign = "-" if delta < timedelta(0) else "+"
    return f"{column} {sign} INTERVAL {interval_text(abs(delta))}"


def _joined(left: Event | None, right: Event | None) -> dict[str, Any]:
    present = left if left is not None else right
    assert present is not None
    return {"key": present.key,
            "left_value": None if left is None else left.value,
            "left_ts": None if left is None else left.timestamp,
            "right_value": None if right is None else right.value,
            "right_ts": None if right is None else right.timestamp}
