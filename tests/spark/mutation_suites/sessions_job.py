from pyspark.sql import functions as F


def sessions(t):
    events = t.input("events", schema="user STRING, ts TIMESTAMP", timestamp_column="ts")
    t.output("sessions", events.withWatermark("ts", "10 seconds")
             .groupBy(F.session_window("ts", "5 seconds"), "user").count())
