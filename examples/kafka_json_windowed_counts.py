"""Example 1: JSON page views from Kafka -> per-page counts in 1-minute windows -> Kafka.

The pipeline is written against the shape of Spark's Kafka source and sink, so in
production ``t.kafka_input`` is ``spark.readStream.format("kafka")...load()`` and
``t.kafka_output`` is ``df.writeStream.format("kafka")...start()``. Windows close
(append mode) once the watermark, 30 s behind the latest view, passes their end.
"""

from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from pyspark_streamtest import Topology

VIEW_SCHEMA = "page STRING, user STRING, at TIMESTAMP"


def page_counts(views: DataFrame) -> DataFrame:
    """The production transformation: Kafka source rows in, Kafka sink rows out."""
    parsed = views.select(F.from_json(F.col("value").cast("string"), VIEW_SCHEMA).alias("v"))
    counts = (
        parsed.select("v.*")
        .where(F.col("page").isNotNull())  # unparsable views are skipped, not fatal
        .withWatermark("at", "30 seconds")
        .groupBy(F.window("at", "1 minute"), "page")
        .agg(F.count("*").alias("views"), F.approx_count_distinct("user").alias("users"))
    )
    return counts.select(
        F.col("page").alias("key"),
        F.to_json(F.struct(
            F.col("window.start").alias("window_start"), "page", "views", "users",
        )).alias("value"),
    )


def topology(t: Topology) -> None:
    views = t.kafka_input("page-views", partitions=3)
    t.kafka_output("page-counts", page_counts(views), output_mode="append")
