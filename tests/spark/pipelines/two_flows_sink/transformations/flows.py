from pyspark import pipelines as dp
from pyspark.sql import SparkSession

# PySpark 4.2+ also gives a pipeline's files `spark`; 4.1's ask for it.
spark = SparkSession.active()

SCHEMA = "order_id STRING, amount INT"

dp.create_sink("exported", format="parquet", options={"path": spark.conf.get("out.path")})


@dp.append_flow(target="exported")
def current():  # type: ignore[no-untyped-def]
    return spark.readStream.format("json").schema(SCHEMA).load(
        spark.conf.get("current.path"))


@dp.append_flow(target="exported")
def legacy():  # type: ignore[no-untyped-def]
    return spark.readStream.format("json").schema(SCHEMA).load(
        spark.conf.get("legacy.path"))
