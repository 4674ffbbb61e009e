"""A value piped into a plain input, as its JSON line and its record: checked against
the input's schema, with its event time."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime, timedelta
from typing import Any

from ...core.records import TestRecord
from ...core.time import check_in_range, duration_ms, from_ms, is_plain_utc, require_aware, to_ms
from ...errors import InvalidArgumentError, SchemaMismatchError, hide_our_frames
from ..topology import InputSpec

__tracebackhide__ = hide_our_frames

__all__ = ["encode_value", "later"]


def encode_value(
    spec: InputSpec, advance: timedelta, value: Any, timestamp: datetime | None,
    clock: datetime,
) -> tuple[str, TestRecord, datetime]:
    """(JSON line, record, the handle's record time after it) for one ``value`` piped
    into a plain input: checked against the schema, with its event time (``timestamp``,
    the value's own, or the handle's record time ``clock``, which then moves by
    ``advance``)."""
    column = spec.timestamp_column
    try:
        if column is not None and isinstance(value, (tuple, list)) and (
            len(value) == len(spec.encoder.names) - 1
        ):
            names = spec.encoder.names_except(column)
            mapping: Mapping[str, Any] = dict(zip(names, value, strict=True))
        else:
            mapping = spec.encoder.as_mapping(value, "value")
        event_time: datetime | None = None
        if column is None:
            if timestamp is not None:
                raise InvalidArgumentError(
                    f"input {spec.name!r} has no timestamp_column, so timestamp= has "
                    "nowhere to go; declare t.input(..., timestamp_column=...) or put the "
                    "time in the value"
                )
        else:
            given = mapping.get(column)
            if given is None:
                if timestamp is None:
                    event_time = clock
                    clock = later(clock, advance, "the next record time")
                else:
                    event_time = require_aware(timestamp, "timestamp")
                mapping = {**mapping, column: event_time}
            else:
                event_time = given if is_plain_utc(given) else require_aware(
                    given, f"field {column!r}")
                if timestamp is not None and require_aware(timestamp, "timestamp") != given:
                    raise InvalidArgumentError(
                        f"the value's {column!r} ({given.isoformat()}) and timestamp= "
                        f"({timestamp.isoformat()}) disagree; give the event time once"
                    )
        line = spec.encoder.json_line(mapping)
    except SchemaMismatchError as error:
        raise SchemaMismatchError(f"input {spec.name!r}: {error}") from None
    record = TestRecord(value=dict(mapping), timestamp=event_time, topic=spec.name)
    return line, record, clock


def later(time: datetime, delta: timedelta, what: str) -> datetime:
    """``time + delta``, or :class:`~pyspark_streamtest.errors.TimeOutOfRangeError` when
    that is past 9999 (before anything is piped)."""
    return from_ms(check_in_range(to_ms(time) + duration_ms(delta, "delta"), what))
