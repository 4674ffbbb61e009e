"""Input topic handles: pipe records into one input of the driver's topology.

Handles are made by :meth:`TopologyTestDriver.create_input_topic
<pyspark_streamtest.TopologyTestDriver.create_input_topic>` and belong to it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from typing import Any, overload

from ...core.columns import ColumnLines
from ...core.records import TestRecord
from ...core.time import (
    duration_ms,
    require_aware,
    to_ms,
)
from ...errors import (
    InvalidArgumentError,
    InvalidArgumentTypeError,
    StreamTestError,
    hide_our_frames,
)
from ...kafka.broker import Broker, SerializedRecord, normalize_headers, place_input_records
from ...kafka.serdes import LOG_APPEND_TIME, Serializer
from ..queries import RecordBlock
from ..topology import InputSpec, LandingDir
from ._encoding import encode_value, later

__tracebackhide__ = hide_our_frames

__all__ = ["InputLink", "TestInputTopic"]


@dataclass(frozen=True)
class InputLink:
    """What an input handle needs of its driver (the driver makes one per driver)."""

    check_open: Callable[[], None]
    """Raises :class:`~pyspark_streamtest.errors.DriverClosedError` once closed."""
    pipe: Callable[[str, list[str], Sequence[TestRecord]], None]
    """Queues JSON lines (and their records) for every query reading the input."""
    pipe_empty: Callable[[str], None]
    """Queues an offset of zero rows for every query reading the input."""
    now: Callable[[], datetime]
    """The driver's processing time."""
    broker: Broker
    """Partitions and offsets of the Kafka inputs."""


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

    **File inputs** (``t.file_input``, or ``from_app(..., land_files=...)``) take files,
    not rows: :meth:`land_file` and :meth:`land_lines` write one into the input's
    directory at once, and Spark's own file source reads it at its next trigger.
    """

    __test__ = False  # not a pytest test class

    def __init__(self) -> None:
        raise InvalidArgumentTypeError("use TopologyTestDriver.create_input_topic(name)")

    @classmethod
    def _create(
        cls,
        link: InputLink,
        spec: InputSpec,
        start: datetime,
        auto_advance: timedelta,
        key_serializer: Serializer | None = None,
        value_serializer: Serializer | None = None,
    ) -> TestInputTopic:
        topic = cls.__new__(cls)
        topic._link = link
        topic._spec = spec
        topic._time = start
        topic._advance = timedelta(milliseconds=duration_ms(auto_advance, "auto_advance"))
        topic._key_serializer = key_serializer
        topic._value_serializer = value_serializer
        topic._columns = None
        return topic

    _link: InputLink
    _spec: InputSpec
    _time: datetime
    _advance: timedelta
    _key_serializer: Serializer | None
    _value_serializer: Serializer | None
    _columns: ColumnLines | None

    @property
    def name(self) -> str:
        return self._spec.name

    @property
    def is_kafka(self) -> bool:
        """True for a topic declared with ``t.kafka_input``."""
        return self._spec.kafka is not None

    @property
    def is_file_input(self) -> bool:
        """True for a file input: it takes files (:meth:`land_file`), not rows."""
        return self._spec.files is not None

    @property
    def current_time(self) -> datetime:
        """The record time the next record without a timestamp gets."""
        return self._time

    def advance_time(self, delta: timedelta) -> None:
        """Move this handle's record time forward by ``delta`` (not processing time, not
        the watermark)."""
        self._link.check_open()
        self._time = later(self._time, delta, "this topic's record time")

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
        self._check_rows()
        if len(args) == 3 and timestamp is None:
            *args_kv, timestamp = args
            args = tuple(args_kv)
        if len(args) == 1 and isinstance(args[0], TestRecord):
            self.pipe_record_list([args[0]])
            return
        if len(args) not in (1, 2):
            raise InvalidArgumentTypeError(
                f"pipe_input takes (value), (key, value), (key, value, timestamp) or "
                f"(TestRecord), got {len(args)} positional arguments"
            )
        if self._spec.kafka is None:
            self._plain_only(len(args) == 2, headers, partition)
            line, record, self._time = self._encode(args[0], timestamp, self._time)
            self._link.pipe(self._spec.name, [line], self._placed([record]))
            return
        key, value = (None, args[0]) if len(args) == 1 else args
        serialized, self._time = self._serialize(key, value, timestamp, headers, partition,
                                                 self._time)
        self._pipe_kafka([serialized])

    def land_file(self, name: str, contents: str | bytes) -> str:
        """Land file ``name`` (letters, digits, ``._-=+@,``; a new name) with
        ``contents`` (str is written as UTF-8) in this file input's directory, at once
        (written under a hidden name, then renamed). Its modification time is the
        driver's processing time, or 1 ms after the file landed before it if that is
        later: Spark takes new files in that order. Spark lists the directory at the
        query's next trigger and reads the file then, or at a later trigger if
        ``maxFilesPerTrigger`` (or its kin) leaves it for later; the batch that reads it
        has it in ``BatchRecord.input_records`` as ``TestRecord(key=name,
        value=contents)``. Returns ``name``."""
        self._link.check_open()
        return self._landing("land_file").land(name, contents, to_ms(self._link.now()))

    def land_lines(self, lines: Iterable[str], *, name: str | None = None) -> str:
        """Land a file of ``lines``, each ended by a newline, as :meth:`land_file` does;
        ``name`` defaults to the next free ``part-NNNNN.<format>``. A line may not hold a
        line break (land a file's exact contents with :meth:`land_file`). Returns the
        file's name."""
        self._link.check_open()
        landing = self._landing("land_lines")
        if isinstance(lines, (str, bytes)):
            raise InvalidArgumentTypeError(
                "land_lines takes an iterable of lines (str), got one "
                f"{type(lines).__name__}: wrap it in a list, or land it with land_file")
        text = []
        for index, line in enumerate(lines):
            if not isinstance(line, str) or "\n" in line or "\r" in line:
                raise InvalidArgumentError(
                    f"lines[{index}] must be a str without line breaks, got {line!r}")
            text.append(line + "\n")
        return landing.land(name, "".join(text), to_ms(self._link.now()))

    def _landing(self, verb: str) -> LandingDir:
        files = self._spec.files
        if files is None:
            raise InvalidArgumentTypeError(
                f"input {self._spec.name!r} takes rows (pipe_input...), so {verb} has "
                "nowhere to put a file; declare a file input with t.file_input(...), or "
                "from_app(..., land_files=[...]) for a file source the job reads")
        return files.landing

    def _check_rows(self) -> None:
        self._link.check_open()
        if self._spec.files is not None:
            raise InvalidArgumentTypeError(
                f"input {self._spec.name!r} is a file input: it takes files, not rows; "
                "land them with land_file(name, contents) or land_lines(lines), and Spark's "
                "file source reads them at the next trigger")

    def pipe_empty_batch(self) -> None:
        """Queue a data batch of zero rows for the next trigger, as Spark's
        ``AddData(stream)`` with no data: the source gets a new offset holding no rows.

        At the next trigger every query reading this input runs a real data batch:
        ``BatchRecord.is_data_batch`` is true, ``num_input_rows`` is 0, the batch id
        advances, stateful operators run (and may emit, evict or time out), and no rows
        come from this input. Records piped before the same trigger make that offset
        non-empty instead (still one batch). Moves no time."""
        self._check_rows()
        self._link.pipe_empty(self._spec.name)

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
        values = list(values)
        if start_timestamp is None and advance is None and self._pipe_columns(values):
            return
        self._pipe_many([(None, v) for v in values], start_timestamp, advance, keyed=False)

    def _pipe_columns(self, values: list[Any]) -> bool:
        """The bulk fast path (:mod:`pyspark_streamtest.core.columns`) for whole tuples
        of a plain input: True if it piped ``values``, False to take the per-row path
        (which gives the same lines and records, or the precise error)."""
        spec = self._spec
        if spec.kafka is not None:
            return False
        self._check_rows()
        if self._columns is None:
            self._columns = ColumnLines(spec.encoder.schema)
        lines = self._columns.lines(values)
        if lines is None:
            return False
        # The check made sure every value is a tuple with one item per column, and
        # refused None in the event-time column: each row has its event time.
        names, column = spec.encoder.names, spec.timestamp_column
        at = None if column is None else names.index(column)
        block = RecordBlock(values, names, at, spec.name, lines)
        self._link.pipe(spec.name, lines, block if spec.partitions == 1 else self._placed(
            list(block)))
        return True

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
                raise InvalidArgumentTypeError(
                    f"key_values[{index}] must be a (key, value) pair, got {pair!r}"
                )
            pairs.append((pair[0], pair[1]))
        self._pipe_many(pairs, start_timestamp, advance, keyed=True)

    def pipe_record_list(self, records: Iterable[TestRecord]) -> None:
        """Queue :class:`TestRecord` values, all or none. Each brings its ``value``,
        ``key``, ``timestamp`` (or the handle's record time when None), ``headers`` and
        ``partition`` (Kafka inputs); other fields are ignored."""
        self._check_rows()
        clock = self._time
        kafka: list[SerializedRecord] = []
        lines: list[str] = []
        plain: list[TestRecord] = []
        for index, record in enumerate(records):
            if not isinstance(record, TestRecord):
                raise InvalidArgumentTypeError(
                    f"records[{index}] must be a TestRecord, got {record!r}"
                )
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
            self._link.pipe(self._spec.name, lines, self._placed(plain))
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
        self._check_rows()
        if keyed and self._spec.kafka is None:
            self._plain_only(True, None, None)
        if start_timestamp is None and advance is not None:
            raise InvalidArgumentError("advance= needs start_timestamp=; without it the handle's "
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
            self._link.pipe(self._spec.name, lines, self._placed(records))
        else:
            self._pipe_kafka(serialized)

    def _plain_only(self, keyed: bool, headers: Any, partition: int | None) -> None:
        if keyed or headers is not None or partition is not None:
            raise InvalidArgumentTypeError(
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
            raise InvalidArgumentError(
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
            event_time = self._link.now()
        elif timestamp is not None:
            event_time = require_aware(timestamp, "timestamp")
        else:
            event_time, clock = clock, later(clock, self._advance, "the next record time")
        record = SerializedRecord(
            key=key, value=value, key_bytes=key_bytes, value_bytes=value_bytes,
            timestamp=event_time, headers=normalize_headers(headers), partition=partition,
        )
        return record, clock

    def _pipe_kafka(self, records: list[SerializedRecord]) -> None:
        kafka = self._spec.kafka
        assert kafka is not None
        lines, placed = place_input_records(
            self._link.broker, self._spec.name, kafka.partitions, kafka.timestamp_type,
            kafka.include_headers, records,
        )
        if kafka.assigned is not None:  # the others take their offsets; no query reads them
            read = [i for i, record in enumerate(placed) if record.partition in kafka.assigned]
            if not read:
                return
            lines, placed = [lines[i] for i in read], [placed[i] for i in read]
        self._link.pipe(self._spec.name, lines, placed)

    def _placed(self, records: list[TestRecord]) -> list[TestRecord]:
        """Typed records of a partitioned input with their partition (by the key
        column's text, else round-robin), given once all of them were checked."""
        spec = self._spec
        if spec.partitions == 1:
            return records
        log = self._link.broker.input_log(spec.name)
        placed = []
        for record in records:
            key = None if spec.key is None else record.value.get(spec.key)
            key_bytes = None if key is None else str(key).encode("utf-8")
            placed.append(replace(record, partition=log.place(key_bytes, spec.partitions)))
        return placed

    def _encode(
        self, value: Any, timestamp: datetime | None, clock: datetime
    ) -> tuple[str, TestRecord, datetime]:
        """(JSON line, record, this handle's record time after it) for one value."""
        return encode_value(self._spec, self._advance, value, timestamp, clock)

    def __repr__(self) -> str:
        return f"<TestInputTopic {self._spec.name!r} at {self._time.isoformat()}>"

