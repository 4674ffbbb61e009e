"""Schedules as data: the records and actions a property test plays, and the batches
the model predicts. Small immutable values with readable ``str`` forms, so a shrunk
counterexample prints as the steps that fail (the face is
:mod:`pyspark_streamtest.testing.model`)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import date, datetime
from decimal import Decimal
from typing import Any, NoReturn

from ..errors import hide_our_frames

__tracebackhide__ = hide_our_frames

__all__ = [
    "AdvanceWatermark",
    "Drain",
    "Event",
    "EventRow",
    "ModelBatch",
    "Pipe",
    "Restart",
    "Schedule",
    "Step",
    "Tick",
]


# --- events and schedules ------------------------------------------------------------------------
class EventRow(dict[str, Any]):
    """The row an :class:`Event` carries when its value is a row (drawn by
    :func:`~pyspark_streamtest.testing.strategies.row_events`, or a dict given to
    ``Event``): a ``dict`` of column name to value that cannot be changed and can be
    hashed, so schedules holding rows compare, print and key
    :func:`~pyspark_streamtest.testing.strategies.run_topology`'s cache as others do.
    It pipes as the dict it is (a plain input's row, a Kafka ``json`` value).

    ``time_column`` names the column the event's time was written into (``None``: the
    row does not hold it, and the event's ``timestamp`` goes with the record).
    """

    __slots__ = ("time_column",)
    time_column: str | None

    def __init__(self, fields: Mapping[str, Any] | None = None, /, *,
                 time_column: str | None = None) -> None:
        super().__init__(fields or {})
        object.__setattr__(self, "time_column", time_column)

    def __hash__(self) -> int:  # type: ignore[override]
        return hash(_hashable(self))

    def __reduce__(self) -> tuple[Any, ...]:
        return (_event_row, (dict(self), self.time_column))

    def _refuse(self, *_: Any, **__: Any) -> NoReturn:
        raise TypeError("an EventRow cannot be changed; make a new one "
                        "(EventRow({**row, 'name': value}))")

    __setitem__ = __delitem__ = __ior__ = _refuse
    clear = pop = popitem = setdefault = update = _refuse

    def __setattr__(self, name: str, value: Any) -> NoReturn:
        self._refuse()

    def __str__(self) -> str:
        return _shown(self)


def _event_row(fields: dict[str, Any], time_column: str | None) -> EventRow:
    return EventRow(fields, time_column=time_column)


def _hashable(value: Any) -> Any:
    """``value`` with its dicts and lists made into tuples, so that it hashes."""
    if isinstance(value, Mapping):
        return tuple(sorted(((str(k), _hashable(v)) for k, v in value.items()),
                            key=lambda item: item[0]))
    if isinstance(value, (list, tuple)):
        return tuple(_hashable(v) for v in value)
    return value


def _shown(value: Any) -> str:
    """A value as a counterexample shows it: text quoted, times in ISO 8601, a row as
    ``{name=value, ...}``."""
    if isinstance(value, Mapping):
        return "{" + ", ".join(f"{k}={_shown(v)}" for k, v in value.items()) + "}"
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(map(_shown, value)) + "]"
    if isinstance(value, (datetime, date)):
        return value.isoformat()
    if isinstance(value, Decimal):
        return format(value, "f")
    return repr(value)


@dataclass(frozen=True)
class Event:
    """One record: ``key``, ``value`` (None is a tombstone on a table-like topic) and its
    event time ``timestamp`` (aware).

    ``value`` is a ``str`` for the events :func:`~pyspark_streamtest.testing.strategies.events`
    draws by default, an :class:`EventRow` for those of
    :func:`~pyspark_streamtest.testing.strategies.row_events`; any value a runner can
    pipe is allowed. A ``dict`` given is made an :class:`EventRow` (so the event can be
    hashed)."""

    key: str
    value: Any
    timestamp: datetime

    def __post_init__(self) -> None:
        if type(self.value) is dict:
            object.__setattr__(self, "value", EventRow(self.value))

    def __str__(self) -> str:
        value = "<tombstone>" if self.value is None else _shown(self.value)
        return f"{self.key}={value}@{self.timestamp:%H:%M:%S}"


@dataclass(frozen=True)
class Pipe:
    """Pipe these events (they wait for the next trigger) into ``input``: an input's
    name, or None for the runner's ``input=``."""

    events: tuple[Event, ...]
    input: str | None = None

    def __str__(self) -> str:
        into = "" if self.input is None else f"into {self.input}: "
        return "pipe " + into + ", ".join(map(str, self.events))


@dataclass(frozen=True)
class Tick:
    """Advance processing time by one trigger interval: one trigger fires."""

    def __str__(self) -> str:
        return "tick"


@dataclass(frozen=True)
class Drain:
    """``process_all_available()``: triggers at the same time until nothing is owed."""

    def __str__(self) -> str:
        return "drain"


@dataclass(frozen=True)
class Restart:
    """Stop the query and start it again from its checkpoint."""

    def __str__(self) -> str:
        return "restart"


@dataclass(frozen=True)
class AdvanceWatermark:
    """Drain, then move the watermark up to ``to`` if it is below, and drain again
    (``advance_watermark_to``; a ``to`` at or below the watermark only drains)."""

    to: datetime

    def __str__(self) -> str:
        return f"advance watermark to {self.to:%H:%M:%S}"


Step = Pipe | Tick | Drain | Restart | AdvanceWatermark


@dataclass(frozen=True)
class Schedule:
    """What a test does, step by step. Prints as one step per line (a readable
    counterexample when hypothesis shrinks one)."""

    steps: tuple[Step, ...]

    @property
    def events(self) -> tuple[Event, ...]:
        """Every event piped, in order (into whichever input)."""
        return tuple(e for s in self.steps if isinstance(s, Pipe) for e in s.events)

    @property
    def inputs(self) -> tuple[str | None, ...]:
        """The inputs the pipes name, in the order they first appear (None for pipes
        into the runner's ``input=``)."""
        return tuple(dict.fromkeys(s.input for s in self.steps if isinstance(s, Pipe)))

    def events_into(self, input: str | None) -> tuple[Event, ...]:
        """The events piped into ``input`` (None: by the pipes that name no input), in
        order."""
        return tuple(e for s in self.steps if isinstance(s, Pipe) and s.input == input
                     for e in s.events)

    def without_restarts(self) -> Schedule:
        return Schedule(tuple(s for s in self.steps if not isinstance(s, Restart)))

    def __str__(self) -> str:
        return "\n".join(f"  {i}: {s}" for i, s in enumerate(self.steps)) or "  (no steps)"


@dataclass(frozen=True)
class ModelBatch:
    """A batch the model predicts (times as aware datetimes; ``watermark`` None for an
    operator without a watermark)."""

    batch_id: int
    watermark: datetime | None
    watermark_after: datetime | None
    events: tuple[Event, ...]
    rows: tuple[Mapping[str, Any], ...]
    late: tuple[Event, ...] = ()
