"""A production job with two Kafka inputs, written as teams write them, for the tests of
the property-test runner (``run_app``): it knows nothing of pyspark-streamtest.

Orders and payments arrive on two topics as JSON, each with its event time inside the
value. The ``activity`` query counts both per account in 10-second windows (5 seconds
of lateness allowed, one watermark over the union) and writes each closed window to
Kafka as JSON; a second query logs the orders to the console.
"""

from __future__ import annotations

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

BOOTSTRAP = "kafka-1.prod.internal:9092"
ORDER = "order_id STRING, account STRING, amount DOUBLE, ordered_at TIMESTAMP"
PAYMENT = "payment_id STRING, account STRING, paid_at TIMESTAMP"


def topic(spark: SparkSession, name: str) -> DataFrame:
    return (spark.readStream.format("kafka")
            .option("kafka.bootstrap.servers", BOOTSTRAP)
            .option("subscribe", name)
            .load())


def parsed(raw: DataFrame, schema: str, kind: str, at: str) -> DataFrame:
    """The records' JSON values as ``account, kind, at``; values that do not parse, and
    tombstones, are left out."""
    return (raw.select(F.from_json(F.col("value").cast("string"), schema).alias("v"))
            .select(F.col("v.account").alias("account"), F.lit(kind).alias("kind"),
                    F.col(f"v.{at}").alias("at"))
            .where(F.col("account").isNotNull() & F.col("at").isNotNull()))


def main() -> None:
    spark = SparkSession.builder.appName("account-activity").getOrCreate()
    orders = parsed(topic(spark, "orders"), ORDER, "order", "ordered_at")
    payments = parsed(topic(spark, "payments"), PAYMENT, "payment", "paid_at")
    activity = (orders.unionByName(payments)
                .withWatermark("at", "5 seconds")
                .groupBy(F.window("at", "10 seconds").alias("window"), "account")
                .agg(F.sum(F.when(F.col("kind") == "order", 1).otherwise(0)).alias("orders"),
                     F.sum(F.when(F.col("kind") == "payment", 1).otherwise(0))
                     .alias("payments")))
    (activity.select(F.col("account").alias("key"),
                     F.to_json(F.struct(F.col("window.start").alias("start"), "account",
                                        "orders", "payments")).alias("value"))
     .writeStream.format("kafka")
     .option("kafka.bootstrap.servers", BOOTSTRAP)
     .option("topic", "activity")
     .option("checkpointLocation", "s3a://prod/checkpoints/activity")
     .outputMode("append")
     .queryName("activity")
     .trigger(processingTime="30 seconds")
     .start())
    (orders.writeStream.format("console")
     .queryName("orders-log")
     .option("checkpointLocation", "s3a://prod/checkpoints/orders-log")
     .start())
    spark.streams.awaitAnyTermination()


if __name__ == "__main__":
    main()
