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
A file input (``t.file_input``) is Spark's file source over a directory the driver owns:
it serves any number of queries, each reading the files from its own checkpoint.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping, Sequence
from contextlib import AbstractContextManager
from dataclasses import replace
from datetime import timedelta
from typing import Literal, cast

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.types import (
    StructField,
    StructType,
    TimestampNTZType,
    TimestampType,
)

from ..._spark.connect.session import ConnectLink
from ..._spark.jvm import Jvm
from ..._spark.query.late_rows import late_operators
from ..._spark.query.memory_stream import JsonMemoryStream
from ..._spark.query.plan import column_expr_id, late_rule_for, plan_facts, plan_shape
from ..._spark.query.start import processing_time_ms
from ...core.build_hook import build_hook
from ...core.time import duration_ms
from ...core.values import StructEncoder
from ...errors import (
    TopologyError,
    UnsupportedSchemaError,
    hide_our_frames,
)
from ...kafka.admission import DEFAULT_MAX_TRIGGER_DELAY_MS, ReadLimit
from ...kafka.serdes import (
    CREATE_TIME,
    KAFKA_HEADERS_TYPE,
    KAFKA_SOURCE_SCHEMA,
    LOG_APPEND_TIME,
    TimestampTypeName,
)
from ...kafka.shapes import KafkaInput, kafka_sink_frame
from ._batch_reads import KafkaTopics
from ._batch_writes import BatchWrites
from ._landing import file_source
from ._specs import BuiltOutput as BuiltOutput
from ._specs import InputSpec as InputSpec
from ._specs import Source, _as_struct, _assigned, _check_name
from ._specs import _OutputSpec as _OutputSpec

__tracebackhide__ = hide_our_frames

__all__ = ["BatchFunction", "OutputMode", "Topology", "TopologyFunction"]

OutputMode = Literal["append", "update", "complete"]
BatchFunction = Callable[[DataFrame, int], object]
"""What ``foreachBatch`` takes: called with each micro-batch's DataFrame and batch id."""
_MODES = ("append", "update", "complete")


class Topology:
    """Declares a topology's inputs and outputs; passed to the user's topology function.

    Not created by users: the :class:`~pyspark_streamtest.TopologyTestDriver` makes one
    and calls the topology function with it.
    """

    def __init__(self, spark: SparkSession, _jvm: Jvm, _link: ConnectLink | None = None,
                 _kafka_topics: KafkaTopics = dict) -> None:
        self._spark = spark
        self._jvm = _jvm
        self._kafka_topics = _kafka_topics
        """The driver's input topics as piped so far (a job's ``spark.read`` of Kafka)."""
        self._link = _link
        """With a Spark Connect session: its link to the server's session (inputs are
        handed out as Connect DataFrames, outputs planned by the server)."""
        self._inputs: dict[str, InputSpec] = {}
        self._streams: dict[str, Source] = {}
        self._outputs: dict[str, tuple[_OutputSpec, DataFrame]] = {}
        self._left_out_outputs: tuple[str, ...] = ()
        """The queries of a ``from_app`` job that ``from_app(outputs=...)`` leaves out."""
        self._job_writes = BatchWrites("main()", "the job's main()")
        """What a ``from_app`` job's ``main()`` wrote with ``DataFrame.write``."""
        self._job_writes.topics = _kafka_topics

    @property
    def spark(self) -> SparkSession:
        """The session the topology runs on (for static DataFrames, UDFs, conf): the
        driver's ``spark``, a Spark Connect session over Connect."""
        return self._spark

    def input(
        self,
        name: str,
        *,
        schema: str | StructType,
        timestamp_column: str | None = None,
        partitions: int = 1,
        key: str | None = None,
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

        ``partitions`` spreads the records of each step over that many source
        partitions, as a partitioned production source (a Kafka topic) would: Spark
        reads them as that many input partitions, in parallel tasks. A record goes to
        the partition of its ``key`` column's value, ``murmur2(UTF-8 text of the value)``
        as Kafka's default partitioner places a string key, or round-robin (starting at
        partition 0) without ``key=`` or with a null key. Results are those of one
        partition for order-insensitive operators; state is spread by the shuffle
        partitions (``sql_conf={"spark.sql.shuffle.partitions": ...}``), not by these.
        ``TestRecord.partition`` of a piped record says where it went.
        """
        _check_name(name, "input")
        struct = _as_struct(schema, name)
        if isinstance(partitions, bool) or not isinstance(partitions, int) or partitions < 1:
            raise TopologyError(
                f"input {name!r}: partitions must be a positive int, got {partitions!r}")
        if key is not None and (partitions == 1 or key not in struct.fieldNames()):
            raise TopologyError(
                f"input {name!r}: key={key!r} " + (
                    "places records over partitions: give partitions=N > 1 too"
                    if partitions == 1 else
                    f"is not a column of the schema ({struct.simpleString()})"))
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
        return self._declare_input(name, struct, timestamp_column, None, partitions, key)

    def kafka_input(
        self,
        name: str,
        *,
        partitions: int = 1,
        include_headers: bool = False,
        timestamp_type: TimestampTypeName = "CreateTime",
        max_offsets_per_trigger: int | None = None,
        min_offsets_per_trigger: int | None = None,
        max_trigger_delay: timedelta | None = None,
        assign: Collection[int] | None = None,
    ) -> DataFrame:
        """Declare a Kafka topic ``name`` as input and return what
        ``spark.readStream.format("kafka").option("subscribe", name).load()`` returns.

        The columns are exactly those of Spark's Kafka source: ``key`` and ``value``
        (binary; a null ``value`` is a tombstone), ``topic``, ``partition``, ``offset``,
        ``timestamp``, ``timestampType``, and ``headers``
        (``array<struct<key: string, value: binary>>``) when ``include_headers`` is
        true (Spark's ``includeHeaders`` option). Pipeline code written for the Kafka
        source runs on it unchanged: cast or parse ``value`` as it does in production.

        ``partitions`` is the topic's partition count (records are spread over them by
        key, as by Kafka's default partitioner; see :mod:`pyspark_streamtest.kafka`).
        ``timestamp_type`` is the topic's ``message.timestamp.type``: ``"CreateTime"``
        (``timestampType`` 0, the timestamp is the record's own, given when piped) or
        ``"LogAppendTime"`` (1, the driver's processing time when the record is piped).
        The ``timestamp`` column is the event time a ``withWatermark("timestamp", ...)``
        reads.

        ``max_offsets_per_trigger``, ``min_offsets_per_trigger`` and
        ``max_trigger_delay`` are the Kafka source's ``maxOffsetsPerTrigger``,
        ``minOffsetsPerTrigger`` and ``maxTriggerDelay`` (default 15 minutes), applied
        as Spark's Kafka source applies them at every trigger: a batch takes at most
        ``max_offsets_per_trigger`` records, shared over the partitions by their
        backlog (``limit * backlog / total``, rounded down, up when below 1); a trigger
        with fewer than ``min_offsets_per_trigger`` new records is skipped until
        ``max_trigger_delay`` has passed since the last trigger that was not (measured
        on the driver's processing time). What a batch leaves waits for the next
        trigger. See :mod:`pyspark_streamtest.kafka.admission`.

        ``assign`` lists the partitions the queries read, as the Kafka source's
        ``assign`` option does (``{"name": [0, 2]}``): a record piped to another
        partition still takes its offset there (a bounded ``spark.read`` of the topic
        sees it) but no query reads it, and read limits share out the backlog of the
        assigned partitions only. None (the default) reads every partition, as
        ``subscribe`` does.
        """
        _check_name(name, "input")
        if isinstance(partitions, bool) or not isinstance(partitions, int) or partitions < 1:
            raise TopologyError(
                f"kafka input {name!r}: partitions must be a positive int, got {partitions!r}"
            )
        if timestamp_type not in _TIMESTAMP_TYPES:
            raise TopologyError(
                f"kafka input {name!r}: timestamp_type must be 'CreateTime' or "
                f"'LogAppendTime', got {timestamp_type!r}"
            )
        delay_ms = DEFAULT_MAX_TRIGGER_DELAY_MS if max_trigger_delay is None else duration_ms(
            max_trigger_delay, "max_trigger_delay", allow_zero=True)
        try:
            limit = ReadLimit(max_offsets_per_trigger, min_offsets_per_trigger, delay_ms,
                              source=name)
        except TopologyError as error:
            raise TopologyError(f"kafka input {name!r}: {error}") from None
        struct = KAFKA_SOURCE_SCHEMA
        if include_headers:
            struct = StructType([*struct.fields, StructField("headers", KAFKA_HEADERS_TYPE)])
        kafka = KafkaInput(partitions, bool(include_headers), _TIMESTAMP_TYPES[timestamp_type],
                           _assigned(name, partitions, assign))
        return self._declare_input(name, struct, "timestamp", kafka,
                                   read_limit=limit if limit.limits else None)

    def file_input(
        self,
        name: str,
        *,
        format: str,
        schema: str | StructType | None = None,
        options: Mapping[str, str | int | float | bool] | None = None,
    ) -> DataFrame:
        """Declare input ``name`` as files landing in a directory and return what
        ``spark.readStream.format(format).options(**options).schema(schema)
        .load(directory)`` returns: Spark's own file source, over a temporary directory
        of this input's (deleted when the driver closes or resets).

        The test lands files with the input handle's
        :meth:`~pyspark_streamtest.TestInputTopic.land_file` and
        :meth:`~pyspark_streamtest.TestInputTopic.land_lines`, not rows. At each
        trigger Spark lists the directory and reads the files it has not read yet with
        the reader's options (``mode``, ``columnNameOfCorruptRecord``, ``multiLine``,
        ``header``, ``maxFilesPerTrigger``, ``latestFirst``...): parsing and the files
        per batch are Spark's. ``schema`` is the reader's (a streaming file source needs
        one, but for ``text``); ``options`` must not hold ``path``. A reader Spark
        refuses raises :class:`~pyspark_streamtest.errors.TopologyError` with Spark's
        message. See the guide "Land files as they arrive".
        """
        self._check_new_input(name)
        source, files = file_source(self._jvm, name, format, schema, options)
        struct = source.dataframe.schema
        # Files are never piped, so no row encoder is needed: an empty one stands in.
        self._inputs[name] = InputSpec(name, struct, None, StructEncoder(StructType([])),
                                        files=files)
        self._streams[name] = source
        if self._link is not None:
            return self._link.to_connect(source.dataframe)  # type: ignore[no-any-return]
        return source.dataframe

    def _check_new_input(self, name: str) -> None:
        _check_name(name, "input")
        if name in self._inputs:
            raise TopologyError(f"input {name!r} is declared twice; declare it once and reuse "
                                "the DataFrame")

    def _declare_input(
        self, name: str, struct: StructType, timestamp_column: str | None,
        kafka: KafkaInput | None, partitions: int = 1, key: str | None = None,
        read_limit: ReadLimit | None = None,
    ) -> DataFrame:
        self._check_new_input(name)
        try:
            encoder = StructEncoder(struct)
        except UnsupportedSchemaError as error:
            raise UnsupportedSchemaError(f"input {name!r}: {error}") from None
        stream = JsonMemoryStream(self._jvm, struct)
        self._inputs[name] = InputSpec(name, struct, timestamp_column, encoder, kafka,
                                        kafka.partitions if kafka else partitions, key,
                                        read_limit=read_limit)
        self._streams[name] = stream
        if self._link is not None:
            return self._link.to_connect(stream.dataframe)  # type: ignore[no-any-return]
        return stream.dataframe

    def output(self, name: str, df: DataFrame, *, output_mode: OutputMode = "append") -> None:
        """Declare output ``name``: ``df`` runs as one streaming query in ``output_mode``
        (``"append"``, ``"update"`` or ``"complete"``, as in ``writeStream.outputMode``)."""
        output_mode = self._check_output(name, df, output_mode)
        self._outputs[name] = (_OutputSpec(name, output_mode), df)

    def foreach_batch(
        self,
        name: str,
        df: DataFrame,
        function: BatchFunction,
        *,
        output_mode: OutputMode = "append",
    ) -> None:
        """Declare output ``name``: ``df`` runs as a query whose sink is
        ``writeStream.foreachBatch(function)``.

        As in Spark, ``function(batch_df, batch_id)`` runs on the query's stream thread
        inside every micro-batch, no-data batches included (then ``batch_df`` is empty),
        before the batch is committed; an exception it raises fails the batch (the driver
        raises :class:`~pyspark_streamtest.errors.StreamingQueryFailedError`, and
        :meth:`~pyspark_streamtest.TopologyTestDriver.restart` retries the same batch id,
        as Spark's recovery does). The driver also keeps the batch's rows, so the output
        can be read like any other; reading them is one extra Spark job per batch, before
        ``function`` is called. Tests usually assert on the function's side effects.

        Inside the function, ``DataFrame.write`` is seen by the driver: a
        ``write.format("kafka")...save()`` becomes records of its topic (Spark's Kafka
        sink's columns and rules; read them with
        :meth:`TopologyTestDriver.create_output_topic`), every other write runs for
        real, and each is counted, so
        :meth:`~pyspark_streamtest.TopologyTestDriver.crash_after_write` can fail the
        batch between two of them.
        """
        output_mode = self._check_output(name, df, output_mode)
        if not callable(function):
            raise TopologyError(
                f"output {name!r}: the foreachBatch function must be callable "
                f"(batch_df, batch_id), got {type(function).__name__}"
            )
        writes = BatchWrites(name)
        function = writes.wrap(function)
        if self._link is not None:  # called with a Connect DataFrame, as over Connect
            function = self._link.batch_function(function)
        self._outputs[name] = (
            _OutputSpec(name, output_mode, foreach_batch=function, writes=writes), df)

    def kafka_output(
        self,
        name: str,
        df: DataFrame,
        *,
        topic: str | None = None,
        partitions: int = 1,
        output_mode: OutputMode = "append",
    ) -> None:
        """Declare output ``name``: ``df`` is written as Spark's Kafka sink writes it.

        ``df`` needs the columns Spark's Kafka sink needs: ``value`` (string or binary,
        null for a tombstone) and optionally ``key`` (string or binary), ``topic``
        (string), ``partition`` (int) and ``headers``
        (``array<struct<key: string, value: binary>>``); other columns are ignored, as
        by Spark. Strings are written as their UTF-8 bytes.

        Each row goes to the topic in its ``topic`` column, unless ``topic=`` is given
        (Spark's ``topic`` option, which overrides the column); without either, rows go
        to the topic named ``name``. A null ``topic`` fails the query, as in Spark. A row
        with a ``partition`` goes there (it must be below ``partitions``: a real
        producer fails otherwise, and so does the query); without one, keyed rows are
        placed by Kafka's default partitioner over ``partitions`` and unkeyed rows
        round-robin. Each record's timestamp is the processing time of the batch that
        wrote it (Kafka's producer stamps the time it sends). Read the topics with
        :meth:`TopologyTestDriver.create_output_topic` and their names with
        :meth:`TopologyTestDriver.produced_topic_names`.
        """
        output_mode = self._check_output(name, df, output_mode)
        if isinstance(partitions, bool) or not isinstance(partitions, int) or partitions < 1:
            raise TopologyError(
                f"kafka output {name!r}: partitions must be a positive int, got {partitions!r}"
            )
        if topic is not None:
            _check_name(topic, "topic")
        shaped, kafka = kafka_sink_frame(name, df, topic, partitions)
        self._outputs[name] = (_OutputSpec(name, output_mode, kafka), shaped)

    def _check_output(self, name: str, df: DataFrame, output_mode: str) -> OutputMode:
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
        return cast(OutputMode, build_hook().output_mode(name, output_mode))

    def _set_trigger(self, name: str, interval_ms: int | None,
                     trigger: str = "processingTime") -> None:
        """Give output ``name`` its query's own trigger (``from_app``): a processing-time
        interval, or ``"availableNow"`` / ``"once"``."""
        spec, df = self._outputs[name]
        interval_ms = build_hook().trigger_ms(name, interval_ms)
        self._outputs[name] = (
            replace(spec, trigger_ms=interval_ms, trigger=trigger, from_app=True), df)

    def _share_read_limit(self, names: Sequence[str]) -> None:
        """Make inputs ``names`` one source for admission control (``from_app``: the
        topics of one Kafka ``readStream`` share its ``maxOffsetsPerTrigger``)."""
        source = ",".join(names)
        for name in names:
            spec = self._inputs[name]
            if spec.read_limit is not None:
                self._inputs[name] = replace(spec, read_limit=replace(spec.read_limit,
                                                                      source=source))

    def _leave_out_outputs(self, names: tuple[str, ...]) -> None:
        """Note the queries of a ``from_app`` job that do not run."""
        self._left_out_outputs = names

    def _leave_out_input(self, name: str, why: str) -> None:
        """Mark input ``name`` as read by no query that runs (``from_app``): making a
        handle to pipe into it raises ``why``."""
        self._inputs[name] = replace(self._inputs[name], left_out=why)

    def _job_io(self) -> AbstractContextManager[None]:
        """While open (``from_app``: the job's ``main()``), ``spark.read.format("kafka")``
        reads the driver's topics and ``df.write`` is recorded: a Kafka write becomes
        records of its topic when the queries start, other writes run for real."""
        return self._job_writes.seen_in(self._spark)

    def _classic(self, df: DataFrame) -> DataFrame:
        """``df`` as the JVM runs it (a Connect DataFrame planned by the server)."""
        return df if self._link is None else self._link.to_classic(df)

    def _processing_time_ms(self, interval: str) -> int:
        """``trigger(processingTime=interval)``'s interval, as Spark parses it; a
        ValueError with Spark's message for one it refuses."""
        return processing_time_ms(self._jvm, interval)

    # --- used by the driver -----------------------------------------------------------------
    def _output_shapes(self) -> dict[str, str]:
        """Each output's mode, trigger and plan, as text two builds of the same query
        share (what a build hook compares)."""
        return {name: f"{spec.output_mode} {spec.trigger_ms}\n"
                      f"{plan_shape(self._classic(df))}"
                for name, (spec, df) in self._outputs.items()}

    def _built_output(self, name: str) -> BuiltOutput:
        spec, df = self._outputs[name]
        df = self._classic(df)
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
        files = [n for n in used if self._inputs[n].files is not None]
        untraced = (f"it reads files landed in input {files[0]!r}, and the rows of a landed "
                    "file are not traced back to it" if files else None)
        return BuiltOutput(
            spec,
            df,
            tuple((input_name, self._streams[input_name]) for input_name in used),
            facts.has_event_time_watermark,
            facts.watermarks,
            untraced or late_rule_for(spec.output_mode, df, facts, {
                column_expr_id(self._streams[n].dataframe, column) for n in used
                if (column := self._inputs[n].timestamp_column) is not None}),
            tuple((n, self._inputs[n].timestamp_column) for n in used),
            facts.has_event_time_watermark or facts.has_grouped_state,
            (untraced or late_operators(df, spec.output_mode == "complete"))
            if facts.has_event_time_watermark else (),
            tuple((n, self._inputs[n].partitions) for n in used),
            # plan_facts walks right to left: its leaves are in reverse source order
            tuple(by_id[i] for i in reversed(facts.streaming_leaf_expr_ids)),
            read_limits=tuple((n, limit) for n in used
                              if (limit := self._inputs[n].read_limit) is not None),
        )


TopologyFunction = Callable[[Topology], None]

_TIMESTAMP_TYPES = {"CreateTime": CREATE_TIME, "LogAppendTime": LOG_APPEND_TIME}

