from pyspark import pipelines as dp
from pyspark.sql import SparkSession
from pyspark.sql import functions as F

# PySpark 4.2+ also gives a pipeline's files `spark`; 4.1's ask for it.
spark = SparkSession.active()


@dp.table
def readings():  # type: ignore[no-untyped-def]
    return spark.readStream.format("json").schema(
        "sensor STRING, value INT").load(spark.conf.get("readings.path"))


dp.create_sink("alerts", format="json", options={"path": spark.conf.get("alerts.path")})


@dp.append_flow(target="alerts")
def high_readings():  # type: ignore[no-untyped-def]
    return (spark.readStream.table("readings")
            .where(F.col("value") > 10).select("sensor", (F.col("value") * 2).alias("doubled")))


dp.create_sink("console_out", format="console")


@dp.append_flow(target="console_out")
def to_console():  # type: ignore[no-untyped-def]
    return spark.readStream.table("readings").where(F.lit(False))
