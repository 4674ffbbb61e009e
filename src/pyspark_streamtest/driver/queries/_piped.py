"""Records piped to a query, kept in the chunks they were piped in.

A bulk pipe of plain tuples (:mod:`pyspark_streamtest.core.columns`) hands its rows to
the sources as JSON lines at once, but builds its :class:`TestRecord` values only when
something reads them: a batch's ``input_records``, late-record evaluation, a retry after
a failure. A 100k-row batch that nobody inspects then costs no records at all. The
records built are the ones the per-row path builds, and built once: every reader gets
the same objects (the driver finds a record's JSON line by its identity).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from itertools import chain
from typing import Any, overload

from ...core.records import LazyRecords, TestRecord
from ...errors import hide_our_frames

__tracebackhide__ = hide_our_frames


class RecordBlock(Sequence[TestRecord]):
    """The records of one bulk pipe of whole tuples to a plain input, built on first
    read: ``TestRecord(value=dict(zip(names, row)), timestamp=row[at], topic=topic)``
    (``timestamp`` None without an event-time column)."""

    __slots__ = ("_at", "_line_maps", "_names", "_records", "_rows", "_topic", "lines")

    def __init__(self, rows: list[tuple[Any, ...]], names: Sequence[str], at: int | None,
                 topic: str, lines: list[str]) -> None:
        self._rows = rows
        self._names = tuple(names)
        self._at = at
        self._topic = topic
        self.lines = lines
        self._records: list[TestRecord] | None = None
        self._line_maps: list[dict[int, str]] = []

    @property
    def topic(self) -> str:
        return self._topic

    def share_lines(self, line_map: dict[int, str]) -> None:
        """Keep ``line_map`` (id of a record -> its JSON line) up to date with this
        block's records: now if they exist, else when they are built."""
        if self._records is None:
            self._line_maps.append(line_map)
        else:
            self._fill(line_map)

    def _fill(self, line_map: dict[int, str]) -> None:
        assert self._records is not None
        line_map.update(zip(map(id, self._records), self.lines, strict=True))

    def records(self) -> list[TestRecord]:
        """The records, built on the first call."""
        if self._records is None:
            names, at, topic = self._names, self._at, self._topic
            if at is None:
                self._records = [TestRecord(value=dict(zip(names, row)), topic=topic)  # noqa: B905
                                 for row in self._rows]
            else:
                self._records = [TestRecord(value=dict(zip(names, row)),  # noqa: B905
                                            timestamp=row[at], topic=topic)
                                 for row in self._rows]
            for line_map in self._line_maps:
                self._fill(line_map)
            self._line_maps = []
        return self._records

    def __len__(self) -> int:
        return len(self._rows)

    @overload
    def __getitem__(self, index: int) -> TestRecord: ...
    @overload
    def __getitem__(self, index: slice) -> list[TestRecord]: ...
    def __getitem__(self, index: int | slice) -> TestRecord | list[TestRecord]:
        return self.records()[index]

    def __iter__(self) -> Iterator[TestRecord]:
        return iter(self.records())


class RecordQueue(LazyRecords):
    """Records in the order they were piped, as chunks: lists of records or
    :class:`RecordBlock` values still to be built. A queue taken for a batch is that
    batch's :class:`LazyRecords`."""

    __slots__ = ("_chunks", "_count")

    def __init__(self, chunks: Sequence[Sequence[TestRecord]] = ()) -> None:
        self._chunks: list[Sequence[TestRecord]] = [chunk for chunk in chunks if chunk]
        self._count = sum(map(len, self._chunks))

    def add(self, records: Sequence[TestRecord]) -> None:
        if records:
            self._chunks.append(records)
            self._count += len(records)

    def extend(self, other: RecordQueue) -> None:
        self._chunks.extend(other._chunks)
        self._count += other._count

    def __len__(self) -> int:
        return self._count

    def __iter__(self) -> Iterator[TestRecord]:
        return chain.from_iterable(self._chunks)

    def take(self) -> RecordQueue:
        """All the records, leaving this queue empty."""
        taken = RecordQueue()
        taken._chunks, taken._count = self._chunks, self._count
        self._chunks, self._count = [], 0
        return taken

    def drop_first(self, count: int) -> None:
        """Forget the first ``count`` records."""
        rest = list(self)[count:]
        self._chunks, self._count = ([rest] if rest else []), len(rest)

    def of_topics(self, topics: set[str]) -> RecordQueue:
        """A new queue of the records piped to ``topics``."""
        kept: list[Sequence[TestRecord]] = []
        for chunk in self._chunks:
            if isinstance(chunk, RecordBlock):
                if chunk.topic in topics:
                    kept.append(chunk)
            else:
                kept.append([record for record in chunk if record.topic in topics])
        return RecordQueue(kept)

    def lines_of(self, topic: str, line_map: dict[int, str]) -> list[str]:
        """The JSON lines of the records piped to ``topic``, in order."""
        lines: list[str] = []
        for chunk in self._chunks:
            if isinstance(chunk, RecordBlock):
                if chunk.topic == topic:
                    lines.extend(chunk.lines)
            else:
                lines.extend(line_map[id(r)] for r in chunk
                             if r.topic == topic and id(r) in line_map)
        return lines

    def records(self) -> tuple[TestRecord, ...]:
        """The records, built where they were not (what a batch's ``input_records``
        reads: a queue taken for a batch is not changed afterwards)."""
        return tuple(chain.from_iterable(self._chunks))
