"""The draws and checks the strategies share (the face is
:mod:`pyspark_streamtest.testing.strategies`): a share drawn so that it shrinks to "no",
the keys, and the time options of the event strategies, checked against the
resolution."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from hypothesis import strategies as st
from hypothesis.errors import InvalidArgument

from ..errors import hide_our_frames

__tracebackhide__ = hide_our_frames

__all__ = ["chance", "check_duration", "check_fraction", "event_keys", "event_times"]


def check_fraction(name: str, value: float) -> None:
    if not isinstance(value, (int, float)) or not 0.0 <= value <= 1.0:
        raise InvalidArgument(f"{name}={value!r} must be a fraction between 0 and 1")


def check_duration(name: str, value: object, *, positive: bool = False) -> timedelta:
    if not isinstance(value, timedelta):
        raise InvalidArgument(f"{name}={value!r} must be a datetime.timedelta")
    if value < timedelta(0) or (positive and value == timedelta(0)):
        raise InvalidArgument(f"{name}={value!r} must be {'positive' if positive else '>= 0'}")
    return value


_THOUSAND = st.integers(0, 999)


def chance(draw: Any, fraction: float) -> bool:
    """True with probability ``fraction``; shrinks to False."""
    if fraction <= 0:
        return False
    return bool(draw(_THOUSAND) >= 1000 - round(fraction * 1000))


def event_keys(*, count: int = 3) -> st.SearchStrategy[str]:
    """One of ``count`` keys ``"a"``, ``"b"``, ... (shrinks to ``"a"``)."""
    if isinstance(count, bool) or not isinstance(count, int) or not 1 <= count <= 26:
        raise InvalidArgument(f"count={count!r} must be an int from 1 to 26")
    return st.sampled_from([chr(ord("a") + i) for i in range(count)])


def event_times(min_size: int, max_size: int, resolution: timedelta,
                 max_step: timedelta | None, late_by: timedelta | None,
                 max_disorder: timedelta, start: datetime, **shares: float
                 ) -> tuple[timedelta, timedelta, timedelta]:
    """Checks the options ``events``, ``row_events`` and ``joined_schedules`` share; returns
    ``(max_step, max_disorder, late_by)`` with the defaults filled in."""
    if not isinstance(min_size, int) or not isinstance(max_size, int) or not (
            0 <= min_size <= max_size):
        raise InvalidArgument(f"need 0 <= min_size <= max_size, got {min_size}, {max_size}")
    for name, fraction in shares.items():
        check_fraction(name, fraction)
    resolution = check_duration("resolution", resolution, positive=True)
    if max_step is None:
        max_step = 2 * resolution
    if late_by is None:
        late_by = -(-timedelta(seconds=10) // resolution) * resolution
    checked = [("max_step", max_step), ("max_disorder", max_disorder)]
    if shares["late"]:
        checked.append(("late_by", late_by))
    for name, value in checked:
        if check_duration(name, value) % resolution:
            raise InvalidArgument(
                f"{name}={value!r} must be a multiple of resolution={resolution!r}")
    if not isinstance(start, datetime) or start.tzinfo is None:
        raise InvalidArgument(f"start={start!r} must be a timezone-aware datetime")
    return max_step, max_disorder, late_by
