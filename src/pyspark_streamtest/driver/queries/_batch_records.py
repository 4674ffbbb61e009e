"""The record of one attempt of a micro-batch, made from what the runner saw: Spark's
progress of a committed batch, or what an attempt the test crashed left written."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from typing import Any

from ..._spark.jvm import JavaObject
from ..._spark.query.start import last_progress
from ..._spark.query.watermark import progress_watermark
from ...core.records import BatchRecord, LazyComputed, TestRecord
from ...errors import hide_our_frames
from ...kafka.broker import Broker, kafka_output_records

__tracebackhide__ = hide_our_frames


def progress_of(jquery: JavaObject, output: str, batch_id: int) -> dict[str, Any]:
    """Spark's progress of batch ``batch_id``, the query's last."""
    progress = last_progress(jquery)
    if progress is None or progress.get("batchId") != batch_id:
        raise RuntimeError(
            f"internal error: no progress for batch {batch_id} of output {output!r} "
            f"(last progress: {None if progress is None else progress.get('batchId')})")
    return progress


def output_records(
    output: str, kafka_partitions: int | None, broker: Broker, values: Iterable[Any],
    batch_id: int, processing_time: datetime,
) -> tuple[TestRecord, ...]:
    """The records a batch wrote: a Kafka output's take their partitions and offsets from
    the broker (``kafka_partitions`` is None for any other output)."""
    if kafka_partitions is not None:
        return tuple(kafka_output_records(broker, kafka_partitions, values, batch_id,
                                          processing_time))
    return tuple(TestRecord(value, topic=output, batch_id=batch_id,
                            processing_time=processing_time) for value in values)


def written(
    spec: Any, broker: Broker, decode: Any, rows: Iterable[Any], batch_id: int,
    processing_time: datetime,
) -> tuple[TestRecord, ...]:
    """What a batch of the output ``spec`` wrote: its sink's ``rows``, decoded, and what
    a ``foreachBatch`` function wrote to Kafka with ``DataFrame.write``."""
    out = output_records(spec.name, spec.kafka.partitions if spec.kafka is not None else None,
                         broker, map(decode, rows), batch_id, processing_time)
    if spec.writes is not None and spec.writes.kafka_rows:
        out += kafka_output_records(broker, 1, spec.writes.take(), batch_id, processing_time)
    return out


def new_data(progress: Mapping[str, Any]) -> bool:
    """True when the batch of ``progress`` read new offsets of any source."""
    return any(source.get("startOffset") != source.get("endOffset")
               for source in progress.get("sources") or ())


def committed(
    output: str, batch_id: int, progress: Mapping[str, Any], *, processing_time: datetime,
    watermark_after: datetime | None, consumed: Any, outputs: tuple[TestRecord, ...],
    late: LazyComputed | None, attempt: int,
) -> BatchRecord:
    """The record of a batch Spark committed, from its progress (``watermark_after`` is
    None for a query without a watermark)."""
    operators: Sequence[Mapping[str, Any]] = tuple(progress.get("stateOperators") or ())
    return BatchRecord(
        output=output,
        batch_id=batch_id,
        processing_time=processing_time,
        watermark=progress_watermark(progress) if watermark_after is not None else None,
        watermark_after=watermark_after,
        input_records=consumed,  # built when read, as a tuple
        output_records=outputs,
        num_input_rows=int(progress.get("numInputRows", 0)),
        new_data=new_data(progress),
        num_rows_dropped_by_watermark=sum(int(op.get("numRowsDroppedByWatermark", 0))
                                          for op in operators),
        num_state_rows_total=sum(int(op.get("numRowsTotal", 0)) for op in operators),
        state_operators=tuple(operators),
        late_records=late,  # type: ignore[arg-type]  # evaluated when read
        attempt=attempt,
    )


def crashed(
    output: str, batch_id: int, kind: str, *, processing_time: datetime,
    watermark: datetime | None, read: tuple[TestRecord, ...],
    outputs: tuple[TestRecord, ...], attempt: int,
) -> BatchRecord:
    """The record of an attempt the test crashed (``kind``: ``"before_sink"`` or
    ``"before_commit"``): no progress, the watermark it ran with, what stays written."""
    return BatchRecord(
        output=output, batch_id=batch_id, processing_time=processing_time,
        watermark=watermark, watermark_after=watermark, input_records=read,
        output_records=outputs, num_input_rows=0, new_data=True,
        num_rows_dropped_by_watermark=0, num_state_rows_total=0, attempt=attempt,
        crashed=kind)
