"""Which piped records a batch dropped as late, by the rule of the query's operator."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime, timedelta

from .._spark.query.plan import LateRule
from ..core.records import LateRecord, TestRecord
from ..core.time import EPOCH
from ..errors import hide_our_frames

__tracebackhide__ = hide_our_frames

_US = timedelta(microseconds=1)


def _us(value: datetime) -> int:
    return (value - EPOCH) // _US


def _windows(t_us: int, rule: LateRule) -> list[tuple[int, int]]:
    """The (start, end) of every window holding ``t_us``, as Spark assigns them."""
    slide, size = rule.slide_us, rule.size_us
    last_start = t_us - ((t_us - rule.start_us) % slide + slide) % slide
    overlapping = -(-size // slide)
    found = []
    for i in range(overlapping):
        start = last_start - i * slide
        if start <= t_us < start + size:
            found.append((start, start + size))
    return sorted(found)


def late_records(
    rule: LateRule,
    records: Iterable[TestRecord],
    time_columns: dict[str, str | None],
    batch_id: int,
    watermark: datetime,
    operator: str | None = None,
) -> tuple[LateRecord, ...]:
    """The records of one batch that ``rule`` drops, compared with ``watermark`` (the
    previous batch's). Records of inputs whose event time is not the watermarked column
    are never late."""
    if rule.kind == "none":
        return ()
    w_us = _us(watermark)
    late: list[LateRecord] = []
    for record in records:
        if record.timestamp is None or time_columns.get(record.topic) != rule.column:
            continue
        t_us = _us(record.timestamp)
        if rule.kind == "event_time":
            if t_us <= w_us:
                late.append(LateRecord(record, batch_id, watermark, operator=operator,
                                       operator_id=0))
        elif rule.kind == "session":
            if t_us + rule.size_us <= w_us:
                late.append(LateRecord(record, batch_id, watermark, operator=operator,
                                       operator_id=0))
        else:
            windows = _windows(t_us, rule)
            dropped = [w for w in windows if w[1] <= w_us]
            if dropped:
                late.append(LateRecord(
                    record, batch_id, watermark,
                    tuple((EPOCH + s * _US, EPOCH + e * _US) for s, e in dropped),
                    partial=len(dropped) < len(windows), operator=operator, operator_id=0,
                ))
    return tuple(late)
