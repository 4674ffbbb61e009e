"""Schedules as data: the records and actions a property test plays, and the batches
the model predicts. Small immutable values with readable ``str`` forms, so a shrunk
counterexample prints as the steps that fail (the face is
:mod:`pyspark_streamtest.testing.model`)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from ..errors import hide_our_frames

__tracebackhide__ = hide_our_frames

__all__ = [
    "AdvanceWatermark",
    "Drain",
    "Event",
    "ModelBatch",
    "Pipe",
    "Restart",
    "Schedule",
    "Step",
    "Tick",
]


# --- events and schedules ------------------------------------------------------------------------
@dataclass(frozen=True)
class Event:
    """One record: ``key``, ``value`` (None is a tombstone on a table-like topic) and its
    event time ``timestamp`` (aware)."""

    key: str
    value: str | None
    timestamp: datetime

    def __str__(self) -> str:
        value = "<tombstone>" if self.value is None else repr(self.value)
        return f"{self.key}={value}@{self.timestamp:%H:%M:%S}"


@dataclass(frozen=True)
class Pipe:
    """Pipe these events (they wait for the next trigger)."""

    events: tuple[Event, ...]

    def __str__(self) -> str:
        return "pipe " + ", ".join(map(str, self.events))


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
        """Every event piped, in order."""
        return tuple(e for s in self.steps if isinstance(s, Pipe) for e in s.events)

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
