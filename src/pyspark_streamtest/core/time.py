"""Time, exactly: aware datetimes and integer milliseconds (never floats), the fixed
default start, and keeping Python's clock in step with the driver's.

The driver owns one processing-time clock for all its queries (each query's
trigger clock reads it). With ``freeze_python_clock=True`` the driver also freezes
this Python process's clock (``datetime.now()``, ``time.time()``, via freezegun) at
the same instant and moves it whenever processing time moves, so code under test in
the test process sees the same "now" as ``current_timestamp()`` in the query. Spark's
Python workers (UDFs, ``applyInPandasWithState`` functions) run in other processes and
are not frozen: inside a query, read time from Spark (``current_timestamp()``,
``GroupState.getCurrentProcessingTimeMs()``).
"""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from typing import Any

from ..errors import (
    InvalidDurationError,
    NaiveDatetimeError,
    TimeOutOfRangeError,
    TimeWentBackwardsError,
)

__all__ = ["DEFAULT_START_TIME"]

EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)

DEFAULT_START_TIME = datetime(2024, 1, 1, tzinfo=timezone.utc)
"""Processing time when a driver starts, unless ``start_time=`` says otherwise."""


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


LAST_MS = (datetime(9999, 12, 31, 23, 59, 59, 999000, tzinfo=timezone.utc) - EPOCH) // timedelta(
    milliseconds=1
)
"""The last millisecond a datetime (and a Spark timestamp) can hold."""


_LONGEST = datetime.max.replace(tzinfo=timezone.utc) - datetime.min.replace(tzinfo=timezone.utc)


def check_in_range(ms: int, what: str) -> int:
    """``ms`` if it is at most :data:`LAST_MS`, else :class:`TimeOutOfRangeError`."""
    if ms > LAST_MS:
        raise TimeOutOfRangeError(
            f"{what} would be past 9999-12-31T23:59:59.999Z, the last instant a datetime "
            "and a Spark timestamp can hold; nothing was changed. Use a smaller delta"
        )
    return ms


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
    if delta > _LONGEST:
        raise TimeOutOfRangeError(
            f"{what} ({delta}) is longer than the whole range of datetimes (years 1 to "
            "9999); nothing was changed. Use a smaller delta"
        )
    if delta % timedelta(milliseconds=1):
        raise InvalidDurationError(f"{what} ({delta}) must be a whole number of milliseconds")
    ms = delta // timedelta(milliseconds=1)
    if ms == 0 and not allow_zero:
        raise InvalidDurationError(f"{what} must be positive, got {delta}")
    return ms


def format_time(value: datetime | None) -> str:
    """``2024-01-01 00:00:01.250`` (UTC), or ``-`` for None."""
    if value is None:
        return "-"
    return value.astimezone(timezone.utc).strftime("%Y-%m-%d %H:%M:%S.%f")[:-3]

# freezegun must not freeze the clocks the driver itself uses to wait for Spark.
_REAL_TIME_MODULES = ["pyspark_streamtest", "pyspark", "py4j", "threading", "socket"]


class _PythonClockFreeze:
    """freezegun's frozen clock, started at the driver's time and moved with it."""

    def __init__(self, start: datetime) -> None:
        import freezegun

        self._freezer: Any = freezegun.freeze_time(start, ignore=_REAL_TIME_MODULES)
        self._factory: Any = self._freezer.start()

    def move_to(self, instant: datetime) -> None:
        self._factory.move_to(instant)

    def stop(self) -> None:
        self._freezer.stop()
