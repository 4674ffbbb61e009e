"""Which piped records a query dropped as late, from the event time each stateful
operator really compared (evaluated by :mod:`.._spark.late_rows`), checked against
Spark's own per-operator drop counts."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

from .._spark.query.late_rows import LateOperator, OperatorInput, Reached
from ..core.records import BatchRecord, LateRecord, TestRecord
from ..core.time import EPOCH
from ..errors import InvalidArgumentError, hide_our_frames

__tracebackhide__ = hide_our_frames

_US = timedelta(microseconds=1)

Reach = Callable[[OperatorInput, Mapping[int, Sequence[tuple[int, str]]]], "list[Reached] | str"]
"""Evaluates the rows reaching an operator input, given each source's tagged lines."""


@dataclass(frozen=True)
class _Entry:
    batch: BatchRecord
    watermark: datetime
    record: TestRecord


def tagged_lines(
    records: Iterable[TestRecord], feed: Callable[[TestRecord], tuple[int, str] | None],
) -> dict[int, list[tuple[int, str]]]:
    """Per source (the leaf's expression id ``feed`` gives), the JSON lines of
    ``records`` each tagged with the record's position, as a replay feeds them."""
    lines: dict[int, list[tuple[int, str]]] = {}
    for tag, record in enumerate(records):
        fed = feed(record)
        if fed is not None:
            lines.setdefault(fed[0], []).append((tag, fed[1]))
    return lines


def _operator_name(batch: BatchRecord, index: int, kind: str) -> str:
    operators = batch.state_operators
    return str(operators[index].get("operatorName", kind)) if index < len(operators) else kind


def _spark_count(batch: BatchRecord, index: int) -> int | None:
    operators = batch.state_operators
    if index >= len(operators):
        return None
    return int(operators[index].get("numRowsDroppedByWatermark", 0))


def evaluate_late(
    output: str,
    operators: Sequence[LateOperator],
    pending: Sequence[tuple[BatchRecord, datetime]],
    feed: Callable[[TestRecord], tuple[int, str] | None],
    reach: Reach,
) -> dict[int, tuple[LateRecord, ...]]:
    """Per batch of ``pending`` (each with the watermark its late rows were compared
    with), keyed by ``id(batch)``: the records dropped as late, oldest first.

    ``feed`` gives a record's source (the leaf's expression id) and JSON line. Raises
    :class:`InvalidArgumentError` when a drop cannot be named exactly."""
    entries = [_Entry(batch, mark, record) for batch, mark in pending
               for record in batch.input_records]
    lines = tagged_lines((entry.record for entry in entries), feed)
    dropped: dict[int, tuple[LateOperator, OperatorInput, list[Reached], int]] = {}
    counts: dict[tuple[int, int], int] = {}  # (operator, id(batch)) -> late rows
    for operator in sorted(operators, key=lambda op: -op.index):  # upstream ones first
        for operator_input in operator.inputs:
            if operator_input.derived is not None:
                _refuse_derived(output, operator, operator_input, pending)
                continue
            reached = reach(operator_input, lines) if lines else []
            if isinstance(reached, str):
                raise InvalidArgumentError(
                    f"cannot tell which records output {output!r} drops as late: {reached}")
            by_tag: dict[int, list[Reached]] = {}
            for row in reached:
                by_tag.setdefault(row.tag, []).append(row)
            for tag, rows in by_tag.items():
                entry = entries[tag]
                mark_us = (entry.watermark - EPOCH) // _US
                late = [row for row in rows if row.end_us <= mark_us]
                earlier = dropped.get(tag)
                if not late or (earlier is not None and earlier[0].index in operator.below):
                    continue  # not late here, or dropped upstream: it never reaches here
                key = (operator.index, id(entry.batch))
                counts[key] = counts.get(key, 0) + len(late)
                dropped.setdefault(tag, (operator, operator_input, late, len(rows)))
    _check_counts(output, operators, pending, counts)
    found: dict[int, list[LateRecord]] = {id(batch): [] for batch, _ in pending}
    for tag, (operator, operator_input, late, reached_rows) in sorted(dropped.items()):
        entry = entries[tag]
        windows: tuple[tuple[datetime, datetime], ...] = ()
        if operator_input.column != "session_window" and late[0].start_us is not None:
            windows = tuple(sorted(
                (EPOCH + row.start_us * _US, EPOCH + row.end_us * _US)
                for row in late if row.start_us is not None))
        found[id(entry.batch)].append(LateRecord(
            entry.record, entry.batch.batch_id, entry.watermark, windows,
            partial=len(late) < reached_rows,
            operator=_operator_name(entry.batch, operator.index, operator.kind),
            operator_id=operator.index, side=operator_input.side,
        ))
    return {key: tuple(value) for key, value in found.items()}


def _refuse_derived(
    output: str, operator: LateOperator, operator_input: OperatorInput,
    pending: Sequence[tuple[BatchRecord, datetime]],
) -> None:
    for batch, _ in pending:
        if _spark_count(batch, operator.index):
            raise InvalidArgumentError(
                f"cannot tell which records output {output!r} drops as late: operator "
                f"{operator.index} ({_operator_name(batch, operator.index, operator.kind)}) "
                f"dropped rows in batch {batch.batch_id}, but {operator_input.derived}; read "
                "BatchRecord.state_metrics for its counts")


def _check_counts(
    output: str, operators: Sequence[LateOperator],
    pending: Sequence[tuple[BatchRecord, datetime]], counts: Mapping[tuple[int, int], int],
) -> None:
    """Spark counts every row an operator drops; an aggregation counts rows after
    partial aggregation (several late rows of one group count once)."""
    for operator in operators:
        if any(i.derived is not None for i in operator.inputs):
            continue
        for batch, _ in pending:
            spark = _spark_count(batch, operator.index)
            ours = counts.get((operator.index, id(batch)), 0)
            if spark is None:
                continue
            agrees = (ours >= spark and (ours > 0) == (spark > 0)
                      if operator.kind in ("Aggregate", "Distinct") else ours == spark)
            if not agrees:
                raise InvalidArgumentError(
                    f"cannot tell which records output {output!r} drops as late: in batch "
                    f"{batch.batch_id} operator {operator.index} "
                    f"({_operator_name(batch, operator.index, operator.kind)}) dropped {spark} "
                    f"rows as late, the driver's evaluation of its input finds {ours}; read "
                    "BatchRecord.state_metrics (and please report this query)")


def evaluate_event_times(
    pending: Sequence[BatchRecord],
    watermark_inputs: Sequence[OperatorInput],
    feed: Callable[[TestRecord], tuple[int, str] | None],
    reach: Reach,
) -> dict[int, tuple[datetime | None, ...]] | str:
    """Per batch of ``pending`` (keyed by ``id(batch)``), the event time each input
    record has in the query's ``withWatermark`` column (None where the query filtered it
    out before), or why it cannot be evaluated."""
    entries = [(batch, record) for batch in pending for record in batch.input_records]
    lines = tagged_lines((record for _, record in entries), feed)
    times: dict[int, int] = {}
    for watermark_input in watermark_inputs if lines else ():
        reached = reach(watermark_input, lines)
        if isinstance(reached, str):
            return reached
        for row in reached:
            times.setdefault(row.tag, row.end_us)
    found: dict[int, list[datetime | None]] = {id(batch): [] for batch in pending}
    for tag, (batch, _) in enumerate(entries):
        found[id(batch)].append(EPOCH + times[tag] * _US if tag in times else None)
    return {key: tuple(value) for key, value in found.items()}
