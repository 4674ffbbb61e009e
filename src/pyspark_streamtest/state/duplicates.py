"""Which piped records a deduplication dropped as duplicates: the rows reaching it
(evaluated by :mod:`.._spark.query.late_rows` with its keys), the keys Spark held before
each batch (the state store as of the batch before), checked against Spark's own count
(``numDroppedDuplicateRows``) per operator and batch."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from datetime import datetime, timedelta
from typing import Any

from .._spark.query.late_rows import DedupOperator, OperatorInput, Reached
from ..core.records import BatchRecord, DuplicateRecord, TestRecord, dropped_duplicates
from ..core.time import EPOCH
from ..errors import InvalidArgumentError, hide_our_frames
from .late_evaluated import tagged_lines
from .views import StateStoreView, _hashable

__tracebackhide__ = hide_our_frames

_US = timedelta(microseconds=1)

Reach = Callable[[OperatorInput, Mapping[int, Sequence[tuple[int, str]]]], "list[Reached] | str"]
Held = Callable[[int, int], StateStoreView]
"""The store of operator ``operator_id`` as of the end of batch ``batch_id``."""


def _spark_count(batch: BatchRecord, index: int) -> int:
    operators = batch.state_operators
    return (dropped_duplicates(operators[index]) or 0) if index < len(operators) else 0


def _name(batch: BatchRecord, operator: DedupOperator) -> str:
    operators = batch.state_operators
    if operator.index >= len(operators):
        return operator.kind
    return str(operators[operator.index].get("operatorName") or operator.kind)


def evaluate_duplicates(
    output: str,
    operators: Sequence[DedupOperator],
    batches: Sequence[tuple[BatchRecord, datetime]],
    feed: Callable[[TestRecord], tuple[int, str] | None],
    reach: Reach,
    held: Held,
) -> list[DuplicateRecord]:
    """The records ``output``'s deduplications dropped as duplicates in ``batches`` (each
    with the watermark its late rows were compared with), oldest first.

    Only operators that dropped duplicates in some batch (Spark's count) are evaluated:
    one batch job over every piped record, and one state read per batch with drops.
    Raises :class:`InvalidArgumentError` when the drops cannot be named exactly."""
    found: list[tuple[int, int, DuplicateRecord]] = []
    for operator in operators:
        dropping = [b for b, _ in batches if _spark_count(b, operator.index)]
        if not dropping:
            continue
        if operator.input.derived is not None:
            raise InvalidArgumentError(
                f"cannot tell which records output {output!r} drops as duplicates: operator "
                f"{operator.index} ({_name(dropping[0], operator)}) dropped rows in batch "
                f"{dropping[0].batch_id}, but {operator.input.derived}; read "
                "BatchRecord.state_metrics for its counts")
        found.extend(_of_operator(output, operator, batches, feed, reach, held))
    return [duplicate for _, _, duplicate in sorted(found, key=lambda f: (f[0], f[1]))]


def _of_operator(
    output: str, operator: DedupOperator, batches: Sequence[tuple[BatchRecord, datetime]],
    feed: Callable[[TestRecord], tuple[int, str] | None], reach: Reach, held: Held,
) -> list[tuple[int, int, DuplicateRecord]]:
    entries = [(batch, mark, record) for batch, mark in batches for record in batch.input_records]
    lines = tagged_lines((record for _, _, record in entries), feed)
    reached = reach(operator.input, lines) if lines else []
    if isinstance(reached, str):
        raise InvalidArgumentError(
            f"cannot tell which records output {output!r} drops as duplicates: {reached}")
    by_tag: dict[int, list[Reached]] = {}
    for row in reached:
        by_tag.setdefault(row.tag, []).append(row)
    found: list[tuple[int, int, DuplicateRecord]] = []
    last: dict[Any, TestRecord] = {}  # per key, the last record that reached it in time
    tag = 0
    for position, (batch, mark) in enumerate(batches):
        tags = range(tag, tag + len(batch.input_records))
        tag = tags.stop
        mark_us = (mark - EPOCH) // _US
        rows = [(t, row) for t in tags for row in by_tag.get(t, ()) if row.end_us > mark_us]
        spark = _spark_count(batch, operator.index)
        if spark:
            before = held(operator.index, batch.batch_id - 1) if batch.batch_id > 0 else None
            dropped = _dropped(output, operator, batch, rows, entries, before, last)
            if len(dropped) != spark:
                raise InvalidArgumentError(
                    f"cannot tell which records output {output!r} drops as duplicates: in "
                    f"batch {batch.batch_id} operator {operator.index} "
                    f"({_name(batch, operator)}) dropped {spark} rows as duplicates, the "
                    f"driver's evaluation of its input finds {len(dropped)}; read "
                    "BatchRecord.state_metrics (and please report this query)")
            found.extend((position, t, d) for t, d in dropped)
        for t, row in rows:
            last[_hashable(row.key)] = entries[t][2]
    return found


Entry = tuple[BatchRecord, datetime, TestRecord]


def _dropped(
    output: str, operator: DedupOperator, batch: BatchRecord,
    rows: Sequence[tuple[int, Reached]], entries: Sequence[Entry],
    before: StateStoreView | None, last: Mapping[Any, TestRecord],
) -> list[tuple[int, DuplicateRecord]]:
    """The rows of one batch (in the order piped, late ones left out) the operator drops:
    a key held before the batch, or met earlier in the batch (Spark keeps the first a
    task reads: records of one input partition reach it in the order piped)."""
    first: dict[Any, TestRecord] = {}
    dropped = []
    for t, row in rows:
        record = entries[t][2]
        key = _hashable(row.key)
        shown = dict(zip(operator.key_names, row.key, strict=True))
        kept = first.get(key)
        if kept is not None and (kept.topic, kept.partition) != (record.topic, record.partition):
            raise InvalidArgumentError(
                f"cannot tell which records output {output!r} drops as duplicates: in batch "
                f"{batch.batch_id} the key {shown} comes from {kept.topic!r} partition "
                f"{kept.partition} and {record.topic!r} partition {record.partition}, and "
                "Spark keeps whichever its task reads first; read BatchRecord.state_metrics "
                "for the count")
        if kept is not None:
            earlier: TestRecord | None = kept
        elif before is not None and shown in before:
            earlier = last.get(key)
        else:
            first[key] = record
            continue
        dropped.append((t, DuplicateRecord(record, batch.batch_id, shown, earlier,
                                           _name(batch, operator), operator.index)))
    return dropped
