"""What one query's sources are handed, and when.

Records piped to an input wait until the query's next trigger; then each input's
records go to its memory stream as one offset (one block per source partition). The
records of a Kafka input with read limits wait in :class:`~._admitted.AdmittedInputs`
instead, and a trigger hands only what Spark's Kafka source would admit. Records handed
over and not yet consumed by a batch are *in flight*: the next data batch consumed them.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence

from ...core.records import TestRecord
from ...errors import hide_our_frames
from ..topology import BuiltOutput, Source
from ._admitted import AdmittedInputs
from ._piped import RecordBlock, RecordQueue

__tracebackhide__ = hide_our_frames

__all__ = ["SourceFeed"]


class SourceFeed:
    """The queued and in-flight records of one query's inputs.

    ``lines`` maps the identity of each record piped to its JSON line (records stay
    alive in the history, so identities are not reused); ``blocks`` are the bulk pipes
    whose records are built when first read."""

    def __init__(self, built: BuiltOutput, streams: Mapping[str, Source]) -> None:
        self._streams = streams
        names = [name for name, _ in built.streams]
        self._partitions = dict(built.input_partitions)
        self._pending: dict[str, list[str]] = {name: [] for name in names}
        self._pending_parts: dict[str, list[int]] = {name: [] for name in names}
        self._pending_empty: set[str] = set()
        self._pending_records = RecordQueue()
        self.admitted = AdmittedInputs(built.read_limits)
        self.in_flight = RecordQueue()
        self.blocks: list[RecordBlock] = []
        self.lines: dict[int, str] = {}

    def enqueue(self, input_name: str, lines: list[str], records: Sequence[TestRecord]) -> None:
        """Queue ``records`` (as ``lines``) for the next trigger."""
        if isinstance(records, RecordBlock):  # built when first read (no partitions)
            self._pending[input_name].extend(lines)
            self._pending_records.add(records)
            self._pending_parts[input_name].extend(itertools.repeat(0, len(records)))
            self.blocks.append(records)
            records.share_lines(self.lines)
            return
        self.lines.update((id(record), line) for record, line in zip(records, lines, strict=True))
        if self.admitted.holds(input_name):  # waits for a trigger to admit it
            self.admitted.enqueue(input_name, lines, records)
            return
        self._pending[input_name].extend(lines)
        self._pending_records.add(records)
        self._pending_parts[input_name].extend(r.partition or 0 for r in records)

    def enqueue_empty(self, input_name: str) -> None:
        """Queue an offset of zero rows for ``input_name`` (a data batch with no rows)."""
        self._pending_empty.add(input_name)

    def flush(self) -> None:
        """Hand everything queued to the sources (one offset each; an empty offset where
        only :meth:`enqueue_empty` was asked for). Inputs with read limits wait for
        :meth:`admit`."""
        for input_name, stream in self._streams.items():
            lines = self._pending[input_name]
            if lines:
                self._hand(input_name, stream, lines, self._pending_parts[input_name])
                self._pending[input_name] = []
                self._pending_parts[input_name] = []
            elif input_name in self._pending_empty:
                stream.add_empty_batch()
        self._pending_empty.clear()
        self.in_flight.extend(self._pending_records.take())

    def admit(self, now_ms: int, *, read_all: bool) -> None:
        """Hand the sources what the trigger about to run at ``now_ms`` admits of the
        inputs with read limits (Spark's Kafka source decides it at every trigger; all
        of it with ``read_all``)."""
        if self.admitted:
            admitted = self.admitted.admit(now_ms, read_all=read_all)
            for input_name, (lines, parts) in admitted.lines.items():
                self._hand(input_name, self._streams[input_name], lines, parts)
            self.in_flight.add(admitted.records)

    def _hand(self, input_name: str, stream: Source, lines: Sequence[str],
              parts: Sequence[int]) -> None:
        partitions = self._partitions.get(input_name, 1)
        if partitions > 1:  # one offset per partition: one input partition each
            blocks: list[list[str]] = [[] for _ in range(partitions)]
            for line, part in zip(lines, parts, strict=True):
                # (modulo: records queued before an upgrade that changed the count)
                blocks[part % partitions].append(line)
            stream.add_json_blocks(blocks)
        else:
            stream.add_json_lines(list(lines))

    @property
    def has_backlog(self) -> bool:
        """Records wait that a later trigger may admit (read limits held them back)."""
        return self.admitted.readable > 0

    @property
    def counts_every_trigger(self) -> bool:
        """Every trigger of the query matters (see :class:`AdmittedInputs`)."""
        return bool(self.admitted) and self.admitted.counts_every_trigger()

    def carry(self, other: SourceFeed, kept: set[str]) -> None:
        """Go on with ``other``'s records of the inputs in ``kept`` (an upgrade in place:
        a topic's records outlive a deploy)."""
        self.admitted.carry(other.admitted, kept)
        self.in_flight = other.in_flight.of_topics(kept)
        self.lines = dict(other.lines)
        self.blocks = list(other.blocks)
        for block in self.blocks:
            block.share_lines(self.lines)
        for name in kept & set(other._pending):
            if name in self._pending:
                self._pending[name] = list(other._pending[name])
                self._pending_parts[name] = list(other._pending_parts[name])
        self._pending_records = other._pending_records.of_topics(kept)
        self._pending_empty = other._pending_empty & kept
