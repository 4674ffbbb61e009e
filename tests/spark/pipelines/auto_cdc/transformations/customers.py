from pyspark import pipelines as dp
from pyspark.sql import SparkSession
from pyspark.sql import functions as F

# PySpark 4.2+ also gives a pipeline's files `spark`; 4.1's ask for it.
spark = SparkSession.active()


@dp.temporary_view
def customer_changes():  # type: ignore[no-untyped-def]
    return (spark.readStream.format("json")
            .schema("id STRING, name STRING, op STRING, seq LONG")
            .load(spark.conf.get("changes.path")))


dp.create_streaming_table("customers")
dp.create_auto_cdc_flow(target="customers", source="customer_changes", keys=["id"],
                        sequence_by=F.col("seq"), apply_as_deletes=F.expr("op = 'D'"),
                        stored_as_scd_type=1)
