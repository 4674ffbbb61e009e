"""A production job as teams write it (issue 58's trial), tested unchanged through
``from_app`` in ``examples/test_app_events_backfill_job.py``.

Kafka in by pattern with a read limit and headers; JSON parsed, with unparsable records
sent to a dead-letter topic; events deduplicated within the watermark and counted per
minute (update mode) back to Kafka; a lag monitor whose ``foreachBatch`` writes the
batch's lag to Kafka after a bounded read of the topics. ``--trigger availableNow``
runs it as a backfill, ``--trigger "1 minute"`` (the default) as a stream. It knows
nothing of the test library.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

SCHEMA = "event_id STRING, user STRING, kind STRING, at TIMESTAMP"
BROKERS = "kafka-1.prod:9092"


def publish_lag(batch: DataFrame, batch_id: int) -> None:
    """What the topics hold against what this batch read, to the ``consumer-lag`` topic,
    then the batch's ids to ``audit`` (two writes: a crash between them is the case the
    job must survive)."""
    spark = batch.sparkSession
    held = (spark.read.format("kafka").option("kafka.bootstrap.servers", BROKERS)
            .option("subscribePattern", "app-events-.*")
            .option("startingOffsets", "earliest").option("endingOffsets", "latest").load())
    lag = held.count() - batch.count()
    (spark.createDataFrame([(str(batch_id), str(lag))], "key STRING, value STRING")
     .write.format("kafka").option("kafka.bootstrap.servers", BROKERS)
     .option("topic", "consumer-lag").save())
    (batch.select(F.col("key"), F.col("value")).write.format("kafka")
     .option("kafka.bootstrap.servers", BROKERS).option("topic", "audit").save())


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="app-events")
    parser.add_argument("--trigger", default="1 minute",
                        help='"availableNow" for a backfill, or a processing-time interval')
    parser.add_argument("--max-offsets", type=int, default=500)
    args = parser.parse_args(argv)

    spark = SparkSession.builder.appName("app-events").getOrCreate()
    raw = (spark.readStream.format("kafka").option("kafka.bootstrap.servers", BROKERS)
           .option("subscribePattern", "app-events-.*")
           .option("startingOffsets", "earliest")
           .option("maxOffsetsPerTrigger", args.max_offsets)
           .option("includeHeaders", "true").load())
    parsed = raw.select("key", "value", "headers",
                        F.from_json(F.col("value").cast("string"), SCHEMA).alias("e"))

    def start(writer):  # the job's trigger, from its command line
        if args.trigger == "availableNow":
            return writer.trigger(availableNow=True).start()
        return writer.trigger(processingTime=args.trigger).start()

    # Spark's from_json gives a malformed value a struct of nulls, not a null struct: a
    # dead letter is a value without an event id (F.col("e").isNull() catches none; the
    # test of the dead letters showed it).
    dead = parsed.where(F.col("e.event_id").isNull()).select("key", "value", "headers")
    start(dead.writeStream.format("kafka").option("kafka.bootstrap.servers", BROKERS)
          .option("topic", "app-events-dlq").queryName("dead_letters")
          .option("checkpointLocation", "s3a://prod/checkpoints/dlq"))

    events = (parsed.where(F.col("e.event_id").isNotNull()).select("e.*")
              .withWatermark("at", "2 minutes")
              .dropDuplicatesWithinWatermark(["event_id"]))
    per_minute = (events.groupBy(F.window("at", "1 minute"), "kind").count()
                  .select(F.col("kind").alias("key"),
                          F.to_json(F.struct(F.col("window.start").alias("minute"),
                                             "count")).alias("value")))
    start(per_minute.writeStream.format("kafka").outputMode("update")
          .option("kafka.bootstrap.servers", BROKERS).option("topic", "events-per-minute")
          .queryName("per_minute").option("checkpointLocation", "s3a://prod/checkpoints/pm"))
    start(raw.writeStream.foreachBatch(publish_lag).queryName("lag")
          .option("checkpointLocation", "s3a://prod/checkpoints/lag"))
    spark.streams.awaitAnyTermination()


if __name__ == "__main__":
    main()
