"""Example 8: an ad-attribution job written for Spark Connect, tested with no edits.

This file knows nothing of pyspark-streamtest. Impressions land as JSON files in a
directory (at most two files a batch; malformed lines dropped), clicks come from Kafka.
Each is deduplicated within a 10-minute watermark, the impressions LEFT OUTER joined
with the clicks on them within 30 minutes, and the result joined with a static Parquet
table of campaigns. Two queries, on a 1-minute trigger, each with its own checkpoint:

* the attributions, appended to a Parquet table partitioned by campaign;
* per hour and campaign, the impressions and clicks of each batch, added to a SQLite
  database by a ``foreachBatch`` function, once per batch id (Spark's recovery may run
  a batch twice).

``main()`` blocks until a query stops, as a job submitted to a cluster does.
``examples/test_ad_attribution_job.py`` tests it with ``TopologyTestDriver.from_app``.
"""

from __future__ import annotations

import os
import sqlite3

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

BOOTSTRAP = os.environ.get("KAFKA_BOOTSTRAP", "kafka-1.ads.internal:9092")
IMPRESSION = "imp_id STRING, campaign_id STRING, shown_at TIMESTAMP"
CLICK = "click_id STRING, imp_id STRING, clicked_at STRING"


def setting(name: str, default: str) -> str:
    return os.environ.get(name, default)


def impressions(spark: SparkSession) -> DataFrame:
    """The impressions in the landed files, each once within the watermark."""
    return (spark.readStream.format("json").schema(IMPRESSION)
            .option("mode", "DROPMALFORMED")
            .option("maxFilesPerTrigger", 2)
            .load(setting("ADS_LANDING", "s3a://ads-landing/impressions"))
            .withWatermark("shown_at", "10 minutes")
            .dropDuplicatesWithinWatermark(["imp_id"]))


def clicks(spark: SparkSession) -> DataFrame:
    """The clicks in the Kafka records' values, each once within the watermark; a click
    whose time does not parse fails the batch (ANSI casts), as it should."""
    parsed = (spark.readStream.format("kafka")
              .option("kafka.bootstrap.servers", BOOTSTRAP)
              .option("subscribe", "ad-clicks")
              .load()
              .select(F.from_json(F.col("value").cast("string"), CLICK).alias("c"))
              .select(F.col("c.click_id").alias("click_id"),
                      F.col("c.imp_id").alias("click_imp"),
                      F.col("c.clicked_at").cast("timestamp").alias("clicked_at")))
    return (parsed.withWatermark("clicked_at", "10 minutes")
            .dropDuplicatesWithinWatermark(["click_id"]))


def attributed(spark: SparkSession) -> DataFrame:
    """Each impression with the clicks on it within 30 minutes (one row with null click
    columns when none came), and its campaign's name."""
    campaigns = spark.read.parquet(setting("ADS_CAMPAIGNS", "s3a://ads/campaigns"))
    joined = impressions(spark).join(clicks(spark), F.expr(
        "imp_id = click_imp AND clicked_at >= shown_at "
        "AND clicked_at <= shown_at + interval 30 minutes"), "leftOuter")
    return (joined.join(campaigns, "campaign_id", "left")
            .select("imp_id", "campaign_id", "campaign", "shown_at", "click_id",
                    "clicked_at"))


def write_hourly(batch: DataFrame, batch_id: int) -> None:
    """Add the batch's impressions and clicks per hour and campaign, once per batch id."""
    counts = (batch.groupBy(F.date_trunc("hour", "shown_at").alias("hour"), "campaign_id")
              .agg(F.count_distinct("imp_id").alias("impressions"),
                   F.count("click_id").alias("clicks"))
              .collect())
    with sqlite3.connect(setting("ADS_SQLITE", "/var/lib/ads/hourly.db")) as db:
        db.execute("CREATE TABLE IF NOT EXISTS batches (batch_id INTEGER PRIMARY KEY)")
        db.execute("CREATE TABLE IF NOT EXISTS hourly (hour TEXT, campaign_id TEXT, "
                   "impressions INTEGER, clicks INTEGER, PRIMARY KEY (hour, campaign_id))")
        if db.execute("SELECT 1 FROM batches WHERE batch_id = ?", (batch_id,)).fetchone():
            return  # written before a crash: do not count it twice
        for row in counts:
            db.execute(
                "INSERT INTO hourly VALUES (?, ?, ?, ?) ON CONFLICT (hour, campaign_id) DO "
                "UPDATE SET impressions = impressions + excluded.impressions, "
                "clicks = clicks + excluded.clicks",
                (row["hour"].isoformat(), row["campaign_id"], row["impressions"],
                 row["clicks"]))
        db.execute("INSERT INTO batches VALUES (?)", (batch_id,))


def main() -> None:
    spark = SparkSession.builder.remote(
        setting("SPARK_REMOTE", "sc://spark-connect.ads.internal:15002")).getOrCreate()
    checkpoints = setting("ADS_CHECKPOINTS", "s3a://ads/checkpoints")
    result = attributed(spark)
    (result.writeStream.format("parquet")
     .option("path", setting("ADS_ATTRIBUTED", "s3a://ads/attributed"))
     .option("checkpointLocation", f"{checkpoints}/attributed")
     .partitionBy("campaign_id")
     .outputMode("append")
     .trigger(processingTime="1 minute")
     .queryName("attributed")
     .start())
    (result.writeStream.foreachBatch(write_hourly)
     .option("checkpointLocation", f"{checkpoints}/hourly")
     .outputMode("append")
     .trigger(processingTime="1 minute")
     .queryName("hourly")
     .start())
    spark.streams.awaitAnyTermination()


if __name__ == "__main__":
    main()
