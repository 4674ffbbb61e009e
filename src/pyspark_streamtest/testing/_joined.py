"""Schedules for a pipeline that joins two inputs: the second input's events drawn from
the first's keys and times (the face is :mod:`pyspark_streamtest.testing.strategies`).

A click refers to an impression; a payment to an order. Drawn independently
(``schedules({"impressions": ..., "clicks": ...})``), two inputs rarely share a key
and a time range, so a join meets few rows and a property checks little. Here each
*story* draws a left event and the right events that refer to it, and every part of a
story (its clock, times, arrivals, batch boundary) is drawn inside the story: when
hypothesis drops a story while shrinking, the other stories keep their events and
their batches, and the smaller candidate usually still fails.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from functools import lru_cache
from typing import Any

from hypothesis import strategies as st
from hypothesis.errors import InvalidArgument

from ..core.time import DEFAULT_START_TIME
from ..errors import InvalidArgumentError, InvalidArgumentTypeError, hide_our_frames
from ._draws import chance, event_keys, event_times
from .schedule import Drain, Event, Pipe, Restart, Schedule, Step, Tick

__tracebackhide__ = hide_our_frames

__all__ = ["joined_schedules"]


@dataclass(frozen=True)
class _Shape:
    """The options of :func:`joined_schedules`, checked, in resolution steps."""

    left: str
    right: str
    keys: st.SearchStrategy[str]
    values: st.SearchStrategy[Any] | None
    start: datetime
    resolution: timedelta
    min_size: int
    max_size: int
    lower: int
    upper: int
    max_partners: int
    outside: float
    orphans: float
    step: int
    disorder: int
    late: float
    late_by: int
    duplicates: float
    max_batches: int
    idle_ticks: int
    restarts: float


@dataclass(frozen=True)
class _Drawn:
    """One event drawn: its input, the event, when it arrives (in steps) and its order."""

    arrival: int
    order: int
    input: str
    event: Event


@dataclass(frozen=True)
class _Timed:
    """What one event draws besides its key and time: its lateness, value and copy."""

    disorder: int
    late: bool
    behind: int
    value: Any
    again: bool
    lag: int

    def delay(self) -> int:
        """Steps between the event's time and its arrival."""
        return self.behind if self.late else self.disorder


@lru_cache(maxsize=256)
def _ints(low: int, high: int) -> st.SearchStrategy[int]:
    """``st.integers(low, high)``, made once (an example draws dozens)."""
    return st.integers(low, high)


def _upto(draw: Any, high: int) -> int:
    """0..high; no draw at all when high is 0 (a draw is a shrink step, a Spark run)."""
    return int(draw(_ints(0, high))) if high > 0 else 0


@st.composite
def _timed(draw: Any, shape: _Shape) -> _Timed:
    """Every part of one event's draws, each whatever the others are (so that setting
    one to its simplest moves no later draw); none for an option not asked for."""
    return _Timed(disorder=_upto(draw, shape.disorder),
                  late=chance(draw, shape.late),
                  behind=shape.late_by + 1 + _upto(draw, shape.disorder) if shape.late else 0,
                  value=None if shape.values is None else draw(shape.values),
                  again=chance(draw, shape.duplicates),
                  lag=_upto(draw, shape.step) if shape.duplicates else 0)


_DROPPED = 10
"""One story or partner in this many is drawn dropped: its first draw, 0, drops it.
hypothesis shrinks a span by setting all its draws to their simplest at once (one test
call per span) far more readily than by deleting the span's draws, which for a story
of ten draws it seldom manages: so the simplest story or partner is none at all."""


def _kept(draw: Any) -> bool:
    return _upto(draw, _DROPPED - 1) > 0


@st.composite
def _partner(draw: Any, shape: _Shape, timed: st.SearchStrategy[_Timed]
             ) -> tuple[int, _Timed] | None:
    """A right event of a story: its offset from the left event's time, and its draws;
    or None (dropped)."""
    if not _kept(draw):
        return None
    offset = draw(_ints(shape.lower, shape.upper))
    if shape.outside:
        outside = chance(draw, shape.outside)
        after = draw(st.booleans())
        beyond = 1 + _upto(draw, shape.upper - shape.lower)
        if outside:
            offset = shape.upper + beyond if after else shape.lower - beyond
    return offset, draw(timed)


@dataclass(frozen=True)
class _Story:
    kept: bool
    clock: int
    split: tuple[int, bool] | None
    key: str
    orphan: bool
    left: _Timed
    partners: tuple[tuple[int, _Timed], ...]


@st.composite
def _story(draw: Any, shape: _Shape, timed: st.SearchStrategy[_Timed],
           partners: st.SearchStrategy[list[tuple[int, _Timed] | None]]) -> _Story:
    """A left event and the right events that refer to it. Its clock is drawn as a
    position, not as a step from the story before: stories are a list of independent
    elements, which the shrinker drops one by one without moving the others."""
    kept = _kept(draw)
    clock = _upto(draw, shape.max_size * shape.step)
    split = (_upto(draw, shape.idle_ticks), chance(draw, shape.restarts))
    cut = shape.max_batches > 1 and draw(st.booleans())
    key = draw(shape.keys)
    # no left event, so the right events have no partner: drawn so that it shrinks to
    # "orphan" (fewer events; a right event that met another story's left event keeps
    # failing without its own), unless no orphans are asked for
    orphan = shape.orphans > 0 and _upto(draw, 999) < round(shape.orphans * 1000)
    left = draw(timed)
    return _Story(kept, clock, split if cut else None, key, orphan, left,
                  tuple(p for p in draw(partners) if p is not None))


@st.composite
def _joined_schedules(draw: Any, shape: _Shape) -> Schedule:
    drawn: list[_Drawn] = []
    first = (_upto(draw, shape.idle_ticks), chance(draw, shape.restarts))

    def add(into: str, key: str, time: int, arrival: int, timed: _Timed) -> None:
        value = timed.value if shape.values is not None else (
            "x" if into == shape.left else "y")
        made = Event(key, value, shape.start + shape.resolution * time)
        drawn.append(_Drawn(arrival, len(drawn), into, made))
        if timed.again:  # the same event again, a little later
            drawn.append(_Drawn(arrival + timed.lag, len(drawn), into, made))

    drawn_stories = draw(_stories_of(shape))
    stories = []
    missing = shape.min_size - sum(s.kept for s in drawn_stories)  # at least min_size
    for story in drawn_stories:
        if story.kept or missing > 0:
            missing -= not story.kept
            stories.append(story)
    splits: list[tuple[int, int, bool]] = []
    for story in sorted(stories, key=lambda s: s.clock):  # stable: drawn order on ties
        clock = story.clock
        base = clock - story.left.delay()  # the left event's time; it arrives at the clock
        if not story.orphan:
            add(shape.left, story.key, base, clock, story.left)
        for offset, timed in story.partners:  # right events arrive after their own time
            add(shape.right, story.key, base + offset, base + offset + timed.delay(), timed)
        if story.split is not None:
            splits.append((clock, *story.split))
    return _schedule(shape, drawn, first, splits)


@lru_cache(maxsize=64)
def _stories_of(shape: _Shape) -> st.SearchStrategy[list[_Story]]:
    """The list of stories, its strategies made once per shape."""
    timed = _timed(shape)
    partners = st.lists(_partner(shape, timed), max_size=shape.max_partners)
    return st.lists(_story(shape, timed, partners), min_size=shape.min_size,
                    max_size=shape.max_size)


def _schedule(shape: _Shape, drawn: list[_Drawn], first: tuple[int, bool],
              splits: list[tuple[int, int, bool]]) -> Schedule:
    """The events in arrival order, cut where the clock reached a story that drew a
    boundary (the first ``max_batches - 1`` of them), each chunk piped per input then
    triggered; empty chunks left out."""
    bounds = sorted(dict((c, (c, idle, restart)) for c, idle, restart in
                         splits[:shape.max_batches - 1]).values())
    chunks: list[tuple[list[_Drawn], int, bool]] = [([], *first)]
    for item in sorted(drawn, key=lambda d: (d.arrival, d.order)):
        while bounds and item.arrival >= bounds[0][0]:
            chunks.append(([], *bounds.pop(0)[1:]))
        chunks[-1][0].append(item)
    kept = [c for c in chunks if c[0]] or chunks[:1]
    steps: list[Step] = []
    for items, idle, restart in kept:
        for name in (shape.left, shape.right):
            events = tuple(d.event for d in items if d.input == name)
            if events:
                steps.append(Pipe(events, input=name))
        steps.extend(Tick() for _ in range(1 + idle))
        if restart:
            steps.append(Restart())
    steps.append(Drain())
    return Schedule(tuple(steps))


def joined_schedules(
    *,
    left: str = "left",
    right: str = "right",
    between: tuple[timedelta, timedelta] = (timedelta(0), timedelta(seconds=5)),
    keys: st.SearchStrategy[str] | None = None,
    values: st.SearchStrategy[Any] | None = None,
    start: datetime = DEFAULT_START_TIME,
    min_size: int = 0,
    max_size: int = 6,
    max_partners: int = 2,
    outside: float = 0.2,
    orphans: float = 0.1,
    resolution: timedelta = timedelta(seconds=1),
    max_step: timedelta | None = None,
    max_disorder: timedelta = timedelta(0),
    late: float = 0.0,
    late_by: timedelta | None = None,
    duplicates: float = 0.0,
    max_batches: int = 4,
    idle_ticks: int = 1,
    restarts: float = 0.0,
) -> st.SearchStrategy[Schedule]:
    """:class:`~pyspark_streamtest.testing.model.Schedule` values for a pipeline that
    joins the inputs ``left`` and ``right``: the right events refer to the left ones,
    with the same key and a time ``between`` them (``right.ts - left.ts`` from
    ``between[0]`` to ``between[1]``, as a join's ``right.ts BETWEEN left.ts + lower
    AND left.ts + upper``).

    **Stories.** Up to ``max_size`` stories (at least ``min_size``), each on a key
    drawn from ``keys`` (default ``"a"``, ``"b"``, ``"c"``): a left event and
    ``0..max_partners`` right events at its time plus an offset in ``between`` (an
    ``outside`` share: beyond it, by up to its width again, before or after). An
    ``orphans`` share of stories has no left event: their right events have no partner
    (they may still meet another story's left event of their key, as in production). A
    ``duplicates`` share of events comes twice, the copy up to ``max_step`` later.
    Values are drawn from ``values`` when given; by default none is drawn (a join reads
    keys and times; a draw would be one more step to shrink): left events carry
    ``"x"``, right events ``"y"``.

    **Time and arrival.** Each story's clock is drawn on its own, from ``start`` to
    ``max_size * max_step`` after it (steps of ``resolution``; ``max_step`` defaults to
    two steps), and the stories are taken in clock order; a left event arrives when the
    clock reaches its story, its time ``0..max_disorder`` before; a right event arrives
    ``0..max_disorder`` after its own time, so possibly before its left event. A
    ``late`` share of events, on either input, is more than ``late_by`` behind
    (default 10 s rounded up to a resolution; the watermark a batch drops rows by lags
    the clock by the delay and a batch or two, so set it to the delay plus the clock's
    progress over two batches to see rows dropped). Every event is at most
    ``max_disorder`` older than any event that arrived before it, unless late or a
    copy.

    **Batches.** The events, in arrival order, are cut into ``1..max_batches`` chunks:
    each story may draw a boundary where the clock reaches it (the first
    ``max_batches - 1`` count). A chunk is one ``Pipe`` per input holding events (the
    left input's first), a ``Tick`` (one micro-batch), ``0..idle_ticks`` more
    ``Tick`` triggers (the no-data batches Spark owes, such as those that emit an outer
    join's unmatched rows) and, with the ``restarts`` share, a ``Restart``; the
    schedule ends with a ``Drain``. No ``AdvanceWatermark``.

    **Shrinking.** A story is one element of a list, every part of it (its clock,
    times, arrival, boundary, partners) drawn inside it, and one in ten is drawn
    dropped, so that its simplest value is no story at all: hypothesis drops a story in
    one test call without moving the other stories' events or batches. Every other
    choice shrinks towards fewer events and the simple case: no partners, a story
    without its left event (when ``orphans`` asks for any), offsets nearest zero, in
    order, on time, no copies, one batch. Arguments that cannot be used raise
    :class:`~pyspark_streamtest.errors.InvalidArgumentError` (or
    :class:`~pyspark_streamtest.errors.InvalidArgumentTypeError`) naming the argument.
    """
    for name, value in (("left", left), ("right", right)):
        if not isinstance(value, str) or not value:
            raise InvalidArgumentTypeError(f"{name}={value!r} must be an input's name, a "
                                           "non-empty str")
    if left == right:
        raise InvalidArgumentError(f"left and right are both {left!r}; name two inputs")
    for option, strategy in (("keys", keys), ("values", values)):
        if strategy is not None and not isinstance(strategy, st.SearchStrategy):
            raise InvalidArgumentTypeError(
                f"{option}={strategy!r} must be a hypothesis strategy")
    for name, count, least in (("max_partners", max_partners, 0),
                               ("max_batches", max_batches, 1),
                               ("idle_ticks", idle_ticks, 0)):
        if isinstance(count, bool) or not isinstance(count, int) or count < least:
            raise InvalidArgumentError(f"{name}={count!r} must be an int >= {least}")
    if (not isinstance(between, tuple) or len(between) != 2
            or not all(isinstance(b, timedelta) for b in between)):
        raise InvalidArgumentTypeError(
            f"between={between!r} must be a (lower, upper) tuple of datetime.timedelta")
    lower, upper = between
    if lower > upper:
        raise InvalidArgumentError(
            f"between={between!r}: lower is above upper; give (lower, upper) with "
            "lower <= upper, as right.ts BETWEEN left.ts + lower AND left.ts + upper")
    try:
        step, disorder, behind = event_times(
            min_size, max_size, resolution, max_step, late_by, max_disorder, start,
            late=late, duplicates=duplicates, outside=outside, orphans=orphans,
            restarts=restarts)
    except InvalidArgument as error:
        raise InvalidArgumentError(str(error)) from None
    if lower % resolution or upper % resolution:
        raise InvalidArgumentError(
            f"between={between!r} must be multiples of resolution={resolution!r}")
    shape = _Shape(left, right, keys if keys is not None else event_keys(), values,
                   start, resolution, min_size, max_size, lower // resolution,
                   upper // resolution, max_partners, outside, orphans, step // resolution,
                   disorder // resolution, late, behind // resolution, duplicates,
                   max_batches, idle_ticks, restarts)
    return _joined_schedules(shape)
