"""``driver.reset()``: back to just after creation, with the topology's DataFrames kept;
a run after a reset gives what a new driver gives, on real queries."""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta

import pytest

from pyspark_streamtest import Feature, StaleTopicError, TopologyTestDriver, supported_features
from pyspark_streamtest.core import open_drivers as _open_drivers
from tests.helpers import T0, at, clicks_per_user
from tests.spark.test_kafka import passthrough


def _play(driver: TopologyTestDriver) -> list:
    """A run with a window emitted, a late record and a restart; its batches without the
    state operators' metrics (times and memory vary)."""
    clicks = driver.create_input_topic("clicks")
    for second in (1, 7, 21):
        clicks.pipe_input({"user": "a", "url": "/"}, timestamp=at(second))
    driver.process_all_available()
    clicks.pipe_input({"user": "a", "url": "/late"}, timestamp=at(4))
    driver.restart()
    driver.advance_wall_clock(timedelta(seconds=3))
    return [replace(b, state_operators=()) for b in driver.batches]


def _state(driver: TopologyTestDriver, spark) -> list:
    if Feature.STATE_STORE_READS not in supported_features(spark):
        return []  # PySpark 3.5 cannot read state: the batches still compare
    return driver.get_window_store("counts").all()


def test_a_run_after_reset_equals_a_new_driver_s(spark):
    with TopologyTestDriver(clicks_per_user, spark=spark) as fresh:
        expected = _play(fresh)
        expected_state = _state(fresh, spark)
        expected_late = fresh.late_records("counts")
    with TopologyTestDriver(clicks_per_user, spark=spark) as driver:
        _play(driver)
        driver.create_input_topic("clicks").pipe_input({"user": "z", "url": "/"},
                                                      timestamp=at(30))
        made = _open_drivers.next_serial()
        driver.reset()
        assert _open_drivers.next_serial() == made  # no new driver: the same one, reset
        assert driver.batches == () and driver.current_time == T0
        again = _play(driver)
        assert again == expected
        assert [b.batch_id for b in again] == [b.batch_id for b in expected]
        assert _state(driver, spark) == expected_state
        assert driver.late_records("counts") == expected_late


def test_topic_handles_of_the_old_run_are_refused(spark):
    with TopologyTestDriver(clicks_per_user, spark=spark) as driver:
        old_in = driver.create_input_topic("clicks")
        old_out = driver.create_output_topic("counts")
        driver.reset()
        with pytest.raises(StaleTopicError, match=r"made before driver.reset\(\).*again"):
            old_in.pipe_input({"user": "a", "url": "/"}, timestamp=at(1))
        with pytest.raises(StaleTopicError):
            old_out.read_values_to_list()
        assert driver.batches == ()  # the refused pipe left nothing behind
        driver.create_input_topic("clicks").pipe_input({"user": "a", "url": "/"},
                                                      timestamp=at(1))
        ran = driver.process_all_available()
        assert (ran[0].batch_id, ran[0].num_input_rows) == (0, 1)


def test_reset_at_another_time_and_with_a_frozen_python_clock(spark):
    import time

    later = T0 + timedelta(days=3)
    with TopologyTestDriver(clicks_per_user, spark=spark, freeze_python_clock=True) as driver:
        driver.advance_wall_clock(timedelta(seconds=5))
        driver.reset(start_time=later)
        assert driver.current_time == later
        assert time.time() == later.timestamp()  # frozen again, at the new time
        driver.advance_wall_clock(timedelta(seconds=1))
        assert time.time() == (later + timedelta(seconds=1)).timestamp()
        driver.reset()  # back to the driver's own start time
        assert driver.current_time == T0
    assert abs(time.time() - __import__("datetime").datetime.now().timestamp()) < 5


def test_kafka_offsets_start_again_after_reset(spark):
    with TopologyTestDriver(passthrough(partitions=2), spark=spark) as driver:
        runs = []
        for _ in range(2):
            events = driver.create_input_topic("events", key_serializer="string")
            for key in ("a", "b", "a", None, None):
                events.pipe_input(key, "v")
            driver.process_all_available()
            rows = driver.create_output_topic("seen").read_values_to_list()
            runs.append([(r["key"], r["partition"], r["offset"]) for r in rows])
            driver.reset()
    assert runs[0] == runs[1]
    assert min(offset for _, _, offset in runs[1]) == 0
    assert {partition for _, partition, _ in runs[1]} == {0, 1}  # null keys: round-robin


def test_reset_of_a_fixture_s_driver_keeps_it_the_fixture_s(topology_driver):
    """The plugin still sees the topology_driver fixture's driver as the fixture's (no
    DriverLeftOpenError at teardown)."""
    driver = topology_driver(clicks_per_user)
    driver.reset()
    driver.create_input_topic("clicks").pipe_input({"user": "a", "url": "/"}, timestamp=at(1))
    ran = driver.process_all_available()
    assert (ran[0].batch_id, ran[0].num_input_rows) == (0, 1)
