"""What a topology declares, as the driver keeps it: each input, each output, and
each output's query as built (its DataFrame, the sources it reads, what its plan says
about watermarks and late rows); and the checks of a declared name and schema."""

from __future__ import annotations

import re
from collections.abc import Callable, Collection
from dataclasses import dataclass, field
from typing import Union

from pyspark.sql import DataFrame
from pyspark.sql.types import StructType, _parse_datatype_string

from ..._spark.query.late_rows import LateOperator
from ..._spark.query.memory_stream import JsonMemoryStream
from ..._spark.query.plan import LateRule
from ...core.values import StructEncoder
from ...errors import TopologyError, hide_our_frames
from ...kafka.admission import ReadLimit
from ...kafka.shapes import KafkaInput, KafkaOutput
from ._batch_writes import BatchWrites
from ._landing import FileSource, LandingSource

__tracebackhide__ = hide_our_frames

_NAME = re.compile(r"^[A-Za-z0-9_.\-]+$")

Source = Union[JsonMemoryStream, LandingSource]  # noqa: UP007 (a runtime alias on 3.10)
"""An input's source in one query: a memory stream of JSON lines (rows piped), or
Spark's file source over a landing directory (files landed)."""


@dataclass(frozen=True)
class InputSpec:
    name: str
    schema: StructType
    timestamp_column: str | None
    encoder: StructEncoder
    kafka: KafkaInput | None = None
    partitions: int = 1
    """Source partitions (a Kafka input's are its topic's)."""
    key: str | None = None
    """The column whose value places a typed record (``partitions > 1``)."""
    left_out: str | None = None
    """Why no query reads it (``from_app(outputs=...)`` left its readers out), or None."""
    files: FileSource | None = None
    """A file input's reader and landing directory (None for an input of rows)."""
    read_limit: ReadLimit | None = None
    """A Kafka input's admission control (``maxOffsetsPerTrigger`` and its kin), shared
    by the inputs of one source; None takes every record piped before a trigger."""


@dataclass(frozen=True)
class _OutputSpec:
    name: str
    output_mode: str
    kafka: KafkaOutput | None = None
    foreach_batch: Callable[[DataFrame, int], object] | None = field(default=None, compare=False)
    """The user's ``foreachBatch`` function, run inside each batch after its rows are
    collected (not compared: a job may make a new closure on every call)."""
    trigger_ms: int | None = None
    """The query's own processing-time trigger interval (set by ``from_app``)."""
    writes: BatchWrites | None = field(default=None, compare=False)
    """What the ``foreachBatch`` function writes with ``DataFrame.write`` in each batch."""
    trigger: str = "processingTime"
    """``"processingTime"``, or ``"availableNow"`` / ``"once"`` for a query that reads
    the backlog it finds when it starts and then ends (set by ``from_app``)."""
    from_app: bool = False
    """A query of a job run by ``from_app`` (its next version comes by ``restart(app=)``)."""


@dataclass(frozen=True)
class BuiltOutput:
    spec: _OutputSpec
    dataframe: DataFrame
    streams: tuple[tuple[str, Source], ...]
    """(input name, source) for every input this output's query reads."""
    has_watermark: bool
    watermarks: tuple[tuple[str, str], ...] = ()
    late_rule: LateRule | str = "the query has no event-time watermark"
    """How its stateful operator drops late rows, or why that cannot be stated."""
    time_columns: tuple[tuple[str, str | None], ...] = ()
    """(input name, its event-time column) per input it reads."""
    runs_no_data_batches: bool = True
    """Spark may run a batch without new data (a watermark to act on, or processing-time
    timeouts and timers); False lets the driver stop after a data batch."""
    late_operators: tuple[LateOperator, ...] | str = ()
    """The stateful operators that drop late rows, for evaluating which records they
    drop when the event time is computed in the query; or why that cannot be told."""
    input_partitions: tuple[tuple[str, int], ...] = ()
    """(input name, its source partitions) per input it reads."""
    sources: tuple[str, ...] = ()
    """The input each of the query's sources reads, in Spark's source order (the order
    of the offset log's lines: the plan's streaming leaves, left to right)."""
    read_limits: tuple[tuple[str, ReadLimit], ...] = ()
    """(input name, its source's read limit) per input it reads with one."""
    rebuild: Callable[[], BuiltOutput] | None = field(default=None, compare=False)
    """The same output built again by the topology function, over sources of its own
    (the differential oracle runs it by Spark alone)."""

    @property
    def reads_files(self) -> bool:
        """The query reads a file input (Spark's file source over a landing directory)."""
        return any(isinstance(source, LandingSource) for _, source in self.streams)


def _check_name(name: object, kind: str) -> None:
    if not isinstance(name, str) or not _NAME.match(name):
        raise TopologyError(
            f"{kind} name {name!r} must be a non-empty string of letters, digits, '_', '-', '.'"
        )


def _as_struct(schema: object, name: str) -> StructType:
    if isinstance(schema, StructType):
        return schema
    if isinstance(schema, str):
        try:
            parsed = _parse_datatype_string(schema)
        except Exception as error:
            raise TopologyError(
                f"input {name!r}: cannot parse schema {schema!r}: {str(error).splitlines()[0]}"
            ) from None
        if isinstance(parsed, StructType):
            return parsed
    raise TopologyError(
        f"input {name!r}: schema must be a DDL string such as 'user STRING, ts TIMESTAMP' or a "
        f"StructType, got {schema!r}"
    )


def _assigned(name: str, partitions: int, assign: Collection[int] | None) -> frozenset[int] | None:
    """``assign`` as the set of partitions read, checked against the topic's count."""
    if assign is None:
        return None
    if isinstance(assign, (str, bytes)) or not isinstance(assign, Collection):
        raise TopologyError(
            f"kafka input {name!r}: assign must be a collection of partition numbers, "
            f"got {assign!r}")
    chosen = list(assign)
    wrong = [p for p in chosen
             if isinstance(p, bool) or not isinstance(p, int) or not 0 <= p < partitions]
    if wrong or not chosen:
        raise TopologyError(
            f"kafka input {name!r}: assign must name partitions in [0, {partitions}) (the "
            f"topic has {partitions}); got {list(assign)!r}. Spark fails a query that is "
            "assigned a partition the topic does not have, and reads nothing of none")
    return frozenset(chosen)
