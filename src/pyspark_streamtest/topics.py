"""Topic handles: pipe records into inputs, read what outputs emitted.

Handles are made by the driver (:meth:`TopologyTestDriver.create_input_topic`,
:meth:`TopologyTestDriver.create_output_topic`) and belong to it.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable, Mapping
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from ._time import duration_ms, require_aware
from ._values import to_json_line
from .errors import NoSuchRecordError, SchemaMismatchError, StreamTestError
from .records import TestRecord

if TYPE_CHECKING:
    from .driver import TopologyTestDriver
    from .topology import _InputSpec

__all__ = ["TestInputTopic", "TestOutputTopic"]


class TestInputTopic:
    """Pipes records into one input of the driver's topology.

    Piping only buffers: the records reach Spark at the driver's next trigger
    (:meth:`TopologyTestDriver.advance_wall_clock` or
    :meth:`TopologyTestDriver.process_all_available`), all in the same micro-batch.
    Every query that reads this input gets the same records.

    **Record time.** For an input declared with ``timestamp_column``, a record's event
    time is that column's value. When the value lacks it (missing key, or None), it is
    filled with the explicit ``timestamp=``, or else with this handle's current record
    time, which then moves by ``auto_advance``. Record time is event time only: it
    never moves processing time (the driver's clock) or the watermark by itself.
    """

    __test__ = False  # not a pytest test class

    def __init__(self) -> None:
        raise TypeError("use TopologyTestDriver.create_input_topic(name)")

    @classmethod
    def _create(
        cls,
        driver: TopologyTestDriver,
        spec: _InputSpec,
        start: datetime,
        auto_advance: timedelta,
    ) -> TestInputTopic:
        topic = cls.__new__(cls)
        topic._driver = driver
        topic._spec = spec
        topic._time = start
        topic._advance = timedelta(milliseconds=duration_ms(auto_advance, "auto_advance"))
        return topic

    _driver: TopologyTestDriver
    _spec: _InputSpec
    _time: datetime
    _advance: timedelta

    @property
    def name(self) -> str:
        return self._spec.name

    @property
    def current_time(self) -> datetime:
        """The record time the next record without a timestamp gets."""
        return self._time

    def advance_time(self, delta: timedelta) -> None:
        """Move this handle's record time forward by ``delta`` (not processing time, not
        the watermark)."""
        self._driver._check_open()
        self._time = self._time + timedelta(milliseconds=duration_ms(delta, "delta"))

    def pipe_input(self, value: Any, *, timestamp: datetime | None = None) -> None:
        """Queue one record.

        ``value`` is a dict by field name (missing nullable fields are null), a Row, or
        a tuple of all fields in schema order (or of all but the ``timestamp_column``).
        ``timestamp`` sets the event time when the value lacks it (see the class doc).
        """
        self._driver._check_open()
        line, record, new_time = self._encode(value, timestamp, self._time)
        self._time = new_time
        self._driver._pipe(self._spec.name, [line], [record])

    def pipe_value_list(
        self,
        values: Iterable[Any],
        *,
        start_timestamp: datetime | None = None,
        advance: timedelta | None = None,
    ) -> None:
        """Queue several records, all or none (a bad value leaves the topic unchanged).

        Without ``start_timestamp`` each record is piped as by :meth:`pipe_input`
        without ``timestamp``. With it, the records get ``start_timestamp``,
        ``start_timestamp + advance``, ... (where they lack an event time) and this
        handle's record time does not move.
        """
        self._driver._check_open()
        if start_timestamp is None and advance is not None:
            raise ValueError("advance= needs start_timestamp=; without it the handle's "
                             "auto_advance applies")
        step = timedelta(milliseconds=duration_ms(advance or timedelta(0), "advance"))
        clock = self._time
        explicit = None if start_timestamp is None else require_aware(
            start_timestamp, "start_timestamp"
        )
        lines: list[str] = []
        records: list[TestRecord] = []
        for index, value in enumerate(values):
            try:
                line, record, clock = self._encode(value, explicit, clock)
            except StreamTestError as error:
                raise type(error)(f"values[{index}]: {error}") from None
            lines.append(line)
            records.append(record)
            if explicit is not None:
                explicit = explicit + step
        if start_timestamp is None:
            self._time = clock
        self._driver._pipe(self._spec.name, lines, records)

    def _encode(
        self, value: Any, timestamp: datetime | None, clock: datetime
    ) -> tuple[str, TestRecord, datetime]:
        """(JSON line, record, this handle's record time after it) for one value."""
        spec = self._spec
        column = spec.timestamp_column
        try:
            if column is not None and isinstance(value, (tuple, list)) and (
                len(value) == len(spec.encoder.names) - 1
            ):
                names = [n for n in spec.encoder.names if n != column]
                mapping: Mapping[str, Any] = dict(zip(names, value, strict=True))
            else:
                mapping = spec.encoder.as_mapping(value, "value")
            event_time: datetime | None = None
            if column is None:
                if timestamp is not None:
                    raise ValueError(
                        f"input {spec.name!r} has no timestamp_column, so timestamp= has "
                        "nowhere to go; declare t.input(..., timestamp_column=...) or put the "
                        "time in the value"
                    )
            else:
                given = mapping.get(column)
                if given is None:
                    if timestamp is None:
                        event_time = clock
                        clock = clock + self._advance
                    else:
                        event_time = require_aware(timestamp, "timestamp")
                    mapping = {**mapping, column: event_time}
                else:
                    event_time = require_aware(given, f"field {column!r}")
                    if timestamp is not None and require_aware(timestamp, "timestamp") != given:
                        raise ValueError(
                            f"the value's {column!r} ({given.isoformat()}) and timestamp= "
                            f"({timestamp.isoformat()}) disagree; give the event time once"
                        )
            encoded = spec.encoder.encode_mapping(mapping)
        except SchemaMismatchError as error:
            raise SchemaMismatchError(f"input {spec.name!r}: {error}") from None
        record = TestRecord(value=dict(mapping), timestamp=event_time, topic=spec.name)
        return to_json_line(encoded), record, clock

    def __repr__(self) -> str:
        return f"<TestInputTopic {self._spec.name!r} at {self._time.isoformat()}>"


class TestOutputTopic:
    """Reads the records one output emitted, oldest first; reading removes them.

    Each record is a :class:`TestRecord` whose ``value`` is the output row as a dict
    (structs as dicts, timestamps timezone-aware UTC) and whose ``batch_id`` and
    ``processing_time`` name the micro-batch that emitted it. In ``update`` and
    ``complete`` modes a key can appear in several batches: the list shows the stream
    of changes, as Spark's sink receives it.
    """

    __test__ = False  # not a pytest test class

    def __init__(self) -> None:
        raise TypeError("use TopologyTestDriver.create_output_topic(name)")

    @classmethod
    def _create(
        cls, driver: TopologyTestDriver, name: str, queue: deque[TestRecord]
    ) -> TestOutputTopic:
        topic = cls.__new__(cls)
        topic._driver = driver
        topic._name = name
        topic._queue = queue
        return topic

    _driver: TopologyTestDriver
    _name: str
    _queue: deque[TestRecord]

    @property
    def name(self) -> str:
        return self._name

    @property
    def queue_size(self) -> int:
        """How many records are unread."""
        self._driver._check_open()
        return len(self._queue)

    def is_empty(self) -> bool:
        self._driver._check_open()
        return not self._queue

    def read_record(self) -> TestRecord:
        """Remove and return the oldest unread record."""
        self._driver._check_open()
        if not self._queue:
            raise NoSuchRecordError(
                f"output {self._name!r} has no unread record ({self._produced()}); run a "
                "batch first (driver.process_all_available() or advance_wall_clock(...))"
            )
        return self._queue.popleft()

    def read_value(self) -> Mapping[str, Any] | None:
        """Remove the oldest unread record and return its value (a dict)."""
        return self.read_record().value

    def read_records_to_list(self) -> list[TestRecord]:
        """Remove and return every unread record (possibly none)."""
        self._driver._check_open()
        records = list(self._queue)
        self._queue.clear()
        return records

    def read_values_to_list(self) -> list[Mapping[str, Any] | None]:
        """Remove every unread record and return their values (possibly none)."""
        return [record.value for record in self.read_records_to_list()]

    def _produced(self) -> str:
        total = sum(len(b.output_records) for b in self._driver.batches if b.output == self._name)
        return f"{total} records emitted so far, all read" if total else "it emitted nothing yet"

    def __repr__(self) -> str:
        return f"<TestOutputTopic {self._name!r} unread={len(self._queue)}>"
