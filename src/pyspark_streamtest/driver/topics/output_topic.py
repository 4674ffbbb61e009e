"""Output topic handles: read what an output (or a Kafka topic) was written.

Handles are made by :meth:`TopologyTestDriver.create_output_topic
<pyspark_streamtest.TopologyTestDriver.create_output_topic>` and belong to it.
"""

from __future__ import annotations

import dataclasses
from collections import deque
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from ...core.equality import Comparison, compare_values
from ...core.records import BatchRecord, KeyValue, TestRecord
from ...errors import (
    DeserializationError,
    InvalidArgumentError,
    InvalidArgumentTypeError,
    NoSuchRecordError,
    UninitializedTopicError,
    hide_our_frames,
)
from ...kafka.serdes import Deserializer
from ..queries import History

__tracebackhide__ = hide_our_frames

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

__all__ = ["OutputLink", "TestOutputTopic"]


@dataclass(frozen=True)
class OutputLink:
    """What an output handle needs of its driver (the driver makes one per driver)."""

    check_open: Callable[[], None]
    """Raises :class:`~pyspark_streamtest.errors.DriverClosedError` once closed."""
    history: History
    """The batches run and the queue of every topic written."""
    to_frame: Callable[[str, bool, Sequence[TestRecord]], DataFrame]
    """Records of a topic (name, is Kafka) as a Spark DataFrame with its schema."""


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
        raise InvalidArgumentTypeError("use TopologyTestDriver.create_output_topic(name)")

    @classmethod
    def _create(
        cls,
        link: OutputLink,
        name: str,
        *,
        kafka: bool,
        queries: tuple[str, ...] = (),
        complete: bool = False,
        key_deserializer: Deserializer | None = None,
        value_deserializer: Deserializer | None = None,
    ) -> TestOutputTopic:
        topic = cls.__new__(cls)
        topic._link = link
        topic._name = name
        topic._kafka = kafka
        topic._complete = complete
        topic._queries = queries or (name,)
        topic._key_deserializer = key_deserializer
        topic._value_deserializer = value_deserializer
        return topic

    _link: OutputLink
    _name: str
    _kafka: bool
    _complete: bool
    _queries: tuple[str, ...]
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
        self._link.check_open()
        queue = self._link.history.queue(self._name)
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
        record = self._deserialize(queue[0])  # a record that fails stays at the head
        queue.popleft()
        return record

    def read_value(self) -> Any:
        """Remove the oldest unread record and return its value."""
        return self.read_record().value

    def read_records_to_list(self) -> list[TestRecord]:
        """Remove and return every unread record (possibly none; none for a topic never
        written)."""
        records = self._unread()
        self._drop_unread()
        return records

    @property
    def batches(self) -> tuple[BatchRecord, ...]:
        """Every batch of the query that writes this output, oldest first (kept across
        restarts and after reads), unlike :attr:`TopologyTestDriver.batches
        <pyspark_streamtest.TopologyTestDriver.batches>`, which mixes every output's
        queries. For a Kafka topic: the batches of every Kafka output that can write it
        (its fixed topic, or any output that routes by a ``topic`` column)."""
        return tuple(b for b in self._link.history.batches if b.output in self._queries)

    def all_rows(self) -> list[Any]:
        """What Spark's memory sink would hold now, as Spark's ``CheckAnswer`` reads it,
        without reading anything (the queue is unchanged): for an ``append`` or
        ``update`` output every row written so far, oldest first; for a ``complete``
        output the result of its last batch (each batch replaces the whole result). A
        Kafka topic is a log: every value written to it (deserialized), whatever the
        writing query's output mode."""
        self._link.check_open()
        if self._complete:
            return self.last_batch_rows()
        return [self._deserialize(r).value for r in self._link.history.written(self._name)]

    def last_batch_rows(self) -> list[Any]:
        """The rows of the output's last batch, as Spark's ``CheckLastBatch`` reads them:
        empty when that batch wrote none (a no-data batch that emitted nothing) or no
        batch ran yet. For a Kafka topic: the values written to it by the latest batch
        that wrote to it. Reads nothing (the queue is unchanged)."""
        self._link.check_open()
        if not self._kafka:
            batches = self._link.history.of_output(self._name)
            return list(batches[-1].output_values) if batches else []
        written = self._link.history.written(self._name)
        if not written:
            return []
        last = written[-1]
        return [self._deserialize(r).value for r in written
                if (r.batch_id, r.processing_time) == (last.batch_id, last.processing_time)]

    def to_dataframe(self) -> DataFrame:
        """Every record written to this topic so far, read or not, as a Spark DataFrame
        (reading nothing: the queue is unchanged).

        A plain output's rows come with the output's schema. A Kafka topic's records
        come as Spark's Kafka source would read the topic back: ``key`` and ``value``
        (the bytes written, before any deserializer of this handle), ``topic``,
        ``partition``, ``offset``, ``timestamp`` (the batch's processing time),
        ``timestampType`` (0, CreateTime) and ``headers``. Rows are in the order written;
        Spark promises no order within a batch, so compare ignoring row order (chispa's
        ``assert_df_equality(..., ignore_row_order=True)``; ``pyspark.testing.
        assertDataFrameEqual`` ignores it by default)."""
        self._link.check_open()
        return self._link.to_frame(self._name, self._kafka,
                                   self._link.history.written(self._name))

    def read_dataframe(self) -> DataFrame:
        """Remove every unread record and return them as a Spark DataFrame, with the
        columns :meth:`to_dataframe` gives (for a topic never written: no rows)."""
        self._link.check_open()
        queue = self._link.history.queue(self._name)
        records = [] if queue is None else list(queue)
        if queue is not None:
            queue.clear()
        return self._link.to_frame(self._name, self._kafka, records)

    def read_values_to_list(self) -> list[Any]:
        """Remove every unread record and return their values (possibly none)."""
        return [record.value for record in self.read_records_to_list()]

    def assert_values(
        self,
        expected: Sequence[Any],
        *,
        ignore_order: bool = False,
        rtol: float = 0.0,
        atol: float = 0.0,
        ignore_columns: Collection[str] | None = None,
    ) -> None:
        """Read every unread value and assert it equals ``expected``; on a mismatch the
        error shows expected and actual side by side, each actual value with the
        micro-batch that emitted it, and the differing fields (see
        :func:`~pyspark_streamtest.assert_values_equal`, which compares the same way).

        In order by default, as a Kafka consumer reads a partition (first in, first
        out); ``ignore_order=True`` compares as multisets (rows of one micro-batch have
        no order in Spark). Floats compare exactly unless ``rtol``/``atol`` is given
        (``math.isclose`` on every number anywhere in a value, one of a pair a float);
        ``pytest.approx(...)`` inside an expected value compares with its own tolerance.
        ``ignore_columns`` leaves those top-level fields out of both sides.

        The options are checked before anything is read: an option the call cannot
        use, or a name of ``ignore_columns`` that no value (unread or expected) has,
        raises :class:`~pyspark_streamtest.errors.InvalidArgumentError` (or
        :class:`~pyspark_streamtest.errors.InvalidArgumentTypeError`) and leaves the
        records unread. A mismatch has read them all."""
        how = Comparison.of(ignore_order=ignore_order, rtol=rtol, atol=atol,
                            ignore_columns=ignore_columns)
        records = self._unread()
        values = [r.value for r in records]
        how.check_columns(values, expected)
        self._drop_unread()
        compare_values(values, expected, how, title=f"{self._kind()} {self._name!r}",
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
            raise InvalidArgumentError(f"tombstones must be 'keep' or 'delete', got {tombstones!r}")
        self._link.check_open()
        queue = self._link.history.queue(self._name)
        if queue is not None:
            for record in queue:
                if record.key is None:
                    raise InvalidArgumentError(
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
    def _unread(self) -> list[TestRecord]:
        """Every unread record, deserialized, left unread (none for a topic never
        written)."""
        self._link.check_open()
        queue = self._link.history.queue(self._name)
        return [] if queue is None else [self._deserialize(r) for r in queue]

    def _drop_unread(self) -> None:
        queue = self._link.history.queue(self._name)
        if queue is not None:
            queue.clear()

    def _queue(self) -> deque[TestRecord]:
        self._link.check_open()
        queue = self._link.history.queue(self._name)
        if queue is None:
            written = self._link.history.produced_topic_names()
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
            raise DeserializationError(
                f"topic {self._name!r}: cannot deserialize the record at partition "
                f"{record.partition} offset {record.offset} ({type(error).__name__}: {error}); "
                "it stays unread; check key_deserializer/value_deserializer of "
                "create_output_topic, or read it with a handle without them (raw bytes)"
            ) from error
        return dataclasses.replace(record, key=key, value=value)

    def _require_kafka(self, method: str) -> None:
        if not self._kafka:
            raise InvalidArgumentTypeError(
                f"output {self._name!r} is not a Kafka output: its records have no keys; "
                f"use read_values_to_list() (or declare it with t.kafka_output to use {method})"
            )

    def _kind(self) -> str:
        return "topic" if self._kafka else "output"

    def _produced(self) -> str:
        total = self._link.history.written_count(self._name)
        return f"{total} records written so far, all read" if total else "nothing written yet"

    def __repr__(self) -> str:
        queue = self._link.history.queue(self._name)
        return f"<TestOutputTopic {self._name!r} unread={0 if queue is None else len(queue)}>"
