"""Admission control as Spark's Kafka source does it: how many records of a backlog one
micro-batch takes.

Spark's ``KafkaMicroBatchStream`` answers ``latestOffset(start, readLimit)`` once per
trigger. With ``maxOffsetsPerTrigger = L`` it shares ``L`` over the topic-partitions
that have a backlog, in proportion to each one's backlog (``L * size / total``, rounded
down, or up when below 1 so that a small partition is never starved) and never past
the partition's end. With ``minOffsetsPerTrigger = M`` it skips a trigger while fewer
than ``M`` new records are available, unless ``maxTriggerDelay`` (default 15 minutes)
has passed since the last trigger it did not skip. The limits belong to one source, a
``readStream`` of one or several topics, and are shared by all of its partitions.

This module is the rule and nothing else (no Spark): the driver asks it, before every
trigger of a query, how many records of each partition's backlog to hand to the
query's memory streams. Differences from production, which the docs state:

* the time ``maxTriggerDelay`` is measured on is the driver's processing time (the
  trigger clock), where Spark's Kafka source reads the JVM's wall clock; with batches
  that take no time the two agree;
* ``Trigger.Once`` reads everything available, as Spark's does (``ReadAllAvailable``).
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Mapping
from dataclasses import dataclass
from typing import TypeVar

from ..errors import TopologyError, hide_our_frames

__tracebackhide__ = hide_our_frames

__all__ = ["DEFAULT_MAX_TRIGGER_DELAY_MS", "Admission", "ReadLimit", "rate_limit"]

DEFAULT_MAX_TRIGGER_DELAY_MS = 15 * 60 * 1000
"""Spark's default ``maxTriggerDelay``: ``15m``."""

P = TypeVar("P", bound=Hashable)


@dataclass(frozen=True)
class ReadLimit:
    """The read limits of one Kafka source (Spark's options of the same names).

    ``max_offsets`` is ``maxOffsetsPerTrigger``; ``min_offsets`` is
    ``minOffsetsPerTrigger``, with ``max_trigger_delay_ms`` its ``maxTriggerDelay``.
    ``source`` names the source the limit belongs to; the inputs of one source (the
    topics of one ``subscribe``) share it."""

    max_offsets: int | None = None
    min_offsets: int | None = None
    max_trigger_delay_ms: int = DEFAULT_MAX_TRIGGER_DELAY_MS
    source: str = ""

    def __post_init__(self) -> None:
        for name, value in (("maxOffsetsPerTrigger", self.max_offsets),
                            ("minOffsetsPerTrigger", self.min_offsets),
                            ("maxTriggerDelay", self.max_trigger_delay_ms)):
            if value is not None and (isinstance(value, bool) or not isinstance(value, int)):
                raise TopologyError(f"{name} must be an int, got {value!r}")
        if self.max_offsets is not None and self.max_offsets <= 0:
            # Spark takes it, and its Kafka source then admits nothing at any trigger (0)
            # or computes an end before the start (below 0): a query that never reads.
            raise TopologyError(
                f"maxOffsetsPerTrigger must be a positive number of records, got "
                f"{self.max_offsets}: Spark accepts it, and its Kafka source then reads no "
                "record at any trigger")

    @property
    def limits(self) -> bool:
        """Whether the source limits what one batch takes at all."""
        return self.max_offsets is not None or self.min_offsets is not None


def rate_limit(limit: int, backlog: Mapping[P, int]) -> dict[P, int]:
    """How many records of each partition's ``backlog`` a batch limited to ``limit``
    takes: Spark's ``KafkaMicroBatchStream.rateLimit``. A partition with a backlog gets
    ``limit * (size / total)`` (floating point, as Spark computes it), rounded down, or
    up when below 1, and at most its backlog; one without takes nothing."""
    sizes = {partition: size for partition, size in backlog.items() if size > 0}
    total = float(sum(sizes.values()))
    if total < 1:
        return {partition: 0 for partition in backlog}
    taken: dict[P, int] = {}
    for partition in backlog:
        size = sizes.get(partition)
        if size is None:
            taken[partition] = 0
            continue
        prorate = limit * (size / total)
        share = math.ceil(prorate) if prorate < 1 else math.floor(prorate)
        taken[partition] = min(size, share)
    return taken


class Admission:
    """One source's admission control in one query: the limit, and the time of the
    last trigger ``minOffsetsPerTrigger`` did not skip (Spark's ``lastTriggerMillis``).

    Spark's starts at 0 and is compared with the JVM's wall clock, so the first trigger
    after a query starts always passes the ``maxTriggerDelay`` test; here it starts
    unset, which passes the first trigger whatever the processing time."""

    def __init__(self, limit: ReadLimit) -> None:
        self.limit = limit
        self.last_trigger_ms: int | None = None

    def admit(self, backlog: Mapping[P, int], now_ms: int, *, read_all: bool = False
              ) -> dict[P, int]:
        """The records of each partition's ``backlog`` the trigger at ``now_ms`` takes
        (Spark's ``latestOffset(start, readLimit)``); all of them with ``read_all``
        (``Trigger.Once``'s ``ReadAllAvailable``)."""
        if read_all:
            return dict(backlog)
        limit = self.limit
        if limit.min_offsets is not None and self._delays(backlog, now_ms, limit.min_offsets):
            return {partition: 0 for partition in backlog}
        if limit.max_offsets is not None:
            return rate_limit(limit.max_offsets, backlog)
        return dict(backlog)

    def _delays(self, backlog: Mapping[P, int], now_ms: int, minimum: int) -> bool:
        """Spark's ``delayBatch``: skip this trigger while fewer than ``minimum`` new
        records wait and ``maxTriggerDelay`` has not passed since the last trigger."""
        last = self.last_trigger_ms
        if last is None or now_ms - last >= self.limit.max_trigger_delay_ms:
            self.last_trigger_ms = now_ms
            return False
        if sum(backlog.values()) < minimum:
            return True
        self.last_trigger_ms = now_ms
        return False
