from pyspark import pipelines as dp
from pyspark.sql import SparkSession

# PySpark 4.2+ also gives a pipeline's files `spark`; 4.1's ask for it.
spark = SparkSession.active()


@dp.table
def clicks():  # type: ignore[no-untyped-def]
    return spark.readStream.format("json").schema("user STRING, ts TIMESTAMP").load(
        spark.conf.get("clicks.path"))


@dp.table
def recent_clicks():  # type: ignore[no-untyped-def]
    return spark.readStream.table("clicks").withWatermark("ts", "10 minutes")
