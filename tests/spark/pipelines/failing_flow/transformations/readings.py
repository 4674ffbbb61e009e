from pyspark import pipelines as dp


@dp.table
def readings():  # type: ignore[no-untyped-def]
    return (spark.readStream.format("json").schema("sensor STRING, value INT")  # noqa: F821
            .option("mode", "FAILFAST").load(spark.conf.get("readings.path")))  # noqa: F821
