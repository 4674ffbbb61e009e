"""Time, exactly: aware datetimes and integer milliseconds (never floats), the fixed
default start, and keeping Python's clock in step with the driver's.

**The range of instants.** Spark's timestamps cover 0001-01-01T00:00:00Z to
9999-12-31T23:59:59.999999Z (its JVM even computes a little past either end, e.g. a
window ending at 10000-01-01). PySpark gives every timestamp a query returns back as a
*local* datetime (``datetime.fromtimestamp``), and Python cannot make one on the first
day of year 1 or past 9999-12-31 in this process's time zone (it looks a day back for
a daylight-saving fold). So an instant the driver pipes into Spark must be one PySpark
can give back: :func:`require_aware` and :func:`check_instant` refuse the others with
:class:`~pyspark_streamtest.errors.TimeOutOfRangeError` before anything is piped.
Outside the first and last days of the range nothing is checked per value.

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
from typing import Any, TypeGuard

from ..errors import (
    InvalidArgumentTypeError,
    InvalidDurationError,
    NaiveDatetimeError,
    TimeOutOfRangeError,
    TimeWentBackwardsError,
    hide_our_frames,
)

__tracebackhide__ = hide_our_frames

__all__ = ["DEFAULT_START_TIME"]

EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)

DEFAULT_START_TIME = datetime(2024, 1, 1, tzinfo=timezone.utc)
"""Processing time when a driver starts, unless ``start_time=`` says otherwise."""


def require_aware(value: object, what: str) -> datetime:
    """``value`` if it is an aware datetime of an instant Spark holds and PySpark gives
    back (see the module doc); else :class:`InvalidArgumentTypeError`,
    :class:`NaiveDatetimeError` or :class:`TimeOutOfRangeError`."""
    aware = aware_datetime(value, what)
    check_instant(aware, what)
    return aware


def aware_datetime(value: object, what: str) -> datetime:
    """``value`` if it is a timezone-aware datetime (any instant), else
    :class:`InvalidArgumentTypeError` or :class:`NaiveDatetimeError`."""
    if not isinstance(value, datetime):
        raise InvalidArgumentTypeError(
            f"{what} must be a timezone-aware datetime, got {type(value).__name__} {value!r}"
        )
    if value.tzinfo is None or value.utcoffset() is None:
        raise NaiveDatetimeError(
            f"{what} is a naive datetime ({value.isoformat()}); give it a time zone, "
            "e.g. datetime(..., tzinfo=timezone.utc)"
        )
    return value


def is_plain_utc(value: object) -> TypeGuard[datetime]:
    """True for a datetime in ``timezone.utc`` outside the range's first and last year:
    one that :func:`require_aware` and :func:`check_instant` give back unchanged. The
    piping paths check this first and call those only for the rest."""
    return (type(value) is datetime and value.tzinfo is timezone.utc
            and 1 < value.year < 9999)


def check_instant(value: datetime, what: str) -> datetime:
    """The aware ``value`` in UTC, if Spark holds it and PySpark can give it back in this
    process (see the module doc); else :class:`TimeOutOfRangeError` naming ``what``."""
    if value.tzinfo is timezone.utc:
        utc = value
    else:
        try:
            utc = value.astimezone(timezone.utc)
        except OverflowError:
            side = "before 0001-01-01T00:00:00Z" if value.year == 1 else (
                "past 9999-12-31T23:59:59.999999Z")
            raise TimeOutOfRangeError(
                f"{what} ({value.isoformat()}) is {side} in UTC, outside Spark's range of "
                "timestamps (0001-01-01 to 9999-12-31 UTC); nothing was changed"
            ) from None
    if 1 < utc.year < 9999 or _pyspark_gives_back(utc):
        return utc
    raise TimeOutOfRangeError(
        f"{what} ({utc.isoformat()}) is a time Spark holds, but PySpark cannot give it "
        "back in this process's time zone: collect() turns every timestamp into a local "
        "datetime (datetime.fromtimestamp), which Python cannot make on the first day of "
        "year 1 or past 9999-12-31 local time. Nothing was changed; use a time at least a "
        "day inside the range (0001-01-03 to 9999-12-30 UTC)"
    )


def _pyspark_gives_back(utc: datetime) -> bool:
    """Whether PySpark's TimestampType.fromInternal, and the driver's conversion of its
    local result to UTC, work for this instant in this process's time zone."""
    seconds = (utc - EPOCH) // timedelta(seconds=1)
    try:  # as fromInternal: whole seconds in local time, then the microseconds
        local = datetime.fromtimestamp(seconds).replace(microsecond=utc.microsecond)
        local.astimezone(timezone.utc)
    except (ValueError, OverflowError, OSError):
        return False
    return True


def to_ms(value: datetime) -> int:
    """Milliseconds since the epoch; sub-millisecond parts are truncated (as Spark does)."""
    delta = value - EPOCH
    return (delta.days * 86_400 + delta.seconds) * 1000 + delta.microseconds // 1000


def to_micros(value: datetime) -> int:
    """Microseconds since the epoch (Spark's unit for timestamps), exactly."""
    return (value - EPOCH) // timedelta(microseconds=1)


def utc_from_micros(micros: int, what: str) -> datetime:
    """The aware UTC datetime ``micros`` microseconds after the epoch, or
    :class:`TimeOutOfRangeError` naming ``what`` when no datetime can hold it (Spark's
    last windows end at 10000-01-01T00:00:00Z, 253402300800000000)."""
    try:
        return EPOCH + timedelta(microseconds=micros)
    except OverflowError:
        side = "before 0001-01-01T00:00:00Z" if micros < 0 else (
            "past 9999-12-31T23:59:59.999999Z")
        raise TimeOutOfRangeError(
            f"{what} is {micros} microseconds after the epoch, {side}: no Python "
            "datetime holds it (years 1 to 9999)"
        ) from None


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
        raise InvalidArgumentTypeError(
            f"{what} must be a datetime.timedelta, got {type(delta).__name__}"
        )
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


class PythonClockFreeze:
    """freezegun's frozen clock, started at the driver's time and moved with it."""

    def __init__(self, start: datetime) -> None:
        import freezegun

        self._freezer: Any = freezegun.freeze_time(start, ignore=_REAL_TIME_MODULES)
        self._factory: Any = self._freezer.start()

    def move_to(self, instant: datetime) -> None:
        self._factory.move_to(instant)

    def stop(self) -> None:
        self._freezer.stop()
