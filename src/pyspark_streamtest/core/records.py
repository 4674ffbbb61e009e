"""Immutable values: records that move through topics, and what each batch did."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, NamedTuple

from ..errors import hide_our_frames

__tracebackhide__ = hide_our_frames


class KeyValue(NamedTuple):
    """A (key, value) pair read from a Kafka topic; ``value`` None is a tombstone."""

    key: Any
    value: Any


@dataclass(frozen=True)
class TestRecord:
    """One record of a topic.

    On an input topic, ``timestamp`` is the record's event time (the value of the
    input's ``timestamp_column``, or a Kafka input's ``timestamp``; None for inputs
    without one). On an output topic, ``batch_id`` and ``processing_time`` say which
    micro-batch emitted it and at which processing time (the batch's
    ``current_timestamp()``); ``timestamp`` is None, except on Kafka topics, where it is
    the record's Kafka timestamp (the batch's processing time).

    ``value`` is, for plain inputs and outputs, a dict by column name (nested structs as
    dicts, timestamps aware UTC). For Kafka topics ``key`` and ``value`` are what was
    piped (inputs) or the written bytes, deserialized by the reading handle (outputs);
    None is a null key or a tombstone. ``headers``, ``partition`` and ``offset`` are set
    for Kafka records only. Build one to pipe with
    :meth:`~pyspark_streamtest.TestInputTopic.pipe_record_list`.
    """

    __test__ = False  # not a pytest test class

    value: Any
    timestamp: datetime | None = None
    topic: str = ""
    batch_id: int | None = None
    processing_time: datetime | None = None
    key: Any = None
    headers: tuple[tuple[str, bytes | None], ...] = ()
    partition: int | None = None
    offset: int | None = None


@dataclass(frozen=True)
class LateRecord:
    """An input record a stateful operator dropped as late.

    ``watermark`` is the watermark Spark compared it with: that of the batch before
    ``batch_id`` (Spark 3.4+ filters late rows with the previous batch's watermark).
    For a windowed aggregation, ``dropped_windows`` are the windows (start, end) it was
    dropped from, those that ended at or before that watermark; ``partial`` is True when
    the record was still counted in another of its windows (sliding windows).
    ``operator`` names the stateful operator that dropped it as Spark's progress does
    (``dedupeWithinWatermark``, ``symmetricHashJoin``...) and ``operator_id`` is its
    position in the batch's ``state_operators``; ``side`` is ``"left"`` or ``"right"``
    for a stream-stream join.
    """

    record: TestRecord
    batch_id: int
    watermark: datetime
    dropped_windows: tuple[tuple[datetime, datetime], ...] = ()
    partial: bool = False
    operator: str | None = None
    operator_id: int | None = None
    side: str | None = None


@dataclass(frozen=True)
class DuplicateRecord:
    """An input record a deduplication (``dropDuplicates``,
    ``dropDuplicatesWithinWatermark``) dropped because its key was already held.

    ``key`` maps the deduplication's key columns to the record's values there.
    ``earlier`` is the record it repeats: the last record before it with the same key
    that the deduplication did not drop as late, or None when the key came from before
    this driver's history (a saved checkpoint). ``operator`` names the operator as
    Spark's progress does (``dedupe``, ``dedupeWithinWatermark``) and ``operator_id`` is
    its position in the batch's ``state_operators``.
    """

    record: TestRecord
    batch_id: int
    key: Mapping[str, Any]
    earlier: TestRecord | None
    operator: str
    operator_id: int


@dataclass(frozen=True)
class StateOperatorMetrics:
    """What one stateful operator reported for one batch (Spark's ``stateOperators``
    progress): rows in its store after the batch, rows updated and removed by it, the
    store's memory, input rows it dropped as late and, for a deduplication, input rows
    it dropped as duplicates (Spark's custom metric ``numDroppedDuplicateRows``; None
    for an operator that does not deduplicate)."""

    operator_name: str
    rows_total: int
    rows_updated: int
    rows_removed: int
    memory_used_bytes: int
    rows_dropped_by_watermark: int
    rows_dropped_as_duplicates: int | None = None


class LazyRecords:
    """Records of a batch built when first read: the driver hands one to
    :class:`BatchRecord` so a batch of many rows does not build them up front."""

    __slots__ = ()

    def records(self) -> tuple[TestRecord, ...]:  # pragma: no cover - abstract
        raise NotImplementedError

    def __reduce__(self) -> tuple[Any, ...]:  # pickles as the tuple it stands for
        return (tuple, (self.records(),))


class _LazyRecordsField:
    """``BatchRecord.input_records``: a tuple, or :class:`LazyRecords` turned into its
    tuple on the first read. Set on the class after ``@dataclass`` made it (so the field
    has no default); a frozen dataclass's ``__init__`` stores through it, as it stores
    with ``object.__setattr__``, which honours a data descriptor."""

    def __get__(self, obj: BatchRecord | None, owner: type[Any]) -> Any:
        if obj is None:
            return self
        value = obj.__dict__["_input_records"]
        if isinstance(value, LazyRecords):
            value = obj.__dict__["_input_records"] = value.records()
        return value

    def __set__(self, obj: BatchRecord, value: tuple[TestRecord, ...] | LazyRecords) -> None:
        obj.__dict__["_input_records"] = value


class Lazy:
    """A :class:`BatchRecord` field evaluated on its first read (``input_event_times``,
    ``late_records``): the driver hands one to each batch it records. The first read
    calls ``fill`` (the driver, while open, evaluates that field for every batch of the
    output not evaluated yet, in one go, and :meth:`resolve` s each); a batch ``fill``
    left unresolved (the driver closed, nothing to evaluate, or it cannot be) reads
    None. Copies of a batch share it. Pickles as None (not evaluated)."""

    __slots__ = ("_fill", "_value")

    def __init__(self, fill: Callable[[], None]) -> None:
        self._fill: Callable[[], None] | None = fill
        self._value: Any = _UNRESOLVED

    @property
    def resolved(self) -> bool:
        return self._value is not _UNRESOLVED

    def resolve(self, value: Any) -> None:
        self._value = value

    def value(self) -> Any:
        if self._value is _UNRESOLVED:
            fill, self._fill = self._fill, None  # once, even if it raises
            try:
                if fill is not None:
                    fill()
            finally:
                if self._value is _UNRESOLVED:
                    self._value = None
        return self._value

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(None), ())

    def __repr__(self) -> str:
        return "<evaluated on first read>"


_UNRESOLVED = object()


class LazyComputed(Lazy):
    """A :class:`Lazy` that needs nothing of the driver: ``compute`` gives the field's
    value, on the first read, whenever that is (the driver open or closed). The driver
    hands one to a batch whose late records follow from its piped records' event time,
    so a batch nobody asks about builds neither its records nor its late records.
    Reads as evaluated (:attr:`resolved` computes it), and pickles as its value."""

    __slots__ = ()

    def __init__(self, compute: Callable[[], Any]) -> None:
        super().__init__(lambda: self.resolve(compute()))

    @property
    def resolved(self) -> bool:
        self.value()
        return True

    def __reduce__(self) -> tuple[Any, ...]:
        return (_same, (self.value(),))

    def __repr__(self) -> str:
        return repr(self.value())


def _same(value: Any) -> Any:
    return value


class _LazyField:
    """A :class:`BatchRecord` field that may hold a :class:`Lazy`, evaluated on the
    first read (a data descriptor, as for ``input_records``)."""

    def __init__(self, name: str) -> None:
        self._key = f"_{name}"

    def __get__(self, obj: BatchRecord | None, owner: type[Any]) -> Any:
        if obj is None:
            return self
        value = obj.__dict__.get(self._key)
        if isinstance(value, Lazy):
            value = obj.__dict__[self._key] = value.value()
        return value

    def __set__(self, obj: BatchRecord, value: Any) -> None:
        obj.__dict__[self._key] = value


LAZY_FIELDS = ("input_event_times", "late_records")
"""The fields of :class:`BatchRecord` the driver evaluates on their first read."""


def raw_field(batch: BatchRecord, name: str) -> Any:
    """``batch``'s lazy field ``name`` as stored, without evaluating a pending one."""
    return batch.__dict__.get(f"_{name}")


def field_known(batch: BatchRecord, name: str) -> bool:
    """True when ``batch``'s lazy field ``name`` holds an evaluated value (not None)."""
    raw = raw_field(batch, name)
    if isinstance(raw, Lazy):
        return raw.resolved and raw.value() is not None
    return raw is not None


def settle(batch: BatchRecord, name: str, value: Any) -> None:
    """Give ``batch`` (and every copy sharing its pending value) its lazy field
    ``name``: a :class:`Lazy` or the evaluated value. The batch stays the same object."""
    raw = raw_field(batch, name)
    if isinstance(raw, Lazy) and not isinstance(value, Lazy):
        raw.resolve(value)
    object.__setattr__(batch, name, value)  # through the descriptor


@dataclass(frozen=True)
class BatchRecord:
    """What one micro-batch of one output's query did.

    ``watermark`` is the event-time watermark in effect *during* the batch (rows older
    than it were dropped by stateful operators; append-mode windows ending at or
    before it were emitted). ``watermark_after`` is the watermark Spark computes from
    this batch (max event time seen minus the delay, under the multiple-watermark
    policy): the next batch runs with it. Both are None for a query without
    ``withWatermark``; before any event time is seen the watermark is the epoch.

    ``input_records`` are the records piped into this query and consumed by this
    batch; a batch without any is a *no-data batch* (Spark runs one when the watermark
    moved enough to emit or evict, or when processing-time timeouts are pending).
    """

    output: str
    batch_id: int
    processing_time: datetime
    watermark: datetime | None
    watermark_after: datetime | None
    input_records: tuple[TestRecord, ...]
    output_records: tuple[TestRecord, ...]
    num_input_rows: int
    num_rows_dropped_by_watermark: int
    num_state_rows_total: int
    state_operators: tuple[Mapping[str, Any], ...] = field(default=(), repr=False)
    new_data: bool | None = None
    """True when the batch read new offsets from its sources (a *data batch*, also one
    of zero rows piped with ``pipe_empty_batch()``), False for a no-data batch; None
    when not known (a record built by hand: :attr:`is_data_batch` then looks at the
    input rows)."""
    input_event_times: tuple[datetime | None, ...] | None = field(default=None, repr=False)
    """Per input record, the event time the query's ``withWatermark`` column holds for it
    (None for a record it filtered out), where the query computes it (parsed from a Kafka
    value). Evaluated on the first read of this field while the driver is open: one
    Spark job per ``withWatermark`` for every batch of that output not evaluated yet
    (nothing is evaluated for a driver whose batches nobody reads this way; a
    batch's ``repr`` leaves it out). None where a record's ``timestamp`` is its event
    time, or when it was first read after the driver closed (or cannot be evaluated):
    then the records stand at their ``timestamp``."""
    late_records: tuple[LateRecord, ...] | None = field(default=None, repr=False)
    """The input records this batch dropped as late (see :class:`LateRecord`), or None
    when the driver cannot tell exactly for this query
    (:meth:`TopologyTestDriver.late_records` says why). Where the event time is
    computed in the query, evaluated on the first read while the driver is open, as
    :meth:`TopologyTestDriver.late_records` evaluates it (None when first read after the
    driver closed); a batch's ``repr`` leaves it out."""
    attempt: int = 1
    """Which run of this batch id of this output it is: 1, or 2 for the run Spark's
    recovery makes of a batch that crashed (``crash_before_commit``,
    ``crash_before_sink``): the same batch id, the same input, again."""
    crashed: str | None = None
    """``"before_sink"``, ``"before_commit"`` or ``"after_write_N"`` for an attempt the
    test crashed (see ``TopologyTestDriver.crash_before_commit`` and
    ``crash_after_write``); None for an attempt Spark committed.
    A crashed attempt has no progress (no state metrics; the watermark it ran with); its
    ``output_records`` are what stays written after the crash: the rows a Kafka or
    ``foreachBatch`` sink took before a crash before the commit, none otherwise. State
    reads, late and duplicate records and state-row checks count committed attempts
    only."""

    @property
    def state_metrics(self) -> tuple[StateOperatorMetrics, ...]:
        """Per stateful operator, in operator order: rows total/updated/removed, memory,
        late drops and (deduplications) duplicates dropped in this batch."""
        return tuple(
            StateOperatorMetrics(
                operator_name=str(op.get("operatorName", "")),
                rows_total=int(op.get("numRowsTotal", 0)),
                rows_updated=int(op.get("numRowsUpdated", 0)),
                rows_removed=int(op.get("numRowsRemoved", 0)),
                memory_used_bytes=int(op.get("memoryUsedBytes", 0)),
                rows_dropped_by_watermark=int(op.get("numRowsDroppedByWatermark", 0)),
                rows_dropped_as_duplicates=dropped_duplicates(op),
            )
            for op in self.state_operators
        )

    @property
    def num_output_rows(self) -> int:
        """How many records this batch wrote: its ``output_records`` (the timeline's
        ``out`` column). For a ``foreachBatch`` output, the rows the function was given
        and the Kafka records it wrote with ``DataFrame.write``."""
        return len(self.output_records)

    @property
    def is_data_batch(self) -> bool:
        """True for a batch that read new data (Spark's data batch, even of zero rows),
        False for a no-data batch run to move the watermark or fire timeouts."""
        return self.new_data if self.new_data is not None else self.num_input_rows > 0

    @property
    def output_values(self) -> list[Any]:
        return [record.value for record in self.output_records]


# After @dataclass: the field keeps no default, and __init__ stores through the descriptor.
setattr(BatchRecord, "input_records", _LazyRecordsField())  # noqa: B010
# These keep their default (None, in __init__'s signature) and store through it.
for _name in LAZY_FIELDS:
    setattr(BatchRecord, _name, _LazyField(_name))


def dropped_duplicates(operator: Mapping[str, Any]) -> int | None:
    """A deduplication's ``numDroppedDuplicateRows`` in one batch's progress of one
    operator; None where the operator reports no such metric."""
    found = (operator.get("customMetrics") or {}).get("numDroppedDuplicateRows")
    return None if found is None else int(found)
