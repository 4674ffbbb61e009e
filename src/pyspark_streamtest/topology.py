"""The topology: a user function that declares named inputs and named outputs.

.. code-block:: python

    def clicks_per_user(t: Topology) -> None:
        clicks = t.input("clicks", schema="user STRING, url STRING, ts TIMESTAMP",
                         timestamp_column="ts")
        counts = (clicks.withWatermark("ts", "10 seconds")
                        .groupBy(F.window("ts", "10 seconds"), "user").count())
        t.output("counts", counts, output_mode="append")

Each output becomes one streaming query. Spark's memory source is single-consumer,
so when several outputs read the same input, the driver calls the function once more
for each such output and gives every query its own source, fed identical rows. The
function must therefore be deterministic: the same inputs and outputs on every call.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.types import StructType, TimestampNTZType, TimestampType, _parse_datatype_string

from ._spark.jvm import Jvm
from ._spark.memory_stream import JsonMemoryStream
from ._spark.plan import plan_facts
from ._values import StructEncoder
from .errors import TopologyError, UnsupportedSchemaError

__all__ = ["OutputMode", "Topology", "TopologyFunction"]

OutputMode = Literal["append", "update", "complete"]
_MODES = ("append", "update", "complete")
_NAME = re.compile(r"^[A-Za-z0-9_.\-]+$")


@dataclass(frozen=True)
class _InputSpec:
    name: str
    schema: StructType
    timestamp_column: str | None
    encoder: StructEncoder


@dataclass(frozen=True)
class _OutputSpec:
    name: str
    output_mode: str


@dataclass(frozen=True)
class _BuiltOutput:
    spec: _OutputSpec
    dataframe: DataFrame
    streams: tuple[tuple[str, JsonMemoryStream], ...]
    """(input name, source) for every input this output's query reads."""
    has_watermark: bool


class Topology:
    """Declares a topology's inputs and outputs; passed to the user's topology function.

    Not created by users: the :class:`~pyspark_streamtest.TopologyTestDriver` makes one
    and calls the topology function with it.
    """

    def __init__(self, spark: SparkSession, _jvm: Jvm) -> None:
        self._spark = spark
        self._jvm = _jvm
        self._inputs: dict[str, _InputSpec] = {}
        self._streams: dict[str, JsonMemoryStream] = {}
        self._outputs: dict[str, tuple[_OutputSpec, DataFrame]] = {}

    @property
    def spark(self) -> SparkSession:
        """The session the topology runs on (for static DataFrames, UDFs, conf)."""
        return self._spark

    def input(
        self,
        name: str,
        *,
        schema: str | StructType,
        timestamp_column: str | None = None,
    ) -> DataFrame:
        """Declare input ``name`` and return it as a streaming DataFrame.

        ``schema`` is a DDL string (``"user STRING, ts TIMESTAMP"``) or a StructType.
        ``timestamp_column`` names a TIMESTAMP column that holds each record's event
        time: piping with ``timestamp=`` (or the topic's auto-advancing record time)
        fills it when the value lacks it. It does not add a watermark; call
        ``withWatermark`` on the DataFrame as production code does.

        All fields of the returned DataFrame are nullable (Spark's JSON parsing, which
        carries rows in, makes them so); non-nullable fields are still checked when
        values are piped.
        """
        _check_name(name, "input")
        if name in self._inputs:
            raise TopologyError(f"input {name!r} is declared twice; declare it once and reuse "
                                "the DataFrame")
        struct = _as_struct(schema, name)
        if timestamp_column is not None:
            field = next((f for f in struct.fields if f.name == timestamp_column), None)
            if field is None:
                raise TopologyError(
                    f"input {name!r}: timestamp_column {timestamp_column!r} is not in the schema "
                    f"({struct.simpleString()})"
                )
            if not isinstance(field.dataType, TimestampType) or isinstance(
                field.dataType, TimestampNTZType
            ):
                raise TopologyError(
                    f"input {name!r}: timestamp_column {timestamp_column!r} is "
                    f"{field.dataType.simpleString()}; it must be TIMESTAMP"
                )
        try:
            encoder = StructEncoder(struct)
        except UnsupportedSchemaError as error:
            raise UnsupportedSchemaError(f"input {name!r}: {error}") from None
        stream = JsonMemoryStream(self._jvm, struct)
        self._inputs[name] = _InputSpec(name, struct, timestamp_column, encoder)
        self._streams[name] = stream
        return stream.dataframe

    def output(self, name: str, df: DataFrame, *, output_mode: OutputMode = "append") -> None:
        """Declare output ``name``: ``df`` runs as one streaming query in ``output_mode``
        (``"append"``, ``"update"`` or ``"complete"``, as in ``writeStream.outputMode``)."""
        _check_name(name, "output")
        if name in self._outputs:
            raise TopologyError(f"output {name!r} is declared twice")
        if output_mode not in _MODES:
            raise TopologyError(
                f"output {name!r}: output_mode {output_mode!r} is not one of {', '.join(_MODES)}"
            )
        if not isinstance(df, DataFrame):
            raise TopologyError(
                f"output {name!r} must be a DataFrame, got {type(df).__name__}"
            )
        self._outputs[name] = (_OutputSpec(name, output_mode), df)

    # --- used by the driver -----------------------------------------------------------------
    def _built_output(self, name: str) -> _BuiltOutput:
        spec, df = self._outputs[name]
        facts = plan_facts(df)
        if not facts.is_streaming:
            raise TopologyError(
                f"output {name!r} is not a streaming DataFrame; build it from t.input(...)"
            )
        by_id = {stream.raw_expr_id: input_name for input_name, stream in self._streams.items()}
        used: list[str] = []
        for expr_id, leaf in zip(
            facts.streaming_leaf_expr_ids, facts.streaming_leaf_names, strict=True
        ):
            input_name = by_id.get(expr_id)
            if input_name is None:
                raise TopologyError(
                    f"output {name!r} reads a streaming source the driver does not control "
                    f"({leaf}); declare every stream the topology reads with t.input(...) "
                    "(or t.kafka_input(...))"
                )
            if input_name not in used:
                used.append(input_name)
        return _BuiltOutput(
            spec,
            df,
            tuple((input_name, self._streams[input_name]) for input_name in used),
            facts.has_event_time_watermark,
        )


TopologyFunction = Callable[[Topology], None]


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


def build_topology(
    function: TopologyFunction, spark: SparkSession, jvm: Jvm
) -> tuple[dict[str, _InputSpec], list[_BuiltOutput]]:
    """Run the topology function and give every output query its own sources."""
    first = _call(function, spark, jvm)
    if not first._outputs:
        raise TopologyError(
            "the topology function declared no output; call t.output(name, df) at least once"
        )
    signature = _signature(first)
    claimed: set[str] = set()
    built: list[_BuiltOutput] = []
    for name in first._outputs:
        output = first._built_output(name)
        reads = {input_name for input_name, _ in output.streams}
        if reads & claimed:  # another query already consumes one of these sources
            again = _call(function, spark, jvm)
            if _signature(again) != signature:
                raise TopologyError(
                    "the topology function declared different inputs or outputs when called "
                    "again; it must declare the same ones on every call (it is called once "
                    "per output that shares an input)"
                )
            output = again._built_output(name)
        claimed |= reads
        built.append(output)
    return first._inputs, built


def _call(function: TopologyFunction, spark: SparkSession, jvm: Jvm) -> Topology:
    topology = Topology(spark, jvm)
    function(topology)
    return topology


def _signature(t: Topology) -> tuple[object, ...]:
    return (
        tuple((s.name, s.schema.json(), s.timestamp_column) for s in t._inputs.values()),
        tuple(spec for spec, _ in t._outputs.values()),
    )
