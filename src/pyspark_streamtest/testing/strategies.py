"""Hypothesis strategies for streaming tests, the runners for what they generate, and
settings that suit Spark.

Builders follow hypothesis' conventions: nouns, keyword-only options, arguments checked
up front (``InvalidArgument``), sub-strategies as parameters. Every random choice is
drawn so that it *shrinks* towards the simple case: fewer events, in order, on time,
no duplicates, no tombstones, fewer batches, no restarts. A failing example therefore
shrinks to a few records in a few batches, printed one step per line by
:class:`~pyspark_streamtest.testing.model.Schedule`.

>>> from hypothesis import given
>>> from pyspark_streamtest.testing import strategies as sst
>>> @given(sst.schedules(sst.events(max_disorder=timedelta(seconds=3)), max_batches=4))
... def test_counts(schedule): ...
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from hypothesis import strategies as st
from hypothesis.errors import InvalidArgument

from ..core.time import DEFAULT_START_TIME
from ..errors import hide_our_frames
from ._runs import clear_run_cache, run_schedule, run_topology, spark_settings
from .schedule import AdvanceWatermark, Drain, Event, Pipe, Restart, Schedule, Step, Tick

__tracebackhide__ = hide_our_frames

__all__ = [
    "AdvanceWatermark",
    "Drain",
    "Event",
    "Pipe",
    "Restart",
    "Schedule",
    "Tick",
    "clear_run_cache",
    "event_keys",
    "events",
    "run_schedule",
    "run_topology",
    "schedules",
    "spark_settings",
]


def _check_fraction(name: str, value: float) -> None:
    if not isinstance(value, (int, float)) or not 0.0 <= value <= 1.0:
        raise InvalidArgument(f"{name}={value!r} must be a fraction between 0 and 1")


def _check_duration(name: str, value: object, *, positive: bool = False) -> timedelta:
    if not isinstance(value, timedelta):
        raise InvalidArgument(f"{name}={value!r} must be a datetime.timedelta")
    if value < timedelta(0) or (positive and value == timedelta(0)):
        raise InvalidArgument(f"{name}={value!r} must be {'positive' if positive else '>= 0'}")
    return value


def _chance(draw: Any, fraction: float) -> bool:
    """True with probability ``fraction``; shrinks to False."""
    if fraction <= 0:
        return False
    return bool(draw(st.integers(0, 999)) >= 1000 - round(fraction * 1000))


def event_keys(*, count: int = 3) -> st.SearchStrategy[str]:
    """One of ``count`` keys ``"a"``, ``"b"``, ... (shrinks to ``"a"``)."""
    if isinstance(count, bool) or not isinstance(count, int) or not 1 <= count <= 26:
        raise InvalidArgument(f"count={count!r} must be an int from 1 to 26")
    return st.sampled_from([chr(ord("a") + i) for i in range(count)])


@st.composite
def _events(draw: Any, keys: st.SearchStrategy[str], values: st.SearchStrategy[str],
            start: datetime, min_size: int, max_size: int, resolution: timedelta,
            max_step: timedelta, max_disorder: timedelta, late: float, late_by: timedelta,
            duplicates: float, tombstones: float, key_skew: float) -> list[Event]:
    steps = max_step // resolution
    disorder = max_disorder // resolution
    hot = draw(keys)
    clock = 0  # in resolutions since start
    out: list[Event] = []
    # "one more?" before each event, as hypothesis' own lists do: deleting an event
    # deletes its draws, so examples shrink one event at a time
    while len(out) < max_size and (len(out) < min_size or draw(st.booleans())):
        if out and duplicates and _chance(draw, duplicates):
            out.append(out[draw(st.integers(0, len(out) - 1))])  # an exact copy, again
            continue
        # The clock's new position is drawn as a position, not as a step: when the
        # shrinker deletes an event, the events after it keep their times wherever the
        # step bound still allows (a drawn step would move all of them). It shrinks to
        # the bound nearest zero: the clock not moving.
        clock = draw(st.integers(clock, clock + steps))
        when = start + resolution * clock - resolution * -draw(st.integers(-disorder, 0))
        if late and _chance(draw, late):
            when = (start + resolution * clock - late_by
                    - resolution * draw(st.integers(1, max(1, disorder + 1))))
        key = hot if key_skew and _chance(draw, key_skew) else draw(keys)
        value = None if tombstones and _chance(draw, tombstones) else draw(values)
        out.append(Event(key, value, when))
    return out


def events(
    *,
    keys: st.SearchStrategy[str] | None = None,
    values: st.SearchStrategy[str] | None = None,
    start: datetime = DEFAULT_START_TIME,
    min_size: int = 0,
    max_size: int = 12,
    resolution: timedelta = timedelta(seconds=1),
    max_step: timedelta | None = None,
    max_disorder: timedelta = timedelta(0),
    late: float = 0.0,
    late_by: timedelta | None = None,
    duplicates: float = 0.0,
    tombstones: float = 0.0,
    key_skew: float = 0.0,
) -> st.SearchStrategy[list[Event]]:
    """Lists of :class:`~pyspark_streamtest.testing.model.Event` in arrival order.

    A hidden clock starts at ``start`` and moves ``0..max_step`` per event (in steps of
    ``resolution``; ``max_step`` defaults to two steps). Each event's time is the clock
    minus ``0..max_disorder`` (bounded disorder: an event is at most ``max_disorder``
    older than the newest before it). A ``late`` share is instead more than ``late_by``
    behind the clock (set ``late_by`` to the watermark delay to make them late for Spark
    unless the batching saves them; it defaults to 10 s rounded up to a multiple of
    ``resolution``). Every time argument given must be a multiple of ``resolution``;
    ``late_by`` is checked only when ``late`` asks for late events, so a coarse
    ``resolution`` works with every default.
    A ``duplicates`` share repeats an earlier event exactly; a ``tombstones`` share has
    value None; ``key_skew`` is the share of events on one hot key. ``keys`` and
    ``values`` default to ``"a".."c"`` and ``"x".."z"``.
    """
    if not isinstance(min_size, int) or not isinstance(max_size, int) or not (
            0 <= min_size <= max_size):
        raise InvalidArgument(f"need 0 <= min_size <= max_size, got {min_size}, {max_size}")
    for name, fraction in (("late", late), ("duplicates", duplicates),
                           ("tombstones", tombstones), ("key_skew", key_skew)):
        _check_fraction(name, fraction)
    resolution = _check_duration("resolution", resolution, positive=True)
    if max_step is None:
        max_step = 2 * resolution
    if late_by is None:
        late_by = -(-timedelta(seconds=10) // resolution) * resolution
    checked = [("max_step", max_step), ("max_disorder", max_disorder)]
    if late:
        checked.append(("late_by", late_by))
    for name, value in checked:
        if _check_duration(name, value) % resolution:
            raise InvalidArgument(
                f"{name}={value!r} must be a multiple of resolution={resolution!r}")
    if not isinstance(start, datetime) or start.tzinfo is None:
        raise InvalidArgument(f"start={start!r} must be a timezone-aware datetime")
    return _events(keys if keys is not None else event_keys(),
                   values if values is not None else st.sampled_from(["x", "y", "z"]),
                   start, min_size, max_size, resolution, max_step, max_disorder, late,
                   late_by, duplicates, tombstones, key_skew)


@st.composite
def _schedules(draw: Any, source: st.SearchStrategy[list[Event]], max_batches: int,
               idle_ticks: int, restarts: float, watermark_advances: float,
               advance_by: timedelta) -> Schedule:
    piped = draw(source)
    parts: list[list[Event]] = [[]]
    for event in piped:
        # a new batch before this event? (shrinks to "no": fewer, bigger batches)
        if parts[-1] and len(parts) < max_batches and draw(st.booleans()):
            parts.append([])
        parts[-1].append(event)
    steps: list[Step] = []
    for chunk in parts:
        part = tuple(chunk)
        if part:
            steps.append(Pipe(part))
        steps.append(Tick())
        steps.extend(Tick() for _ in range(draw(st.integers(0, idle_ticks))))
        if restarts and _chance(draw, restarts):
            steps.append(Restart())
        if watermark_advances and part and _chance(draw, watermark_advances):
            newest = max(e.timestamp for e in part)
            steps.append(AdvanceWatermark(newest + advance_by * draw(st.integers(0, 3))))
    steps.append(Drain())
    return Schedule(tuple(steps))


def schedules(
    events_strategy: st.SearchStrategy[list[Event]] | None = None,
    *,
    max_batches: int = 6,
    idle_ticks: int = 1,
    restarts: float = 0.0,
    watermark_advances: float = 0.0,
    advance_by: timedelta = timedelta(seconds=5),
) -> st.SearchStrategy[Schedule]:
    """:class:`~pyspark_streamtest.testing.model.Schedule` values: the events of
    ``events_strategy`` (default :func:`events`) split into ``1..max_batches`` pipes,
    each followed by a trigger (a data batch) and ``0..idle_ticks`` more triggers
    (where Spark runs the no-data batches it owes), then, with the given shares, a
    restart or a watermark advance (to the chunk's newest event time plus
    ``0..3 * advance_by``); a final drain. Splits shrink towards one batch."""
    if not isinstance(max_batches, int) or max_batches < 1:
        raise InvalidArgument(f"max_batches={max_batches!r} must be an int >= 1")
    if not isinstance(idle_ticks, int) or idle_ticks < 0:
        raise InvalidArgument(f"idle_ticks={idle_ticks!r} must be an int >= 0")
    _check_fraction("restarts", restarts)
    _check_fraction("watermark_advances", watermark_advances)
    _check_duration("advance_by", advance_by)
    return _schedules(events_strategy if events_strategy is not None else events(),
                      max_batches, idle_ticks, restarts, watermark_advances, advance_by)
