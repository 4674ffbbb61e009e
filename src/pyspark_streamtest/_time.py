"""Exact time conversions: aware datetimes and integer milliseconds, never floats."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

from .errors import NaiveDatetimeError, TimeWentBackwardsError

EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)


def require_aware(value: object, what: str) -> datetime:
    if not isinstance(value, datetime):
        raise TypeError(
            f"{what} must be a timezone-aware datetime, got {type(value).__name__} {value!r}"
        )
    if value.tzinfo is None or value.utcoffset() is None:
        raise NaiveDatetimeError(
            f"{what} is a naive datetime ({value.isoformat()}); give it a time zone, "
            "e.g. datetime(..., tzinfo=timezone.utc)"
        )
    return value


def to_ms(value: datetime) -> int:
    """Milliseconds since the epoch; sub-millisecond parts are truncated (as Spark does)."""
    delta = value - EPOCH
    return (delta.days * 86_400 + delta.seconds) * 1000 + delta.microseconds // 1000


def from_ms(ms: int) -> datetime:
    return EPOCH + timedelta(milliseconds=ms)


def duration_ms(delta: object, what: str, *, allow_zero: bool = True) -> int:
    """A non-negative timedelta as whole milliseconds."""
    if not isinstance(delta, timedelta):
        raise TypeError(f"{what} must be a datetime.timedelta, got {type(delta).__name__}")
    if delta < timedelta(0):
        raise TimeWentBackwardsError(
            f"{what} is negative ({delta}); time only moves forward. "
            "Restart the test from an earlier point instead."
        )
    if delta % timedelta(milliseconds=1):
        raise ValueError(f"{what} ({delta}) must be a whole number of milliseconds")
    ms = delta // timedelta(milliseconds=1)
    if ms == 0 and not allow_zero:
        raise ValueError(f"{what} must be positive, got {delta}")
    return ms


def format_time(value: datetime | None) -> str:
    """``2024-01-01 00:00:01.250`` (UTC), or ``-`` for None."""
    if value is None:
        return "-"
    return value.astimezone(timezone.utc).strftime("%Y-%m-%d %H:%M:%S.%f")[:-3]
