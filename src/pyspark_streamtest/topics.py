"""Topic handles: pipe records into inputs, read what outputs emitted.

Handles are made by the driver (:meth:`TopologyTestDriver.create_input_topic`,
:meth:`TopologyTestDriver.create_output_topic`) and belong to it.
"""

from __future__ import annotations

import dataclasses
from collections import deque
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any, Literal, overload

from ._broker import SerializedRecord, normalize_headers, place_input_records
from ._time import duration_ms, require_aware
from ._values import to_json_line
from .assertions import assert_values_equal
from .errors import (
    NoSuchRecordError,
    SchemaMismatchError,
    StreamTestError,
    UninitializedTopicError,
)
from .kafka import LOG_APPEND_TIME, Deserializer, Serializer
from .records import KeyValue, TestRecord

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

    **Record time.** A record's event time is the explicit ``timestamp=``, or else this
    handle's current record time, which then moves by ``auto_advance``. For an input
    declared with ``timestamp_column`` it fills that column when the value lacks it;
    for a Kafka input it is the ``timestamp`` column (unless the topic is
    ``LogAppendTime``: then the broker's time, the driver's processing time when the
    record is piped, replaces it, as a broker would). Record time is event time only:
    it never moves processing time (the driver's clock) or the watermark by itself.

    **Kafka inputs** (declared with ``t.kafka_input``) take keys: ``pipe_input(value)``
    pipes a record with a null key, ``pipe_input(key, value)`` a keyed one, and
    ``pipe_input(key, None)`` a *tombstone*: Spark's ``value`` column is null, and it is
    up to the pipeline to treat that as a delete, as with real Kafka. Keys and values
    go through the topic's serializers (see :mod:`pyspark_streamtest.kafka`), then get a
    partition (explicit ``partition=`` or Kafka's default partitioner) and the next
    offset of that partition. ``headers`` (a dict or a list of (key, value) pairs; keys
    may repeat) reach the ``headers`` column when the input includes headers.
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
        key_serializer: Serializer | None = None,
        value_serializer: Serializer | None = None,
    ) -> TestInputTopic:
        topic = cls.__new__(cls)
        topic._driver = driver
        topic._spec = spec
        topic._time = start
        topic._advance = timedelta(milliseconds=duration_ms(auto_advance, "auto_advance"))
        topic._key_serializer = key_serializer
        topic._value_serializer = value_serializer
        return topic

    _driver: TopologyTestDriver
    _spec: _InputSpec
    _time: datetime
    _advance: timedelta
    _key_serializer: Serializer | None
    _value_serializer: Serializer | None

    @property
    def name(self) -> str:
        return self._spec.name

    @property
    def is_kafka(self) -> bool:
        """True for a topic declared with ``t.kafka_input``."""
        return self._spec.kafka is not None

    @property
    def current_time(self) -> datetime:
        """The record time the next record without a timestamp gets."""
        return self._time

    def advance_time(self, delta: timedelta) -> None:
        """Move this handle's record time forward by ``delta`` (not processing time, not
        the watermark)."""
        self._driver._check_open()
        self._time = self._time + timedelta(milliseconds=duration_ms(delta, "delta"))

    @overload
    def pipe_input(
        self, value: Any, /, *, timestamp: datetime | None = None,
        headers: Any = None, partition: int | None = None,
    ) -> None: ...

    @overload
    def pipe_input(
        self, key: Any, value: Any, /, *, timestamp: datetime | None = None,
        headers: Any = None, partition: int | None = None,
    ) -> None: ...

    @overload
    def pipe_input(
        self, key: Any, value: Any, timestamp: datetime, /, *,
        headers: Any = None, partition: int | None = None,
    ) -> None: ...

    def pipe_input(
        self, *args: Any, timestamp: datetime | None = None, headers: Any = None,
        partition: int | None = None,
    ) -> None:
        """Queue one record: ``pipe_input(value)``, ``pipe_input(key, value)`` (Kafka
        inputs) or ``pipe_input(test_record)``.

        For a plain input, ``value`` is a dict by field name (missing nullable fields are
        null), a Row, or a tuple of all fields in schema order (or of all but the
        ``timestamp_column``). For a Kafka input, ``key`` and ``value`` are serialized
        by the topic's serializers; ``None`` stays null (a null value is a tombstone).
        A :class:`TestRecord` brings its own key, value, timestamp, headers and
        partition. ``timestamp`` sets the event time (see the class doc); as in Kafka's
        ``pipeInput(key, value, timestamp)`` it may also be the third positional argument.
        """
        self._driver._check_open()
        if len(args) == 3 and timestamp is None:
            *args_kv, timestamp = args
            args = tuple(args_kv)
        if len(args) == 1 and isinstance(args[0], TestRecord):
            self.pipe_record_list([args[0]])
            return
        if len(args) not in (1, 2):
            raise TypeError(
                f"pipe_input takes (value), (key, value), (key, value, timestamp) or "
                f"(TestRecord), got {len(args)} positional arguments"
            )
        if self._spec.kafka is None:
            self._plain_only(len(args) == 2, headers, partition)
            line, record, self._time = self._encode(args[0], timestamp, self._time)
            self._driver._pipe(self._spec.name, [line], [record])
            return
        key, value = (None, args[0]) if len(args) == 1 else args
        serialized, self._time = self._serialize(key, value, timestamp, headers, partition,
                                                 self._time)
        self._pipe_kafka([serialized])

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
        handle's record time does not move. Kafka records piped this way have null keys.
        """
        self._pipe_many([(None, v) for v in values], start_timestamp, advance, keyed=False)

    def pipe_key_value_list(
        self,
        key_values: Iterable[tuple[Any, Any]],
        *,
        start_timestamp: datetime | None = None,
        advance: timedelta | None = None,
    ) -> None:
        """Kafka inputs: queue several (key, value) pairs, all or none, with times as in
        :meth:`pipe_value_list`. A pair with value None is a tombstone."""
        pairs: list[tuple[Any, Any]] = []
        for index, pair in enumerate(key_values):
            if not isinstance(pair, (tuple, list)) or len(pair) != 2:
                raise TypeError(f"key_values[{index}] must be a (key, value) pair, got {pair!r}")
            pairs.append((pair[0], pair[1]))
        self._pipe_many(pairs, start_timestamp, advance, keyed=True)

    def pipe_record_list(self, records: Iterable[TestRecord]) -> None:
        """Queue :class:`TestRecord` values, all or none. Each brings its ``value``,
        ``key``, ``timestamp`` (or the handle's record time when None), ``headers`` and
        ``partition`` (Kafka inputs); other fields are ignored."""
        self._driver._check_open()
        clock = self._time
        kafka: list[SerializedRecord] = []
        lines: list[str] = []
        plain: list[TestRecord] = []
        for index, record in enumerate(records):
            if not isinstance(record, TestRecord):
                raise TypeError(f"records[{index}] must be a TestRecord, got {record!r}")
            try:
                if self._spec.kafka is None:
                    self._plain_only(record.key is not None, record.headers or None,
                                     record.partition)
                    line, encoded, clock = self._encode(record.value, record.timestamp, clock)
                    lines.append(line)
                    plain.append(encoded)
                else:
                    serialized, clock = self._serialize(
                        record.key, record.value, record.timestamp, record.headers,
                        record.partition, clock,
                    )
                    kafka.append(serialized)
            except (StreamTestError, TypeError, ValueError) as error:
                raise type(error)(f"records[{index}]: {error}") from None
        self._time = clock
        if self._spec.kafka is None:
            self._driver._pipe(self._spec.name, lines, plain)
        else:
            self._pipe_kafka(kafka)

    def _pipe_many(
        self,
        pairs: list[tuple[Any, Any]],
        start_timestamp: datetime | None,
        advance: timedelta | None,
        *,
        keyed: bool,
    ) -> None:
        self._driver._check_open()
        if keyed and self._spec.kafka is None:
            self._plain_only(True, None, None)
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
        serialized: list[SerializedRecord] = []
        what = "key_values" if keyed else "values"
        for index, (key, value) in enumerate(pairs):
            try:
                if self._spec.kafka is None:
                    line, record, clock = self._encode(value, explicit, clock)
                    lines.append(line)
                    records.append(record)
                else:
                    one, clock = self._serialize(key, value, explicit, None, None, clock)
                    serialized.append(one)
            except (StreamTestError, TypeError, ValueError) as error:
                raise type(error)(f"{what}[{index}]: {error}") from None
            if explicit is not None:
                explicit = explicit + step
        if start_timestamp is None:
            self._time = clock
        if self._spec.kafka is None:
            self._driver._pipe(self._spec.name, lines, records)
        else:
            self._pipe_kafka(serialized)

    def _plain_only(self, keyed: bool, headers: Any, partition: int | None) -> None:
        if keyed or headers is not None or partition is not None:
            raise TypeError(
                f"input {self._spec.name!r} is not a Kafka input, so its records have no key, "
                "headers or partition; pipe values only, or declare it with t.kafka_input(...)"
            )

    def _serialize(
        self, key: Any, value: Any, timestamp: datetime | None, headers: Any,
        partition: int | None, clock: datetime,
    ) -> tuple[SerializedRecord, datetime]:
        kafka = self._spec.kafka
        assert kafka is not None and self._key_serializer and self._value_serializer
        name = self._spec.name
        if partition is not None and (
            isinstance(partition, bool) or not isinstance(partition, int)
            or not 0 <= partition < kafka.partitions
        ):
            raise ValueError(
                f"kafka input {name!r}: partition {partition!r} is not in [0, "
                f"{kafka.partitions}); the topic has {kafka.partitions} partition(s)"
            )
        try:
            key_bytes = None if key is None else self._key_serializer(key)
        except (TypeError, ValueError) as error:
            raise type(error)(f"kafka input {name!r}: key {key!r}: {error}") from None
        try:
            value_bytes = None if value is None else self._value_serializer(value)
        except (TypeError, ValueError) as error:
            raise type(error)(f"kafka input {name!r}: value {value!r}: {error}") from None
        if kafka.timestamp_type == LOG_APPEND_TIME:
            event_time = self._driver.current_time
        elif timestamp is not None:
            event_time = require_aware(timestamp, "timestamp")
        else:
            event_time, clock = clock, clock + self._advance
        record = SerializedRecord(
            key=key, value=value, key_bytes=key_bytes, value_bytes=value_bytes,
            timestamp=event_time, headers=normalize_headers(headers), partition=partition,
        )
        return record, clock

    def _pipe_kafka(self, records: list[SerializedRecord]) -> None:
        kafka = self._spec.kafka
        assert kafka is not None
        lines, placed = place_input_records(
            self._driver._broker, self._spec.name, kafka.partitions, kafka.timestamp_type,
            kafka.include_headers, records,
        )
        self._driver._pipe(self._spec.name, lines, placed)

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
    """Reads the records written to one topic, oldest first; reading removes them.

    **Plain outputs** (``t.output``): each record's ``value`` is the output row as a
    dict (structs as dicts, timestamps timezone-aware UTC); ``batch_id`` and
    ``processing_time`` name the micro-batch that emitted it. In ``update`` and
    ``complete`` modes a key can appear in several batches: the list shows the stream
    of changes, as Spark's sink receives it.

    **Kafka topics** (written by ``t.kafka_output``): each record has ``key``,
    ``value`` (deserialized by this handle's deserializers; raw bytes without one; None
    for a null key or a tombstone), ``headers``, ``partition``, ``offset``, ``topic``,
    ``batch_id`` and ``timestamp`` (the batch's processing time). ``read_key_value``,
    ``read_key_values_to_list`` and ``read_key_values_to_map`` read them the Kafka way.

    All handles of one topic share one queue: a record read through any handle is gone
    from all of them. Records are kept from the moment they are written, whether or not
    a handle exists yet.
    """

    __test__ = False  # not a pytest test class

    def __init__(self) -> None:
        raise TypeError("use TopologyTestDriver.create_output_topic(name)")

    @classmethod
    def _create(
        cls,
        driver: TopologyTestDriver,
        name: str,
        *,
        kafka: bool,
        key_deserializer: Deserializer | None = None,
        value_deserializer: Deserializer | None = None,
    ) -> TestOutputTopic:
        topic = cls.__new__(cls)
        topic._driver = driver
        topic._name = name
        topic._kafka = kafka
        topic._key_deserializer = key_deserializer
        topic._value_deserializer = value_deserializer
        return topic

    _driver: TopologyTestDriver
    _name: str
    _kafka: bool
    _key_deserializer: Deserializer | None
    _value_deserializer: Deserializer | None

    @property
    def name(self) -> str:
        return self._name

    @property
    def is_kafka(self) -> bool:
        """True for a topic written by a ``t.kafka_output``."""
        return self._kafka

    @property
    def queue_size(self) -> int:
        """How many records are unread (0 for a topic never written)."""
        self._driver._check_open()
        queue = self._driver._topic_queue(self._name)
        return 0 if queue is None else len(queue)

    def is_empty(self) -> bool:
        """True when no record is unread (also for a topic never written)."""
        return self.queue_size == 0

    def read_record(self) -> TestRecord:
        """Remove and return the oldest unread record.

        Raises :class:`~pyspark_streamtest.errors.NoSuchRecordError` when every record
        written so far has been read, and its subclass
        :class:`~pyspark_streamtest.errors.UninitializedTopicError` when nothing was
        ever written to this topic.
        """
        queue = self._queue()
        if not queue:
            raise NoSuchRecordError(
                f"{self._kind()} {self._name!r} has no unread record ({self._produced()}); "
                "run a batch first (driver.process_all_available() or advance_wall_clock(...))"
            )
        return self._deserialize(queue.popleft())

    def read_value(self) -> Any:
        """Remove the oldest unread record and return its value."""
        return self.read_record().value

    def read_records_to_list(self) -> list[TestRecord]:
        """Remove and return every unread record (possibly none; none for a topic never
        written)."""
        self._driver._check_open()
        queue = self._driver._topic_queue(self._name)
        if queue is None:
            return []
        records = [self._deserialize(r) for r in queue]
        queue.clear()
        return records

    def read_values_to_list(self) -> list[Any]:
        """Remove every unread record and return their values (possibly none)."""
        return [record.value for record in self.read_records_to_list()]

    def assert_values(self, expected: Sequence[Any], *, ignore_order: bool = False) -> None:
        """Read every unread value and assert it equals ``expected`` (in order, or as a
        multiset with ``ignore_order``); on a mismatch the error shows expected and actual
        side by side, each actual value with the micro-batch that emitted it, and the
        differing fields (see :mod:`pyspark_streamtest.assertions`).
        """
        records = self.read_records_to_list()
        assert_values_equal([r.value for r in records], expected, ignore_order=ignore_order,
                            title=f"{self._kind()} {self._name!r}",
                            batch_ids=[r.batch_id for r in records])

    def read_key_value(self) -> KeyValue:
        """Kafka topics: remove the oldest unread record; return ``KeyValue(key, value)``."""
        self._require_kafka("read_key_value")
        record = self.read_record()
        return KeyValue(record.key, record.value)

    def read_key_values_to_list(self) -> list[KeyValue]:
        """Kafka topics: remove every unread record; return them as ``KeyValue`` pairs,
        tombstones included (value None), in the order written."""
        self._require_kafka("read_key_values_to_list")
        return [KeyValue(r.key, r.value) for r in self.read_records_to_list()]

    def read_key_values_to_map(
        self, *, tombstones: Literal["keep", "delete"] = "keep"
    ) -> dict[Any, Any]:
        """Kafka topics: remove every unread record and fold them into a dict, the last
        value per key winning (the topic read as a table).

        ``tombstones="keep"`` (the default, as Kafka's ``TestOutputTopic``) keeps a key
        whose last record is a tombstone, with value None. ``tombstones="delete"``
        removes it, as a compacted topic or a KTable would. Records with a null key
        cannot be table rows: if any is unread, this raises ``ValueError`` and reads
        nothing.
        """
        self._require_kafka("read_key_values_to_map")
        if tombstones not in ("keep", "delete"):
            raise ValueError(f"tombstones must be 'keep' or 'delete', got {tombstones!r}")
        self._driver._check_open()
        queue = self._driver._topic_queue(self._name)
        if queue is not None:
            for record in queue:
                if record.key is None:
                    raise ValueError(
                        f"topic {self._name!r} has an unread record with a null key (batch "
                        f"{record.batch_id}, partition {record.partition}, offset "
                        f"{record.offset}); read_key_values_to_map needs keys; use "
                        "read_key_values_to_list"
                    )
        table: dict[Any, Any] = {}
        for record in self.read_records_to_list():
            if record.value is None and tombstones == "delete":
                table.pop(record.key, None)
            else:
                table[record.key] = record.value
        return table

    # --- internals ------------------------------------------------------------------------
    def _queue(self) -> deque[TestRecord]:
        self._driver._check_open()
        queue = self._driver._topic_queue(self._name)
        if queue is None:
            written = self._driver.produced_topic_names()
            listed = ", ".join(repr(n) for n in sorted(written)) or "none"
            raise UninitializedTopicError(
                f"nothing was ever written to topic {self._name!r} (topics written so far: "
                f"{listed}); check the topic name, or the 'topic' column of the "
                "kafka_output, or run a batch first"
            )
        return queue

    def _deserialize(self, record: TestRecord) -> TestRecord:
        if not self._kafka:
            return record
        key = record.key
        value = record.value
        try:
            if key is not None and self._key_deserializer is not None:
                key = self._key_deserializer(key)
            if value is not None and self._value_deserializer is not None:
                value = self._value_deserializer(value)
        except Exception as error:
            raise ValueError(
                f"topic {self._name!r}: cannot deserialize the record at partition "
                f"{record.partition} offset {record.offset} ({type(error).__name__}: {error}); "
                "check key_deserializer/value_deserializer of create_output_topic"
            ) from error
        return dataclasses.replace(record, key=key, value=value)

    def _require_kafka(self, method: str) -> None:
        if not self._kafka:
            raise TypeError(
                f"output {self._name!r} is not a Kafka output: its records have no keys; "
                f"use read_values_to_list() (or declare it with t.kafka_output to use {method})"
            )

    def _kind(self) -> str:
        return "topic" if self._kafka else "output"

    def _produced(self) -> str:
        total = self._driver._written_count(self._name)
        return f"{total} records written so far, all read" if total else "nothing written yet"

    def __repr__(self) -> str:
        queue = self._driver._topic_queue(self._name)
        return f"<TestOutputTopic {self._name!r} unread={0 if queue is None else len(queue)}>"
