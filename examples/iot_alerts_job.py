"""Example 6: an IoT job with two transformWithState processors (PySpark 4.1+).

This file knows nothing of pyspark-streamtest. Devices send JSON readings to the Kafka
topic ``readings``, and re-send one they are not sure was delivered: readings are
deduplicated within a 2-minute watermark on their reading time. The ``registry`` topic
is the device table as a CDC changelog (key = device id, value = site and temperature
limit, a tombstone = the device was removed). Three queries run:

* ``device_alerts`` (1-minute trigger, to Kafka): ``DeviceMonitor`` keeps each
  registered device's registry entry and its last readings, alerts when a reading is
  over the limit (at most once per 10 minutes: a state TTL), and alerts when a device
  has sent nothing for 5 minutes (a processing-time timer);
* ``upsert_averages`` (5-minute trigger): ``TenMinuteAverages`` closes each device's
  10-minute averages of event time (event-time timers, fired by the watermark), which a
  ``foreachBatch`` function upserts into a Parquet table;
* a count of readings per device, written to a table (``toTable``).

``examples/test_iot_alerts_job.py`` tests it with ``TopologyTestDriver.from_app``.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any

from pyspark.sql import DataFrame, Row, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.streaming.stateful_processor import StatefulProcessor

BOOTSTRAP = os.environ.get("KAFKA_BOOTSTRAP", "kafka-1.iot.internal:9092")
READING = "device_id STRING, temperature DOUBLE, read_at TIMESTAMP"
DEVICE = "site STRING, max_temp DOUBLE"
ALERT = "device_id STRING, site STRING, alert STRING, temperature DOUBLE, at_ms LONG"
AVERAGE = "device_id STRING, window_start_ms LONG, average DOUBLE, readings LONG"
OFFLINE_AFTER_MS = 5 * 60_000
ALERT_COOLDOWN_MS = 10 * 60_000
WINDOW_MS = 10 * 60_000


def checkpoint_root() -> str:
    return os.environ.get("IOT_CHECKPOINTS", "s3a://iot-prod/checkpoints")


def averages_path() -> str:
    return os.environ.get("IOT_AVERAGES", "s3a://iot-prod/averages")


class DeviceMonitor(StatefulProcessor):
    """Per device: registry entry, last 3 readings, alert cooldown, offline timer."""

    def init(self, handle: Any) -> None:
        self.handle = handle
        self.device = handle.getValueState("device", DEVICE)
        self.recent = handle.getListState("recent", "temperature DOUBLE, read_ms LONG")
        self.cooldown = handle.getValueState("cooldown", "alerted_ms LONG",
                                             ALERT_COOLDOWN_MS)

    def handleInputRows(self, key: Any, rows: Iterator[Row],  # noqa: N802
                        timerValues: Any) -> Iterator[Row]:  # noqa: N803
        now = timerValues.getCurrentProcessingTimeInMs()
        # Registry changes first, in offset order; then the readings, oldest first.
        for row in sorted(rows, key=lambda r: (r.kind == "reading", r.read_ms or 0, r.offset)):
            if row.kind == "removed":
                self.forget()
            elif row.kind == "registered":
                self.device.update((row.site, row.max_temp))
            elif self.device.exists():  # readings of unknown devices are ignored
                self.recent.put([*list(self.recent.get())[-2:], (row.temperature, row.read_ms)])
                site, max_temp = self.device.get()
                if row.temperature > max_temp and not self.cooldown.exists():
                    self.cooldown.update((now,))
                    yield Row(device_id=key[0], site=site, alert="overheat",
                              temperature=row.temperature, at_ms=now)
                self.delete_timers()
                self.handle.registerTimer(now + OFFLINE_AFTER_MS)

    def handleExpiredTimer(self, key: Any, timerValues: Any,  # noqa: N802, N803
                           expiredTimerInfo: Any) -> Iterator[Row]:  # noqa: N803
        site, _ = self.device.get()
        *_, (temperature, _) = self.recent.get()
        yield Row(device_id=key[0], site=site, alert="offline", temperature=temperature,
                  at_ms=timerValues.getCurrentProcessingTimeInMs())

    def delete_timers(self) -> None:
        for timer in list(self.handle.listTimers()):
            self.handle.deleteTimer(timer)

    def forget(self) -> None:
        self.delete_timers()
        self.device.clear()
        self.recent.clear()
        self.cooldown.clear()


class TenMinuteAverages(StatefulProcessor):
    """Per device: a running sum per 10-minute window, emitted when the watermark
    passes the window's end."""

    def init(self, handle: Any) -> None:
        self.handle = handle
        self.windows = handle.getMapState("windows", "start_ms LONG",
                                          "total DOUBLE, readings LONG")

    def handleInputRows(self, key: Any, rows: Iterator[Row],  # noqa: N802
                        timerValues: Any) -> Iterator[Row]:  # noqa: N803
        for row in rows:
            start = row.read_ms - row.read_ms % WINDOW_MS
            total, readings = (self.windows.getValue((start,))
                               if self.windows.containsKey((start,)) else (0.0, 0))
            if readings == 0:
                self.handle.registerTimer(start + WINDOW_MS)
            self.windows.updateValue((start,), (total + row.temperature, readings + 1))
        return iter(())

    def handleExpiredTimer(self, key: Any, timerValues: Any,  # noqa: N802, N803
                           expiredTimerInfo: Any) -> Iterator[Row]:  # noqa: N803
        start = expiredTimerInfo.getExpiryTimeInMs() - WINDOW_MS
        total, readings = self.windows.getValue((start,))
        self.windows.removeKey((start,))
        yield Row(device_id=key[0], window_start_ms=start, average=total / readings,
                  readings=readings)


def kafka(spark: SparkSession, topic: str) -> DataFrame:
    return (spark.readStream.format("kafka")
            .option("kafka.bootstrap.servers", BOOTSTRAP)
            .option("subscribe", topic)
            .load())


def readings(spark: SparkSession) -> DataFrame:
    """Parsed readings, without the ones a device sent twice."""
    parsed = (kafka(spark, "readings")
              .select(F.from_json(F.col("value").cast("string"), READING).alias("r"), "offset")
              .select("r.*", "offset")
              .where(F.col("device_id").isNotNull() & F.col("read_at").isNotNull()))
    return (parsed.withWatermark("read_at", "2 minutes")
            .dropDuplicatesWithinWatermark(["device_id", "read_at"])
            .withColumn("read_ms", F.unix_millis("read_at")))


def registry(spark: SparkSession) -> DataFrame:
    """The registry's changes; a tombstone removes the device."""
    entry = F.from_json(F.col("value").cast("string"), DEVICE)
    return kafka(spark, "registry").select(
        F.col("key").cast("string").alias("device_id"),
        F.when(F.col("value").isNull(), "removed").otherwise("registered").alias("kind"),
        entry["site"].alias("site"), entry["max_temp"].alias("max_temp"), "offset")


def upsert_averages(batch: DataFrame, batch_id: int) -> None:
    """Write each (window, device) to its own partition: a batch run again after a crash,
    or a window written again, replaces what it wrote before."""
    (batch.withColumn("window", F.date_format("window_start", "yyyyMMddHHmm"))
     .write.mode("overwrite").option("partitionOverwriteMode", "dynamic")
     .partitionBy("window", "device_id").parquet(averages_path()))


def main() -> None:
    spark = SparkSession.builder.appName("iot-alerts").getOrCreate()
    events = readings(spark).select("device_id", F.lit("reading").alias("kind"),
                                    "temperature", "read_ms", "offset")
    alerts = (events.unionByName(registry(spark), allowMissingColumns=True)
              .groupBy("device_id")
              .transformWithState(DeviceMonitor(), ALERT, "Update", "ProcessingTime"))
    (alerts.select(F.col("device_id").alias("key"), F.to_json(F.struct(
        "device_id", "site", "alert", "temperature",
        F.timestamp_millis("at_ms").alias("at"))).alias("value"))
     .writeStream.format("kafka")
     .option("kafka.bootstrap.servers", BOOTSTRAP)
     .option("topic", "device_alerts")
     .option("checkpointLocation", f"{checkpoint_root()}/alerts")
     .outputMode("update")
     .trigger(processingTime="1 minute")
     .queryName("device_alerts")
     .start())

    averages = (readings(spark).groupBy("device_id")
                .transformWithState(TenMinuteAverages(), AVERAGE, "Append", "EventTime")
                .select("device_id", F.timestamp_millis("window_start_ms").alias("window_start"),
                        "average", "readings"))
    (averages.writeStream.foreachBatch(upsert_averages)
     .option("checkpointLocation", f"{checkpoint_root()}/averages")
     .trigger(processingTime="5 minutes")
     .start())

    (readings(spark).groupBy("device_id").count().writeStream
     .outputMode("complete")
     .option("checkpointLocation", f"{checkpoint_root()}/counts")
     .trigger(processingTime="5 minutes")
     .toTable("iot.readings_per_device"))

    spark.streams.awaitAnyTermination()


if __name__ == "__main__":
    main()
