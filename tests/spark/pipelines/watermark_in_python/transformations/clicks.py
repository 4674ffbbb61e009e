from pyspark import pipelines as dp


@dp.table
def clicks():  # type: ignore[no-untyped-def]
    return spark.readStream.format("json").schema("user STRING, ts TIMESTAMP").load(  # noqa: F821
        spark.conf.get("clicks.path"))  # noqa: F821


@dp.table
def recent_clicks():  # type: ignore[no-untyped-def]
    return spark.readStream.table("clicks").withWatermark("ts", "10 minutes")  # noqa: F821
