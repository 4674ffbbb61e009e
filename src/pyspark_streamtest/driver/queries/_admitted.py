"""Records piped to a query's Kafka inputs that have read limits, held back from the
query's memory streams until a trigger admits them.

A memory stream gives a batch everything it holds, so the driver plays the Kafka
source's admission control itself: before each trigger of the query, it asks
:class:`~pyspark_streamtest.kafka.admission.Admission` how many records of each
topic-partition's backlog the trigger takes (Spark's rule), and hands exactly those to
the streams. The rest waits for the next trigger, as it waits in Kafka.
"""

from __future__ import annotations

import itertools
from collections import deque
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from ...core.records import TestRecord
from ...errors import hide_our_frames
from ...kafka.admission import Admission, ReadLimit

__tracebackhide__ = hide_our_frames

__all__ = ["Admitted", "AdmittedInputs"]

_Partition = tuple[str, int]
"""(input name, partition): one topic-partition of a source."""


@dataclass(frozen=True)
class Admitted:
    """What one trigger takes: per input, its JSON lines and each line's partition; and
    the records, in the order they were piped."""

    lines: Mapping[str, tuple[list[str], list[int]]]
    records: tuple[TestRecord, ...]


class AdmittedInputs:
    """The backlog of every input of one query with a read limit, per partition."""

    def __init__(self, read_limits: Sequence[tuple[str, ReadLimit]]) -> None:
        self._limits = dict(read_limits)
        self._admissions: dict[str, Admission] = {}
        self.restarted()
        self._queues: dict[_Partition, deque[tuple[int, str, TestRecord]]] = {}
        self._order = itertools.count()
        self._end: dict[_Partition, int] | None = None

    def __bool__(self) -> bool:
        return bool(self._limits)

    def restarted(self) -> None:
        """The query starts (again): Spark makes its sources anew, so no trigger has
        been let through yet (``lastTriggerMillis`` is 0)."""
        self._admissions = {limit.source: Admission(limit) for limit in self._limits.values()}

    def holds(self, input_name: str) -> bool:
        """Whether ``input_name``'s records wait here for admission."""
        return input_name in self._limits

    @property
    def waiting(self) -> int:
        """Records piped and not admitted yet (a backfill's end included: also those
        piped after it)."""
        return sum(map(len, self._queues.values()))

    def counts_every_trigger(self) -> bool:
        """Every trigger matters, also one after a trigger that ran nothing: a backlog
        waits, or ``minOffsetsPerTrigger`` counts time towards ``maxTriggerDelay``."""
        return self.readable > 0 or any(
            limit.min_offsets is not None for limit in self._limits.values())

    @property
    def readable(self) -> int:
        """Records a trigger could admit now (a backfill reads only up to its end)."""
        return sum(self._sizes().values())

    def enqueue(self, input_name: str, lines: Sequence[str],
                records: Sequence[TestRecord]) -> None:
        for line, record in zip(lines, records, strict=True):
            queue = self._queues.setdefault((input_name, record.partition or 0), deque())
            queue.append((next(self._order), line, record))

    def fix_end(self) -> None:
        """A backfill (``availableNow``) starts: it reads what waits now and no more
        (Spark fixes the end offsets when such a query starts)."""
        self._end = {partition: len(queue) for partition, queue in self._queues.items()}

    def release_end(self) -> None:
        """The backfill ended: what was piped since waits for the next run."""
        self._end = None

    def admit(self, now_ms: int, *, read_all: bool = False) -> Admitted:
        """Take what the trigger at ``now_ms`` admits from each source's backlog (all of
        it with ``read_all``, ``Trigger.Once``'s rule)."""
        sizes = self._sizes()
        taken: dict[_Partition, int] = {}
        for source, admission in self._admissions.items():
            backlog = {partition: sizes.get(partition, 0) for partition in self._partitions(source)}
            taken.update(admission.admit(backlog, now_ms, read_all=read_all))
        chosen: list[tuple[int, str, TestRecord, _Partition]] = []
        for partition, count in taken.items():
            queue = self._queues.get(partition)
            for _ in range(count):
                assert queue is not None
                order, line, record = queue.popleft()
                chosen.append((order, line, record, partition))
            if self._end is not None and count:
                self._end[partition] -= count
        chosen.sort(key=lambda item: item[0])
        lines: dict[str, tuple[list[str], list[int]]] = {}
        for _, line, _, (input_name, part) in chosen:
            of_input = lines.setdefault(input_name, ([], []))
            of_input[0].append(line)
            of_input[1].append(part)
        return Admitted(lines, tuple(record for _, _, record, _ in chosen))

    def _sizes(self) -> dict[_Partition, int]:
        if self._end is None:
            return {partition: len(queue) for partition, queue in self._queues.items()}
        return {partition: min(len(queue), self._end.get(partition, 0))
                for partition, queue in self._queues.items()}

    def _partitions(self, source: str) -> list[_Partition]:
        """The partitions of ``source`` that have had records (a partition never piped
        to has no backlog, and takes nothing)."""
        inputs = {name for name, limit in self._limits.items() if limit.source == source}
        return [partition for partition in self._queues if partition[0] in inputs]

    def carry(self, other: AdmittedInputs, kept: set[str]) -> None:
        """Go on with ``other``'s backlog of the inputs in ``kept`` (an upgrade in place:
        a topic's records outlive a deploy)."""
        for (input_name, part), queue in other._queues.items():
            if input_name in kept and input_name in self._limits:
                self._queues[(input_name, part)] = deque(queue)
        self._order = itertools.count(next(other._order))
