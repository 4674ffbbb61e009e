"""What a topology's Kafka inputs and outputs are: the source's settings and the sink's
columns, checked and projected as Spark's Kafka sink does."""

from __future__ import annotations

from dataclasses import dataclass

from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql.types import ArrayType, BinaryType, IntegerType, StringType, StructType

from ..errors import TopologyError, hide_our_frames
from .serdes import KAFKA_HEADERS_TYPE

__tracebackhide__ = hide_our_frames


@dataclass(frozen=True)
class KafkaInput:
    partitions: int
    include_headers: bool
    timestamp_type: int  # 0 CreateTime, 1 LogAppendTime
    assigned: frozenset[int] | None = None
    """The partitions the queries read (Kafka's ``assign``); None: every partition."""


@dataclass(frozen=True)
class KafkaOutput:
    partitions: int
    topic: str | None
    """The ``topic`` option: overrides any ``topic`` column."""
    has_key: bool
    has_partition: bool
    has_headers: bool
    has_topic_column: bool

    @property
    def routes_by_column(self) -> bool:
        """Rows go to the topic their ``topic`` column names."""
        return self.topic is None and self.has_topic_column



def kafka_sink_frame(
    name: str, df: DataFrame, topic: str | None, partitions: int
) -> tuple[DataFrame, KafkaOutput]:
    """Check ``df`` as Spark's Kafka sink does and project it to the sink's columns.

    Failures Spark's sink (or Kafka's producer) raises while writing a row, a null
    topic and a partition out of range, are raised inside the query too
    (``raise_error``), so the query fails in the batch that writes such a row.
    """
    fields = {f.name: f.dataType for f in df.schema.fields}

    def bad_type(column: str, wanted: str) -> TopologyError:
        return TopologyError(
            f"kafka output {name!r}: the {column!r} column is "
            f"{fields[column].simpleString()}; Spark's Kafka sink needs {wanted}"
        )

    if "value" not in fields:
        raise TopologyError(
            f"kafka output {name!r}: Spark's Kafka sink needs a 'value' column (string or "
            f"binary); the DataFrame has {', '.join(fields) or 'no columns'}. Select e.g. "
            "F.to_json(F.struct(...)).alias('value')"
        )
    text_or_bytes = (StringType, BinaryType)
    if not isinstance(fields["value"], text_or_bytes):
        raise bad_type("value", "string or binary")
    if "key" in fields and not isinstance(fields["key"], text_or_bytes):
        raise bad_type("key", "string or binary")
    if "topic" in fields and not isinstance(fields["topic"], StringType):
        raise bad_type("topic", "string")
    if "partition" in fields and not isinstance(fields["partition"], IntegerType):
        raise bad_type("partition", "int")
    if "headers" in fields and fields["headers"] != KAFKA_HEADERS_TYPE and not (
        isinstance(fields["headers"], ArrayType)
        and isinstance(fields["headers"].elementType, StructType)
        and [(f.name, f.dataType) for f in fields["headers"].elementType.fields]
        == [("key", StringType()), ("value", BinaryType())]
    ):
        raise bad_type("headers", "array<struct<key: string, value: binary>>")

    if topic is not None:
        topic_col = F.lit(topic)
    elif "topic" in fields:
        topic_col = F.when(
            F.col("topic").isNull(),
            F.raise_error(F.lit(
                f"kafka output {name!r}: a row has a null 'topic'; give every row a topic, "
                "or set topic= on kafka_output"
            )),
        ).otherwise(F.col("topic"))
    else:
        topic_col = F.lit(name)
    columns = [
        (F.col("key") if "key" in fields else F.lit(None).cast("binary")).alias("key"),
        F.col("value").alias("value"),
        topic_col.cast("string").alias("topic"),
    ]
    if "partition" in fields:
        part = F.col("partition")
        columns.append(
            F.when(
                part.isNotNull() & ((part < 0) | (part >= partitions)),
                F.raise_error(F.concat(
                    F.lit(f"kafka output {name!r}: partition "), part.cast("string"),
                    F.lit(f" is out of range [0, {partitions}); declare kafka_output(..., "
                          "partitions=N) with enough partitions"),
                )),
            ).otherwise(part).cast("int").alias("partition")
        )
    if "headers" in fields:
        columns.append(F.col("headers").alias("headers"))
    kafka = KafkaOutput(
        partitions=partitions,
        topic=topic,
        has_key="key" in fields,
        has_partition="partition" in fields,
        has_headers="headers" in fields,
        has_topic_column="topic" in fields,
    )
    return df.select(*columns), kafka
