from pyspark.sql import functions as F


def main(spark):
    raw = (spark.readStream.format("kafka").option("kafka.bootstrap.servers", "k:9092")
           .option("subscribe", "orders").load())
    orders = raw.select(F.col("value").cast("string").cast("int").alias("amount"))
    paid = orders.where(F.col("amount") > 0)
    paid.writeStream.format("memory").queryName("paid").start()
    large = orders.where(F.col("amount") >= 100)  # a query the tests leave out
    large.writeStream.format("memory").queryName("large").start()
