from pyspark.sql import functions as F


def windowed_counts(t):
    events = t.input("events", schema="user STRING, ts TIMESTAMP", timestamp_column="ts")
    counts = (events.withWatermark("ts", "10 seconds")
              .groupBy(F.window("ts", "10 seconds"), "user").count())
    t.output("counts", counts, output_mode="append")
