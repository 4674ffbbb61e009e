"""Tests of example 6: the IoT job in ``iot_alerts_job.py``, run as it is.

Row-based ``transformWithState`` needs PySpark 4.1: every test here is marked so, and the
job is imported inside the fixture (its module imports the processor API, which older
PySpark lines lack). Most tests start only the query they are about (``outputs=``): the
alerts query runs a batch at every 1-minute trigger (a processing-time processor has
timers and TTLs to check), so each query left out is work saved at every step.
"""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from types import ModuleType
from typing import Any

import pytest
from pyspark.sql import functions as F

from pyspark_streamtest import Feature, UnknownTopicError
from pyspark_streamtest.state import StateEntry

pytestmark = pytest.mark.streamtest_requires(Feature.TRANSFORM_WITH_STATE)

T0 = datetime(2024, 1, 1, tzinfo=timezone.utc)
# transformWithState needs the RocksDB state store provider; the job's own session
# builder settings are not applied under the driver, so the test gives it to the queries.
ROCKSDB = {"spark.sql.streaming.stateStore.providerClass":
           "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider"}


def at(minutes: int, seconds: int = 0) -> datetime:
    return T0 + timedelta(minutes=minutes, seconds=seconds)


def ms(when: datetime) -> int:
    return int(when.timestamp() * 1000)


def alert(device: str, kind: str, temperature: float, when: datetime) -> dict[str, Any]:
    """An alert as the job writes it to ``device_alerts`` (its time as JSON text)."""
    return {"device_id": device, "site": "plant-a", "alert": kind,
            "temperature": temperature, "at": when.strftime("%Y-%m-%dT%H:%M:%S.000Z")}


class Plant:
    """The job under the driver, and the topics its devices and registry write to."""

    def __init__(self, driver: Any) -> None:
        self.driver = driver

    def register(self, device: str, max_temp: float) -> None:
        self._topic("registry").pipe_input(device, {"site": "plant-a", "max_temp": max_temp})

    def remove(self, device: str) -> None:
        self._topic("registry").pipe_input(device, None)  # a tombstone

    def send(self, device: str, temperature: float, read_at: datetime) -> None:
        self._topic("readings").pipe_input(device, {
            "device_id": device, "temperature": temperature, "read_at": read_at.isoformat()})

    def alerts(self) -> list[dict[str, Any]]:
        topic = self.driver.create_output_topic("device_alerts", key_deserializer="string",
                                                value_deserializer="json")
        return topic.read_values_to_list()

    def _topic(self, name: str) -> Any:
        return self.driver.create_input_topic(name, key_serializer="string",
                                              value_serializer="json")


@pytest.fixture
def job(tmp_path, monkeypatch) -> ModuleType:
    """The job's module, its production paths pointed at the test's folder."""
    monkeypatch.setenv("IOT_CHECKPOINTS", str(tmp_path / "production-checkpoints"))
    monkeypatch.setenv("IOT_AVERAGES", str(tmp_path / "averages"))
    from examples import iot_alerts_job

    return iot_alerts_job


@pytest.fixture
def plant(topology_driver, job):
    """``plant(*outputs)``: the job under a driver (the plugin closes it), running only
    the queries named, or all of them."""
    def start(*outputs: str) -> Plant:
        return Plant(topology_driver.from_app(job.main, outputs=outputs or None,
                                              start_time=T0, sql_conf=ROCKSDB))

    return start


def test_the_job_runs_as_it_is_and_describes_its_processors(plant, tmp_path):
    iot = plant()
    driver = iot.driver
    assert driver.input_names == ("readings", "registry")
    assert driver.output_names == ("device_alerts", "upsert_averages",
                                   "iot.readings_per_device")
    iot.register("dev-1", max_temp=80.0)
    for second, temperature in [(10, 20.0), (20, 21.0), (30, 22.0), (40, 23.0)]:
        iot.send("dev-1", temperature, at(0, second))
    driver.process_all_available()

    description = driver.describe()
    monitor, dedup = description.query("device_alerts").operators
    assert [(v.name, v.kind, v.ttl) for v in monitor.state_variables] == [
        ("cooldown", "value", True), ("device", "value", False), ("recent", "list", False)]
    assert (monitor.time_mode, dedup.kind) == ("ProcessingTime", "dedupeWithinWatermark")
    averages, _ = description.query("upsert_averages").operators
    assert averages.time_mode == "EventTime"
    assert averages.state_variable("windows").user_key_schema == "struct<start_ms:bigint>"
    assert str(description.query("device_alerts")).splitlines()[4:9] == [
        "    state variable 'cooldown': value state with TTL",
        "      key:      struct<device_id:string>",
        "      value:    struct<alerted_ms:bigint>",
        "    state variable 'device': value state",
        "      key:      struct<device_id:string>",
    ]

    # By name: no operator_id needed, only the processor holds the variable.
    recent = driver.get_state_store("device_alerts", state_var="recent")
    assert recent.get_all("dev-1") == [  # the last three readings, oldest first
        {"temperature": 21.0, "read_ms": ms(at(0, 20))},
        {"temperature": 22.0, "read_ms": ms(at(0, 30))},
        {"temperature": 23.0, "read_ms": ms(at(0, 40))}]
    assert not (tmp_path / "production-checkpoints").exists()


def test_a_reading_sent_twice_is_counted_once(plant):
    iot = plant("iot.readings_per_device")
    iot.send("dev-1", 20.0, at(0, 30))
    iot.send("dev-1", 20.0, at(0, 30))  # the device was not sure it got through
    iot.send("dev-1", 21.0, at(0, 40))
    (ran,) = iot.driver.advance_wall_clock(timedelta(minutes=5))
    assert (ran.processing_time, ran.num_input_rows) == (at(5), 3)
    assert ran.output_values == [{"device_id": "dev-1", "count": 2}]


def test_the_counts_are_per_device_and_all_written_at_every_trigger(plant):
    """Added for survivors of ``--streamtest-mutate``: two devices reading at the same
    time are two readings (the dedup key holds the device), and complete mode writes
    every device's count at every trigger, not only the counts that changed."""
    iot = plant("iot.readings_per_device")
    iot.send("dev-1", 20.0, at(0, 30))
    iot.send("dev-2", 20.0, at(0, 30))  # the same time, another device
    (first,) = iot.driver.advance_wall_clock(timedelta(minutes=5))
    assert sorted(first.output_values, key=str) == [
        {"device_id": "dev-1", "count": 1}, {"device_id": "dev-2", "count": 1}]
    iot.send("dev-1", 21.0, at(4, 30))
    (second,) = iot.driver.advance_wall_clock(timedelta(minutes=5))
    assert sorted(second.output_values, key=str) == [  # dev-2 again: complete mode
        {"device_id": "dev-1", "count": 2}, {"device_id": "dev-2", "count": 1}]


def test_a_reading_more_than_two_minutes_older_than_the_newest_is_dropped_as_late(plant):
    """Added for survivors of ``--streamtest-mutate`` (the readings' 2-minute watermark):
    ``dropDuplicatesWithinWatermark`` drops a row older than the watermark, the newest
    reading time less 2 minutes. Spark drops late rows by the watermark the batch before
    evicted state with, so a row is judged by a watermark two batches old: each reading
    here is followed by a second trigger, the no-data batch that moves the watermark."""
    iot = plant("iot.readings_per_device")

    def counted(read_at: datetime) -> int:
        iot.send("dev-1", 20.0, read_at)
        (ran, *_) = iot.driver.advance_wall_clock(timedelta(minutes=10))
        (count,) = ran.output_values
        return int(count["count"])

    assert counted(at(3, 30)) == 1  # the watermark is now 1:30
    assert counted(at(1, 40)) == 2  # after it: counted
    assert counted(at(1, 20)) == 2  # before it: dropped as late


def test_a_late_reading_never_reaches_the_monitor(plant):
    """The same 2-minute watermark in the alerts query (the ``readings()`` helper's
    first call): a reading before it is dropped before ``DeviceMonitor`` sees it."""
    iot = plant("device_alerts")
    iot.register("dev-1", max_temp=80.0)
    for read_at, temperature in ((at(3, 30), 20.0), (at(1, 40), 21.0), (at(1, 20), 22.0)):
        iot.send("dev-1", temperature, read_at)
        iot.driver.advance_wall_clock(timedelta(minutes=2))  # its batch, and the next
    recent = iot.driver.get_state_store("device_alerts", state_var="recent")
    assert recent.get_all("dev-1") == [{"temperature": 20.0, "read_ms": ms(at(3, 30))},
                                       {"temperature": 21.0, "read_ms": ms(at(1, 40))}]


def test_two_devices_overheating_at_the_same_time_alert_twice(plant):
    """Added for a survivor of ``--streamtest-mutate``: the alerts query's dedup key
    holds the device, not only the reading's time."""
    iot = plant("device_alerts")
    for device in ("dev-1", "dev-2"):
        iot.register(device, max_temp=80.0)
    iot.send("dev-1", 95.0, at(0, 30))
    iot.send("dev-2", 90.0, at(0, 30))  # the same time, another device
    iot.driver.advance_wall_clock(timedelta(minutes=1))
    assert sorted(iot.alerts(), key=str) == [alert("dev-1", "overheat", 95.0, at(1)),
                                             alert("dev-2", "overheat", 90.0, at(1))]


def test_a_silent_device_is_reported_offline_to_the_millisecond(plant):
    iot = plant("device_alerts")  # the other queries never start
    driver = iot.driver
    assert driver.output_names == ("device_alerts",)
    iot.register("dev-1", max_temp=80.0)
    iot.send("dev-1", 20.0, at(0, 30))
    driver.advance_wall_clock(timedelta(minutes=1))  # the batch at 00:01 reads it
    assert driver.get_state_store("device_alerts", timers=True).to_dict() == {
        "dev-1": {"expiration_timestamp_ms": ms(at(6))}}

    ran = driver.advance_wall_clock(timedelta(minutes=5, milliseconds=-1))
    assert [b.processing_time for b in ran] == [at(2), at(3), at(4), at(5)]
    assert iot.alerts() == []
    (fired,) = driver.advance_wall_clock(timedelta(milliseconds=1))
    assert fired.processing_time == at(6)
    assert iot.alerts() == [alert("dev-1", "offline", 20.0, at(6))]
    assert len(driver.get_state_store("device_alerts", timers=True)) == 0  # fired once


def test_an_overheating_device_alerts_at_most_once_per_ten_minutes(plant):
    iot = plant("device_alerts")
    driver = iot.driver
    iot.register("dev-1", max_temp=80.0)
    iot.send("dev-1", 85.0, at(0, 10))
    driver.advance_wall_clock(timedelta(minutes=1))
    assert iot.alerts() == [alert("dev-1", "overheat", 85.0, at(1))]
    # The cooldown has a TTL of 10 minutes from the batch that wrote it.
    assert driver.get_state_store("device_alerts", state_var="cooldown").entries("dev-1") == [
        StateEntry("dev-1", {"alerted_ms": ms(at(1))}, ttl_expiration=at(11))]

    driver.advance_wall_clock(timedelta(minutes=8, seconds=30))
    iot.send("dev-1", 90.0, at(9, 30))
    driver.advance_wall_clock(timedelta(seconds=30))  # the batch at 00:10: still cooling
    assert iot.alerts() == [alert("dev-1", "offline", 85.0, at(6))]

    iot.send("dev-1", 95.0, at(10, 30))
    driver.advance_wall_clock(timedelta(minutes=1))  # 00:11: the cooldown has expired
    assert iot.alerts() == [alert("dev-1", "overheat", 95.0, at(11))]
    assert driver.get_state_store("device_alerts", state_var="cooldown").entries("dev-1") == [
        StateEntry("dev-1", {"alerted_ms": ms(at(11))}, ttl_expiration=at(21))]


def test_a_registry_tombstone_forgets_the_device(plant):
    iot = plant("device_alerts")
    driver = iot.driver
    iot.register("dev-1", max_temp=80.0)
    iot.register("dev-2", max_temp=60.0)
    iot.send("dev-1", 20.0, at(0, 10))
    iot.send("dev-2", 20.0, at(0, 10))
    driver.advance_wall_clock(timedelta(minutes=1))

    iot.remove("dev-1")
    driver.advance_wall_clock(timedelta(minutes=1))
    assert driver.get_state_store("device_alerts", state_var="device").to_dict() == {
        "dev-2": {"site": "plant-a", "max_temp": 60.0}}
    assert "dev-1" not in driver.get_state_store("device_alerts", state_var="recent")
    assert driver.get_state_store("device_alerts", timers=True).to_dict() == {
        "dev-2": {"expiration_timestamp_ms": ms(at(6))}}

    iot.send("dev-1", 99.0, at(2, 10))  # a removed device is not watched any more
    iot.send("dev-2", 61.0, at(2, 10))
    driver.advance_wall_clock(timedelta(minutes=1))
    assert iot.alerts() == [alert("dev-2", "overheat", 61.0, at(3))]


def test_ten_minute_averages_close_when_the_watermark_passes(plant, spark, tmp_path):
    iot = plant("upsert_averages")
    driver = iot.driver
    with pytest.raises(UnknownTopicError, match="registry"):
        driver.create_input_topic("registry")  # only the alerts query reads it
    iot.send("dev-1", 20.0, at(1))
    iot.send("dev-1", 22.0, at(4))
    iot.send("dev-1", 24.0, at(9, 59))
    iot.send("dev-2", 30.0, at(3))
    (first,) = driver.advance_wall_clock(timedelta(minutes=5))
    assert (first.processing_time, first.output_values, first.watermark_after) == (
        at(5), [], at(7, 59))
    windows = driver.get_state_store("upsert_averages", state_var="windows")
    assert windows.get_all("dev-1") == [{"user_map_key": {"start_ms": ms(T0)},
                                         "user_map_value": {"total": 66.0, "readings": 3}}]
    # One event-time timer per device and open window: at the window's end.
    assert driver.get_state_store("upsert_averages", timers=True).to_dict() == {
        "dev-1": {"expiration_timestamp_ms": ms(at(10))},
        "dev-2": {"expiration_timestamp_ms": ms(at(10))}}

    iot.send("dev-1", 21.0, at(12, 30))  # moves the watermark to 00:10:30
    ran = driver.advance_wall_clock(timedelta(minutes=10))
    # The watermark a batch computes is used by the next one: with a 5-minute trigger
    # the window closes in the no-data batch at 00:15.
    assert [(b.processing_time, b.watermark, b.new_data) for b in ran] == [
        (at(10), at(7, 59), True), (at(15), at(10, 30), False)]
    written = spark.read.parquet(str(tmp_path / "averages")).select(
        "device_id", F.date_format("window_start", "HH:mm").alias("start"), "average",
        "readings")
    assert sorted(written.collect()) == [("dev-1", "00:00", 22.0, 3),
                                         ("dev-2", "00:00", 30.0, 1)]

    # A reading for the closed window is late: the dedup, before the processor, drops it.
    iot.send("dev-1", 40.0, at(8))
    (late_batch,) = driver.advance_wall_clock(timedelta(minutes=5))
    (late,) = driver.late_records("upsert_averages")
    assert (late.record.value["temperature"], late.batch_id, late.watermark,
            late.operator, late.operator_id) == (
        40.0, late_batch.batch_id, at(10, 30), "dedupeWithinWatermark", 1)


def test_a_crash_after_the_upsert_does_not_write_a_window_twice(plant, spark, tmp_path):
    """Spark runs a batch again after a crash between the sink and the commit: writing
    each (window, device) to its own partition makes the second write replace the first."""
    iot = plant("upsert_averages")
    driver = iot.driver
    iot.send("dev-1", 20.0, at(1))
    iot.send("dev-1", 30.0, at(12, 30))
    driver.advance_wall_clock(timedelta(minutes=5))  # watermark 00:10:30 after it
    driver.crash_before_commit("upsert_averages")
    crashed, closing = driver.advance_wall_clock(timedelta(minutes=5))
    window = {"device_id": "dev-1", "window_start": at(0), "average": 20.0, "readings": 1}
    # the function was called twice with the window: once by the crashed attempt
    assert (crashed.crashed, crashed.new_data, crashed.output_values) == (
        "before_commit", False, [window])
    assert (closing.attempt, closing.new_data, closing.output_values) == (2, False, [window])
    written = spark.read.parquet(str(tmp_path / "averages"))
    assert [(r.device_id, r.average) for r in written.collect()] == [("dev-1", 20.0)]
