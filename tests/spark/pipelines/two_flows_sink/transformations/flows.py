from pyspark import pipelines as dp

SCHEMA = "order_id STRING, amount INT"

dp.create_sink("exported", format="parquet", options={"path": spark.conf.get("out.path")})  # noqa: F821


@dp.append_flow(target="exported")
def current():  # type: ignore[no-untyped-def]
    return spark.readStream.format("json").schema(SCHEMA).load(  # noqa: F821
        spark.conf.get("current.path"))  # noqa: F821


@dp.append_flow(target="exported")
def legacy():  # type: ignore[no-untyped-def]
    return spark.readStream.format("json").schema(SCHEMA).load(  # noqa: F821
        spark.conf.get("legacy.path"))  # noqa: F821
