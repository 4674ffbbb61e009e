"""Hypothesis strategies for streaming tests, the runners for what they generate, and
settings that suit Spark.

Builders follow hypothesis' conventions: nouns, keyword-only options, arguments checked
up front (``InvalidArgument``; the schema-driven :func:`rows` and :func:`row_events`,
and :func:`joined_schedules`, raise
:class:`~pyspark_streamtest.errors.InvalidArgumentError` and
:class:`~pyspark_streamtest.errors.InvalidArgumentTypeError`), sub-strategies as
parameters. Every random choice is drawn so that it *shrinks* towards the simple case:
fewer events, in order, on time, no duplicates, no tombstones, plain values, fewer
batches, no restarts. A failing example therefore shrinks to a few records in a few
batches, printed one step per line by :class:`~pyspark_streamtest.testing.model.Schedule`.

:func:`events` draws one shape of record (string key and value); :func:`row_events`
draws rows of your own schema (:func:`rows` one row). :func:`schedules` plays them into
one input or, given a mapping, several; :func:`joined_schedules` draws a join's two
inputs, the second's keys and times from the first's. One runner pipes them:
:func:`run_schedule` on a driver you made, :func:`run_topology` and :func:`run_app` on
a fresh driver of a topology or of a production job (``from_app``), with a cache.

>>> from hypothesis import given
>>> from pyspark_streamtest.testing import strategies as sst
>>> @given(sst.schedules(sst.events(max_disorder=timedelta(seconds=3)), max_batches=4))
... def test_counts(schedule): ...
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from datetime import datetime, timedelta, timezone
from typing import TYPE_CHECKING, Any

from hypothesis import strategies as st
from hypothesis.errors import InvalidArgument
from pyspark.sql import types as T

from ..core.time import DEFAULT_START_TIME
from ..errors import InvalidArgumentError, InvalidArgumentTypeError, hide_our_frames
from ._draws import chance, check_duration, check_fraction, event_keys, event_times
from ._joined import joined_schedules
from ._rows import Target, check_fields, check_row_options, deferred_for, rows
from ._runs import clear_run_cache, run_app, run_schedule, run_topology, spark_settings
from .schedule import (
    AdvanceWatermark,
    Drain,
    Event,
    EventRow,
    Pipe,
    Restart,
    Schedule,
    Step,
    Tick,
)

if TYPE_CHECKING:
    from pyspark.sql import SparkSession
    from pyspark.sql.types import StructType

__tracebackhide__ = hide_our_frames

__all__ = [
    "AdvanceWatermark",
    "Drain",
    "Event",
    "EventRow",
    "Pipe",
    "Restart",
    "Schedule",
    "Tick",
    "clear_run_cache",
    "event_keys",
    "events",
    "joined_schedules",
    "row_events",
    "rows",
    "run_app",
    "run_schedule",
    "run_topology",
    "schedules",
    "spark_settings",
]


@st.composite
def _events(draw: Any, keys: st.SearchStrategy[str], values: st.SearchStrategy[Any],
            start: datetime, min_size: int, max_size: int, resolution: timedelta,
            max_step: timedelta, max_disorder: timedelta, late: float, late_by: timedelta,
            duplicates: float, tombstones: float, key_skew: float,
            finish: Callable[[str, Any, datetime], Any] | None = None) -> list[Event]:
    steps = max_step // resolution
    disorder = max_disorder // resolution
    hot = draw(keys)
    clock = 0  # in resolutions since start
    out: list[Event] = []
    # "one more?" before each event, as hypothesis' own lists do: deleting an event
    # deletes its draws, so examples shrink one event at a time
    while len(out) < max_size and (len(out) < min_size or draw(st.booleans())):
        if out and duplicates and chance(draw, duplicates):
            out.append(out[draw(st.integers(0, len(out) - 1))])  # an exact copy, again
            continue
        # The clock's new position is drawn as a position, not as a step: when the
        # shrinker deletes an event, the events after it keep their times wherever the
        # step bound still allows (a drawn step would move all of them). It shrinks to
        # the bound nearest zero: the clock not moving.
        clock = draw(st.integers(clock, clock + steps))
        when = start + resolution * clock - resolution * -draw(st.integers(-disorder, 0))
        if late and chance(draw, late):
            when = (start + resolution * clock - late_by
                    - resolution * draw(st.integers(1, max(1, disorder + 1))))
        key = hot if key_skew and chance(draw, key_skew) else draw(keys)
        value = None if tombstones and chance(draw, tombstones) else draw(values)
        if finish is not None and value is not None:
            value = finish(key, value, when)
        out.append(Event(key, value, when))
    return out


def events(
    *,
    keys: st.SearchStrategy[str] | None = None,
    values: st.SearchStrategy[Any] | None = None,
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
    ``values`` default to ``"a".."c"`` and ``"x".."z"`` (for rows drawn from a schema
    as values, see :func:`row_events`).
    """
    step, disorder, behind = event_times(
        min_size, max_size, resolution, max_step, late_by, max_disorder, start, late=late,
        duplicates=duplicates, tombstones=tombstones, key_skew=key_skew)
    return _events(keys if keys is not None else event_keys(),
                   values if values is not None else st.sampled_from(["x", "y", "z"]),
                   start, min_size, max_size, resolution, step, disorder, late, behind,
                   duplicates, tombstones, key_skew)


@st.composite
def _schedules(draw: Any, sources: tuple[tuple[str | None, st.SearchStrategy[list[Event]]], ...],
               max_batches: int, idle_ticks: int, restarts: float,
               watermark_advances: float, advance_by: timedelta) -> Schedule:
    piped = _interleaved(draw, [(name, draw(source)) for name, source in sources])
    parts: list[list[tuple[str | None, Event]]] = [[]]
    for item in piped:
        # a new batch before this event? (shrinks to "no": fewer, bigger batches)
        if parts[-1] and len(parts) < max_batches and draw(st.booleans()):
            parts.append([])
        parts[-1].append(item)
    steps: list[Step] = []
    for chunk in parts:
        for into in dict.fromkeys(name for name, _ in chunk):  # one pipe per input
            steps.append(Pipe(tuple(e for name, e in chunk if name == into), input=into))
        steps.append(Tick())
        steps.extend(Tick() for _ in range(draw(st.integers(0, idle_ticks))))
        if restarts and chance(draw, restarts):
            steps.append(Restart())
        if watermark_advances and chunk and chance(draw, watermark_advances):
            newest = max(e.timestamp for _, e in chunk)
            steps.append(AdvanceWatermark(newest + advance_by * draw(st.integers(0, 3))))
    steps.append(Drain())
    return Schedule(tuple(steps))


def _interleaved(draw: Any, streams: list[tuple[str | None, list[Event]]]
                 ) -> list[tuple[str | None, Event]]:
    """The events of every input in one arrival order, each input's own order kept: the
    next event comes from an input drawn among those with events left (shrinks to the
    first: each input's events after the previous input's)."""
    if len(streams) == 1:
        name, only = streams[0]
        return [(name, e) for e in only]
    left = [(name, list(reversed(stream))) for name, stream in streams if stream]
    out: list[tuple[str | None, Event]] = []
    while left:
        index = draw(st.integers(0, len(left) - 1)) if len(left) > 1 else 0
        name, stream = left[index]
        out.append((name, stream.pop()))
        if not stream:
            del left[index]
    return out


def schedules(
    events_strategy: st.SearchStrategy[list[Event]]
    | Mapping[str, st.SearchStrategy[list[Event]]] | None = None,
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
    ``0..3 * advance_by``); a final drain. Splits shrink towards one batch.

    For a pipeline with several inputs, ``events_strategy`` is a mapping of input name
    to its events strategy: each input's events keep their order, the inputs' events
    are interleaved (shrinking towards one input's after the other's), and a chunk
    becomes one ``Pipe(events, input=name)`` per input it holds, all before the chunk's
    trigger (so in one micro-batch)."""
    if not isinstance(max_batches, int) or max_batches < 1:
        raise InvalidArgument(f"max_batches={max_batches!r} must be an int >= 1")
    if not isinstance(idle_ticks, int) or idle_ticks < 0:
        raise InvalidArgument(f"idle_ticks={idle_ticks!r} must be an int >= 0")
    check_fraction("restarts", restarts)
    check_fraction("watermark_advances", watermark_advances)
    check_duration("advance_by", advance_by)
    sources: tuple[tuple[str | None, st.SearchStrategy[list[Event]]], ...]
    if events_strategy is None:
        sources = ((None, events()),)
    elif isinstance(events_strategy, Mapping):
        if not events_strategy:
            raise InvalidArgument("events_strategy={} names no input; give at least one")
        for name, source in events_strategy.items():
            if not isinstance(name, str) or not name:
                raise InvalidArgument(f"input name {name!r} must be a non-empty str")
            if not isinstance(source, st.SearchStrategy):
                raise InvalidArgument(
                    f"events_strategy[{name!r}]={source!r} must be a strategy of event "
                    "lists, such as events(...) or row_events(...)")
        sources = tuple(events_strategy.items())
    else:
        sources = ((None, events_strategy),)
    return _schedules(sources, max_batches, idle_ticks, restarts, watermark_advances,
                      advance_by)


def row_events(
    schema: str | StructType,
    *,
    spark: SparkSession | None = None,
    time_column: str | None = None,
    key_column: str | None = None,
    keys: st.SearchStrategy[str] | None = None,
    target: Target = "input",
    nulls: float = 0.1,
    edge_values: float = 0.1,
    max_collection_size: int = 3,
    fields: Mapping[str, st.SearchStrategy[Any]] | None = None,
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
    """Lists of :class:`~pyspark_streamtest.testing.model.Event` whose values are rows
    of ``schema`` (an :class:`~pyspark_streamtest.testing.model.EventRow`, drawn as
    :func:`rows` draws them), in arrival order, with the event times, disorder, late
    events, duplicates, tombstones (value None) and key skew of :func:`events` (the
    same options, checked the same way).

    **Event time.** Each event's time is written into the row's ``time_column`` (a
    TIMESTAMP column, or TIMESTAMP_NTZ: then the UTC wall time, naive), so a pipeline
    that reads event time from the data sees it: a plain input pipes the row as it is,
    and a Kafka ``json`` value carries it. Without ``time_column`` the time is the
    record's only: a Kafka record's ``timestamp``, or a plain input's
    ``timestamp_column``. Every runner also gives a Kafka record the event's time as
    its timestamp.

    **Keys.** Each event's key is drawn from ``keys`` (default :func:`event_keys`:
    ``"a"``, ``"b"``, ``"c"``, so that events share keys) and, with ``key_column`` (a
    STRING column), written into the row too. A runner sends it as a Kafka record's key.

    ``target``, ``nulls``, ``edge_values``, ``max_collection_size``, ``fields`` and
    ``spark`` are :func:`rows`' (``fields`` cannot name the time or key column, which
    the events write). A DDL ``schema`` is parsed by Spark when first drawn from.
    Arguments that cannot be used raise
    :class:`~pyspark_streamtest.errors.InvalidArgumentError` (or
    :class:`~pyspark_streamtest.errors.InvalidArgumentTypeError`).
    """
    try:
        step, disorder, behind = event_times(
            min_size, max_size, resolution, max_step, late_by, max_disorder, start,
            late=late, duplicates=duplicates, tombstones=tombstones, key_skew=key_skew)
    except InvalidArgument as error:
        raise InvalidArgumentError(str(error)) from None
    for name, column in (("time_column", time_column), ("key_column", key_column)):
        if column is not None and not isinstance(column, str):
            raise InvalidArgumentTypeError(f"{name}={column!r} must be a column name or None")
    if time_column is not None and time_column == key_column:
        raise InvalidArgumentError(
            f"time_column and key_column are both {time_column!r}; a column holds one")
    if keys is not None and not isinstance(keys, st.SearchStrategy):
        raise InvalidArgumentTypeError(f"keys={keys!r} must be a strategy of str keys")
    written = [c for c in (time_column, key_column) if c is not None]
    if isinstance(fields, Mapping) and any(c in fields for c in written):
        raise InvalidArgumentError(
            f"fields names {', '.join(repr(c) for c in written if c in fields)}, which "
            "the events write (time_column, key_column); leave it out of fields")
    check_row_options(target, nulls, edge_values, max_collection_size, fields)

    def build(struct: StructType) -> st.SearchStrategy[list[Event]]:
        naive = _check_columns(struct, time_column, key_column)
        placeholders = {c: st.none() for c in written}
        values = rows(struct, target=target, nulls=nulls, edge_values=edge_values,
                      max_collection_size=max_collection_size,
                      fields={**check_fields(struct, fields), **placeholders})

        def finish(key: str, row: Any, when: datetime) -> EventRow:
            written_row = dict(row)
            if time_column is not None:
                utc = when.astimezone(timezone.utc)
                written_row[time_column] = utc.replace(tzinfo=None) if naive else utc
            if key_column is not None:
                written_row[key_column] = key
            return EventRow(written_row, time_column=time_column)

        return _events(keys if keys is not None else event_keys(), values, start,
                       min_size, max_size, resolution, step, disorder, late, behind,
                       duplicates, tombstones, key_skew, finish)

    return deferred_for(schema, spark, build)


def _check_columns(struct: StructType, time_column: str | None,
                   key_column: str | None) -> bool:
    """Checks the time and key columns against the schema; True when the time column is
    a TIMESTAMP_NTZ."""
    types = {f.name: f.dataType for f in struct.fields}
    for name, column, kinds, wanted in (
            ("time_column", time_column, (T.TimestampType, T.TimestampNTZType),
             "a TIMESTAMP or TIMESTAMP_NTZ"),
            ("key_column", key_column, (T.StringType,), "a STRING")):
        if column is None:
            continue
        if column not in types:
            raise InvalidArgumentError(
                f"{name}={column!r} is not a top-level column of the schema "
                f"({struct.simpleString()})")
        if not isinstance(types[column], kinds):
            raise InvalidArgumentError(
                f"{name}={column!r} is a {types[column].simpleString().upper()} column; "
                f"it must be {wanted} column")
    return time_column is not None and isinstance(types[time_column], T.TimestampNTZType)
