"""Example 4: the payments pipeline most teams write, tested as it is.

Payments arrive on Kafka as JSON values; the event time is *in the value*
(``paid_at``), not the Kafka record timestamp. The job:

* parses the value with ``from_json``; values that do not parse (and records without
  a value, tombstones, which the producer uses to retract nothing here) never stop it:
  unparsable values go to a ``payments-dead-letters`` topic, tombstones are ignored;
* drops a payment seen twice (same ``payment_id``) within the watermark;
* converts the amount to EUR with a static rates table (a stream-static join);
* sums EUR per merchant in 10-minute windows, written to ``merchant-totals`` when the
  window closes (append mode), 5 minutes of lateness allowed.
"""

from __future__ import annotations

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from pyspark_streamtest import Topology

PAYMENT = ("payment_id STRING, merchant STRING, amount DECIMAL(12,2), currency STRING, "
           "paid_at TIMESTAMP")
RATES = [("EUR", 1.0), ("USD", 0.5), ("GBP", 2.0)]  # deliberately round


def rates(spark: SparkSession) -> DataFrame:
    return spark.createDataFrame(RATES, "currency STRING, to_eur DOUBLE")


def parsed(payments: DataFrame) -> DataFrame:
    """Kafka source rows with the parsed payment (null when the value does not parse)."""
    return payments.where(F.col("value").isNotNull()).select(
        "key", "value", F.from_json(F.col("value").cast("string"), PAYMENT).alias("p"))


def merchant_totals(payments: DataFrame, rates: DataFrame) -> DataFrame:
    good = parsed(payments).where(F.col("p.paid_at").isNotNull()).select("p.*")
    unique = (good.withWatermark("paid_at", "5 minutes")
              .dropDuplicatesWithinWatermark(["payment_id"]))
    in_eur = unique.join(F.broadcast(rates), "currency").withColumn(
        "eur", F.col("amount").cast("double") * F.col("to_eur"))
    totals = in_eur.groupBy(F.window("paid_at", "10 minutes"), "merchant").agg(
        F.round(F.sum("eur"), 2).alias("eur"), F.count("*").alias("payments"))
    return totals.select(
        F.col("merchant").alias("key"),
        F.to_json(F.struct(F.col("window.start").alias("window_start"), "merchant", "eur",
                           "payments")).alias("value"))


def dead_letters(payments: DataFrame) -> DataFrame:
    bad = parsed(payments).where(F.col("p.paid_at").isNull())
    return bad.select("key", "value")


def topology(t: Topology) -> None:
    payments = t.kafka_input("payments", partitions=2)
    t.kafka_output("merchant-totals", merchant_totals(payments, rates(t.spark)))
    t.kafka_output("payments-dead-letters", dead_letters(payments))
