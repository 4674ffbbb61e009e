"""Records as Spark DataFrames, for DataFrame assertions (chispa,
``pyspark.testing.assertDataFrameEqual``) on what outputs wrote."""

from __future__ import annotations

from collections.abc import Sequence

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.types import StructField, StructType

from ..core.records import TestRecord
from ..errors import hide_our_frames
from ..kafka.serdes import KAFKA_HEADERS_TYPE, KAFKA_SOURCE_SCHEMA

__tracebackhide__ = hide_our_frames

__all__ = ["KAFKA_TOPIC_SCHEMA", "records_frame"]

KAFKA_TOPIC_SCHEMA = StructType(
    [*KAFKA_SOURCE_SCHEMA.fields, StructField("headers", KAFKA_HEADERS_TYPE)]
)
"""A Kafka topic read back: Spark's Kafka source columns with ``headers``."""

_CREATE_TIME = 0  # Spark's Kafka sink leaves the producer's CreateTime on each record


def records_frame(
    spark: SparkSession, schema: StructType | None, records: Sequence[TestRecord]
) -> DataFrame:
    """``records`` as a DataFrame: a plain output's rows with the output's ``schema``, or,
    with ``schema`` None, a Kafka topic's records (key and value as the bytes written)
    as Spark's Kafka source would read them back (:data:`KAFKA_TOPIC_SCHEMA`)."""
    if schema is not None:
        return spark.createDataFrame([r.value for r in records], schema)
    rows = [
        (r.key, r.value, r.topic, r.partition, r.offset, r.timestamp, _CREATE_TIME,
         [(k, v) for k, v in r.headers])
        for r in records
    ]
    return spark.createDataFrame(rows, KAFKA_TOPIC_SCHEMA)
