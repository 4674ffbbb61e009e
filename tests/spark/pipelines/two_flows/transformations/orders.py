from pyspark import pipelines as dp
from pyspark.sql import SparkSession

# PySpark 4.2+ also gives a pipeline's files `spark`; 4.1's ask for it.
spark = SparkSession.active()

SCHEMA = "order_id STRING, amount INT"

dp.create_streaming_table("orders")


@dp.append_flow(target="orders")
def current():  # type: ignore[no-untyped-def]
    return spark.readStream.format("json").schema(SCHEMA).load(
        spark.conf.get("current.path"))


@dp.append_flow(target="orders")
def legacy():  # type: ignore[no-untyped-def]
    return spark.readStream.format("json").schema(SCHEMA).load(
        spark.conf.get("legacy.path"))
