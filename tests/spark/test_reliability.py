"""Faults and misuse that must give a typed error and leave nothing broken: a failing
deserializer, a deleted checkpoint, time past year 9999, state reads that do not apply,
a `spark=` that is not a session."""

from __future__ import annotations

import shutil
from datetime import timedelta

import pytest

from pyspark_streamtest import (
    CheckpointMissingError,
    DeserializationError,
    NotASparkSessionError,
    StateStoreError,
    StreamTestError,
    TimeOutOfRangeError,
    Topology,
    TopologyTestDriver,
)
from pyspark_streamtest.features import Feature
from tests.helpers import T0

needs_state_reads = pytest.mark.streamtest_requires(Feature.STATE_STORE_READS)


def passthrough(t: Topology) -> None:
    events = t.kafka_input("events")
    t.kafka_output("sink", events.select("key", "value"), topic="out")


def counts(t: Topology) -> None:
    clicks = t.input("clicks", schema="user STRING")
    t.output("counts", clicks.groupBy("user").count(), output_mode="update")


def test_a_record_that_fails_to_deserialize_stays_unread(topology_driver):
    driver = topology_driver(passthrough)
    events = driver.create_input_topic("events", value_serializer="string")
    events.pipe_input("not json")
    events.pipe_input('{"ok": 1}')
    driver.process_all_available()
    as_json = driver.create_output_topic("out", value_deserializer="json")
    with pytest.raises(DeserializationError, match=r"partition 0 offset 0 .* stays unread"):
        as_json.read_record()
    assert as_json.queue_size == 2
    with pytest.raises(DeserializationError):
        as_json.read_records_to_list()
    assert as_json.queue_size == 2
    raw = driver.create_output_topic("out")  # no deserializer: bytes
    assert raw.read_value() == b"not json"
    assert as_json.read_value() == {"ok": 1}


def test_a_deleted_checkpoint_is_refused_before_anything_stops(topology_driver, tmp_path):
    driver = topology_driver(counts, checkpoint_root=tmp_path)
    clicks = driver.create_input_topic("clicks")
    clicks.pipe_input(("a",))
    driver.process_all_available()
    (folder,) = tmp_path.iterdir()
    shutil.rmtree(folder)
    with pytest.raises(CheckpointMissingError, match=r"output 'counts' .* is gone after 1 "):
        driver.restart()
    assert driver.is_running and not driver.closed
    driver.stop()
    with pytest.raises(CheckpointMissingError):
        driver.start()
    driver.close()  # closing always works


@pytest.mark.parametrize(
    "delta",
    [timedelta.max, timedelta(days=999_999_999), timedelta(days=365 * 8000)],
    ids=["timedelta.max", "999999999-days", "8000-years"],
)
def test_time_past_year_9999_is_refused_and_the_driver_still_works(topology_driver, delta):
    driver = topology_driver(counts)
    for move in (driver.advance_wall_clock, driver.jump_wall_clock):
        with pytest.raises(TimeOutOfRangeError, match=r"past 9999-12-31|years 1 to 9999"):
            move(delta)
        assert driver.current_time == T0
    driver.create_input_topic("clicks").pipe_input(("a",))
    (batch,) = driver.advance_wall_clock(timedelta(seconds=1))
    assert batch.output_values == [{"user": "a", "count": 1}]


@needs_state_reads
def test_state_var_and_timers_on_an_aggregation_are_typed_errors(topology_driver):
    driver = topology_driver(counts)
    driver.create_input_topic("clicks").pipe_input(("a",))
    driver.process_all_available()
    with pytest.raises(StateStoreError, match=r"state_var='count' reads a state variable"):
        driver.get_state_store("counts", state_var="count")
    with pytest.raises(StateStoreError, match=r"timers=True reads a state variable"):
        driver.get_state_store("counts", timers=True)
    assert driver.get_key_value_store("counts").to_dict() == {"a": {"count": 1}}


@pytest.mark.parametrize("thing", ["local[2]", 42, object()], ids=["str", "int", "object"])
def test_spark_must_be_a_session(thing):
    with pytest.raises(NotASparkSessionError, match="spark= must be a SparkSession") as caught:
        TopologyTestDriver(counts, spark=thing)
    assert isinstance(caught.value, StreamTestError) and isinstance(caught.value, TypeError)
