"""Orders landed as JSON files: the raw table, a deduplicated one and the totals."""

from pyspark import pipelines as dp
from pyspark.sql import SparkSession
from pyspark.sql import functions as F

# The pipeline's session. PySpark 4.2+ also gives a pipeline's Python files the name
# `spark`; asking for it works on 4.1 too.
spark = SparkSession.active()

ORDERS_SCHEMA = "order_id STRING, customer STRING, amount INT, ts TIMESTAMP"


def landed_orders():  # type: ignore[no-untyped-def]
    return (spark.readStream.format("json").schema(ORDERS_SCHEMA)
            .load(spark.conf.get("orders.path")))


@dp.table(comment="Every order as it landed, duplicates included.")
def orders_bronze():  # type: ignore[no-untyped-def]
    return landed_orders()


@dp.table(comment="Orders without the duplicates a producer's retry sends, within 10 minutes.")
def orders_silver():  # type: ignore[no-untyped-def]
    return (landed_orders().withWatermark("ts", "10 minutes")
            .dropDuplicatesWithinWatermark(["order_id"]))


@dp.materialized_view(comment="Each customer's total over the deduplicated orders.")
def customer_totals():  # type: ignore[no-untyped-def]
    return (spark.read.table("orders_silver")
            .groupBy("customer").agg(F.sum("amount").alias("total")))
