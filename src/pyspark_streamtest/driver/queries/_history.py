"""The driver's record of what ran: every batch in order, and every topic's queue."""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterable
from functools import partial

from ...core.records import (
    LAZY_FIELDS,
    BatchRecord,
    LateRecord,
    Lazy,
    TestRecord,
    raw_field,
    settle,
)
from ...errors import hide_our_frames

__tracebackhide__ = hide_our_frames

__all__ = ["History"]


class History:
    """Every batch the driver's queries ran, oldest first (kept after close and across
    restarts; each attempt of a batch the test crashed too, marked), and for each topic
    written the records not read yet.

    A topic's queue exists from the first record written to it (a plain output's from
    the start). Reading a record through any handle of a topic removes it from the
    queue; the batches keep it."""

    def __init__(self, plain_outputs: Iterable[str],
                 fill: Callable[[], Callable[[str, str], None] | None] | None = None,
                 ) -> None:
        """With ``fill`` (a weak reference to the driver's filler: ``fill()`` gives it,
        or None once the driver is gone), each batch's fields of ``LAZY_FIELDS`` not
        known when it ran are evaluated on their first read: ``filler(field, output)``
        evaluates that field for ``output``'s batches."""
        self._fill_ref = fill
        self._batches: list[BatchRecord] = []
        self._queues: dict[str, deque[TestRecord]] = {name: deque() for name in plain_outputs}
        self._written: dict[str, list[TestRecord]] = {}

    def add_outputs(self, plain_outputs: Iterable[str]) -> None:
        """Queues for plain outputs a new version of the topology adds."""
        for name in plain_outputs:
            self._queues.setdefault(name, deque())

    def absorb(self, batches: Iterable[BatchRecord]) -> None:
        """Record ``batches`` and queue every record they wrote, per topic."""
        for batch in batches:
            for name in LAZY_FIELDS if self._fill_ref is not None else ():
                if raw_field(batch, name) is None:
                    settle(batch, name, Lazy(partial(self._fill, name, batch.output)))
            self._batches.append(batch)
            for record in batch.output_records:
                topic = record.topic
                queue = self._queues.get(topic)
                if queue is None:
                    queue = self._queues[topic] = deque()
                queue.append(record)
                self._written.setdefault(topic, []).append(record)

    def absorb_written(self, records: Iterable[TestRecord]) -> None:
        """Queue records no batch wrote (a ``from_app`` job's Kafka writes in ``main()``)."""
        for record in records:
            self._queues.setdefault(record.topic, deque()).append(record)
            self._written.setdefault(record.topic, []).append(record)

    def _fill(self, name: str, output: str) -> None:
        filler = self._fill_ref() if self._fill_ref is not None else None
        if filler is not None:
            filler(name, output)

    @property
    def batches(self) -> tuple[BatchRecord, ...]:
        return tuple(self._batches)

    def __len__(self) -> int:
        return len(self._batches)

    def of_output(self, output: str) -> list[BatchRecord]:
        """The batches of ``output``'s query Spark committed, oldest first (an attempt
        the test crashed is in :attr:`batches` only)."""
        return [b for b in self._batches if b.output == output and b.crashed is None]

    def late_records(self, output: str) -> list[LateRecord]:
        """The records ``output``'s query dropped as late, oldest first."""
        return [late for batch in self.of_output(output) for late in batch.late_records or ()]

    def replace(self, old: BatchRecord, new: BatchRecord) -> None:
        """Put ``new`` in the place of batch ``old`` (the same batch, more known of it)."""
        index = next(i for i, batch in enumerate(self._batches) if batch is old)
        self._batches[index] = new

    def queue(self, topic: str) -> deque[TestRecord] | None:
        """The unread records of ``topic``; None if nothing was ever written to it (and it
        is not a plain output)."""
        return self._queues.get(topic)

    def written(self, topic: str) -> list[TestRecord]:
        """Every record written to ``topic`` so far, read or not, oldest first."""
        return list(self._written.get(topic, ()))

    def written_count(self, topic: str) -> int:
        return len(self._written.get(topic, ()))

    def produced_topic_names(self) -> set[str]:
        """Every topic (or plain output) a batch has written a record to."""
        return {name for name, records in self._written.items() if records}
