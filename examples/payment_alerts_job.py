"""Example 5: a production job, written as teams write them, tested with no edits.

This file knows nothing of pyspark-streamtest. It reads payments from Kafka, parses the
JSON value, and runs two queries, each on a 1-minute trigger with its own production
checkpoint:

* ``payment-alerts``: the EUR total per account in 1-minute windows (30 seconds of
  lateness allowed), written back to Kafka when the window closes if it is over the
  limit;
* an audit log: every parsed payment with the id of the batch that wrote it, appended
  to a Parquet table by a ``foreachBatch`` function (made idempotent on the batch id,
  since Spark's recovery may run a batch twice).

``main()`` blocks until a query stops, as a job submitted with ``spark-submit`` does.
``examples/test_payment_alerts_job.py`` tests it with ``TopologyTestDriver.from_app``.
"""

from __future__ import annotations

import os

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

BOOTSTRAP = os.environ.get("KAFKA_BOOTSTRAP", "kafka-1.prod.internal:9092")
LIMIT_EUR = 10_000.0
PAYMENT = "payment_id STRING, account STRING, amount DOUBLE, paid_at TIMESTAMP"


def checkpoint_root() -> str:
    return os.environ.get("PAYMENTS_CHECKPOINTS", "s3a://payments-prod/checkpoints")


def audit_path() -> str:
    return os.environ.get("PAYMENTS_AUDIT", "s3a://payments-prod/audit")


def parse(raw: DataFrame) -> DataFrame:
    """The payments in the Kafka records' values; values that do not parse are skipped."""
    return (raw.select(F.from_json(F.col("value").cast("string"), PAYMENT).alias("p"))
            .select("p.*")
            .where(F.col("payment_id").isNotNull() & F.col("paid_at").isNotNull()))


def alerts(payments: DataFrame) -> DataFrame:
    totals = (payments.withWatermark("paid_at", "30 seconds")
              .groupBy(F.window("paid_at", "1 minute"), "account")
              .agg(F.sum("amount").alias("total"), F.count("*").alias("payments")))
    return (totals.where(F.col("total") > LIMIT_EUR)
            .select(F.col("account").alias("key"),
                    F.to_json(F.struct(F.col("window.start").alias("minute"), "account",
                                       "total", "payments")).alias("value")))


def write_audit(batch: DataFrame, batch_id: int) -> None:
    """Append the batch to the audit table, once per batch id."""
    path = audit_path()
    spark = batch.sparkSession
    try:
        done = spark.read.parquet(path).where(F.col("batch_id") == batch_id).limit(1).count()
    except Exception:  # no audit table yet
        done = 0
    if done:
        return  # this batch was written before a crash: do not write it twice
    batch.withColumn("batch_id", F.lit(batch_id)).write.mode("append").parquet(path)


def main() -> None:
    spark = SparkSession.builder.appName("payment-alerts").getOrCreate()
    raw = (spark.readStream.format("kafka")
           .option("kafka.bootstrap.servers", BOOTSTRAP)
           .option("subscribe", "payments")
           .option("startingOffsets", "latest")
           .load())
    payments = parse(raw)

    (alerts(payments).writeStream
     .format("kafka")
     .option("kafka.bootstrap.servers", BOOTSTRAP)
     .option("topic", "payment-alerts")
     .option("checkpointLocation", f"{checkpoint_root()}/alerts")
     .outputMode("append")
     .trigger(processingTime="1 minute")
     .queryName("payment-alerts")
     .start())

    (payments.writeStream
     .foreachBatch(write_audit)
     .option("checkpointLocation", f"{checkpoint_root()}/audit")
     .trigger(processingTime="1 minute")
     .start())

    spark.streams.awaitAnyTermination()


if __name__ == "__main__":
    main()
