from pyspark import pipelines as dp
from pyspark.sql import SparkSession

# PySpark 4.2+ also gives a pipeline's files `spark`; 4.1's ask for it.
spark = SparkSession.active()


@dp.table
def readings():  # type: ignore[no-untyped-def]
    return (spark.readStream.format("json").schema("sensor STRING, value INT")
            .option("mode", "FAILFAST").load(spark.conf.get("readings.path")))
