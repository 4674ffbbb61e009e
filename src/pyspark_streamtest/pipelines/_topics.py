"""What each update appended to a streaming table or a file sink, read like a Kafka
output topic (:class:`PipelineOutputTopic`)."""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from typing import Any

from ..core.records import TestRecord
from ..errors import InvalidArgumentTypeError, NoSuchRecordError, hide_our_frames

__tracebackhide__ = hide_our_frames

__all__ = ["PipelineOutputTopic", "TopicQueue"]


class TopicQueue:
    """The records appended to one table since the driver started following it, with
    the one queue its handles share."""

    def __init__(self, table: str) -> None:
        self.table = table
        self.records: deque[TestRecord] = deque()
        self.batches: set[int] = set()
        """The commit-log batch ids already turned into records."""

    def reset(self) -> None:
        """The table was refreshed from nothing (a full refresh): its batch ids start
        again; records already queued stay."""
        self.batches = set()


class PipelineOutputTopic:
    """Reads the rows each update appended to one streaming table (or one sink of a
    file format with a path), oldest first; reading removes them, as Kafka Streams'
    ``TestOutputTopic`` does.

    A record's ``value`` is the row as a dict (structs as dicts, timestamps aware UTC),
    ``topic`` the table, ``batch_id`` the table's commit-log batch (the flow's batch id
    when one flow writes the table). Records are those of the batches committed after
    the handle was made, in batch order, each batch's rows in file order. A full
    refresh starts the table again: its new rows come as new records, and nothing is
    retracted. ``processing_time`` is None: the engine's batches run on its own clock.
    All handles of one table share one queue.
    """

    __test__ = False  # not a pytest test class

    def __init__(self) -> None:
        raise InvalidArgumentTypeError("use PipelineTestDriver.create_output_topic(name)")

    @classmethod
    def _create(cls, queue: TopicQueue, check_open: Callable[[], None]) -> PipelineOutputTopic:
        topic = object.__new__(cls)
        topic._queue = queue
        topic._check_open = check_open
        return topic

    _queue: TopicQueue
    _check_open: Callable[[], None]

    @property
    def name(self) -> str:
        """The table's name."""
        return self._queue.table

    def is_empty(self) -> bool:
        """Whether every record appended so far was read."""
        self._check_open()
        return not self._queue.records

    def get_queue_size(self) -> int:
        """How many records are left to read."""
        self._check_open()
        return len(self._queue.records)

    def read_record(self) -> TestRecord:
        """The oldest unread record, removed; :class:`NoSuchRecordError` when none is
        left."""
        self._check_open()
        if not self._queue.records:
            raise NoSuchRecordError(
                f"table {self.name!r}: no record left to read (run an update that appends "
                "to it first; read_values_to_list() reads what there is)")
        return self._queue.records.popleft()

    def read_value(self) -> Any:
        """The value of :meth:`read_record`."""
        return self.read_record().value

    def read_records_to_list(self) -> list[TestRecord]:
        """Every unread record, removed."""
        self._check_open()
        records = list(self._queue.records)
        self._queue.records.clear()
        return records

    def read_values_to_list(self) -> list[Any]:
        """The values of :meth:`read_records_to_list`."""
        return [record.value for record in self.read_records_to_list()]

    def __repr__(self) -> str:
        return f"PipelineOutputTopic({self.name!r}, {len(self._queue.records)} unread)"
