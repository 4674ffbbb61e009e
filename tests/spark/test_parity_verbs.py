"""The verbs of Spark's StreamTest, on real queries: an empty AddData, a clock jump after a
stall, StopStream/StartStream, Spark-exact assertNumStateRows, memory-sink reads
(CheckAnswer, CheckLastBatch), sql_conf while the topology is built."""

from __future__ import annotations

from datetime import timedelta

import pytest
from pyspark.sql import functions as F

from pyspark_streamtest import (
    DriverStoppedError,
    Topology,
    TopologyTestDriver,
)
from tests.helpers import T0, at, clicks_per_user, counts_per_user, window
from tests.spark.test_time import expiring_sessions

S = timedelta(seconds=1)


def passthrough(t: Topology) -> None:
    t.output("out", t.input("events", schema="n INT"))


def total_count(t: Topology) -> None:
    clicks = t.input("clicks", schema="user STRING, url STRING, ts TIMESTAMP",
                     timestamp_column="ts")
    t.output("total", clicks.groupBy("user").count(), output_mode="complete")


# --- AddData(stream) with no rows ---------------------------------------------------------
def test_an_empty_batch_runs_as_a_data_batch_of_zero_rows(topology_driver):
    driver = topology_driver(passthrough)
    events = driver.create_input_topic("events")
    out = driver.create_output_topic("out")

    events.pipe_empty_batch()
    (empty,) = driver.process_all_available()
    assert (empty.batch_id, empty.is_data_batch, empty.num_input_rows) == (0, True, 0)
    assert empty.output_records == () and out.is_empty()

    events.pipe_value_list([{"n": 1}, {"n": 2}])
    (batch,) = driver.process_all_available()
    assert (batch.batch_id, batch.num_input_rows) == (1, 2)
    assert out.read_values_to_list() == [{"n": 1}, {"n": 2}]
    assert driver.process_all_available() == []  # nothing new: no batch


def test_an_empty_batch_with_rows_in_the_same_step_is_one_batch(topology_driver):
    driver = topology_driver(passthrough)
    events = driver.create_input_topic("events")
    events.pipe_empty_batch()
    events.pipe_input({"n": 7})
    ran = driver.advance_wall_clock(S)
    assert [(b.batch_id, b.num_input_rows) for b in ran] == [(0, 1)]


def test_an_empty_batch_lets_a_stateful_query_emit_with_the_watermark_it_has(topology_driver):
    driver = topology_driver(clicks_per_user)
    clicks = driver.create_input_topic("clicks")
    counts = driver.create_output_topic("counts")
    clicks.pipe_input({"user": "a", "url": "/"}, timestamp=at(1))
    clicks.pipe_input({"user": "a", "url": "/"}, timestamp=at(25))
    driver.advance_wall_clock(S)  # data batch 0 only: the watermark after it is 15 s
    driver.jump_wall_clock(timedelta(0))  # no trigger due: nothing runs
    assert counts.is_empty()

    clicks.pipe_empty_batch()
    ran = driver.advance_wall_clock(S)
    assert [(b.batch_id, b.is_data_batch, b.num_input_rows) for b in ran] == [(1, True, 0)]
    assert ran[0].watermark == at(15)
    assert counts.read_values_to_list() == [{"window": window(0, 10), "user": "a", "count": 1}]


# --- AdvanceManualClock after a stall --------------------------------------------------------
def test_a_clock_jump_runs_one_trigger_at_the_new_time(topology_driver):
    driver = topology_driver(expiring_sessions)
    clicks = driver.create_input_topic("clicks")
    sessions = driver.create_output_topic("sessions")
    clicks.pipe_input(("a",))
    driver.process_all_available()  # timeout due at T0 + 5 s
    sessions.read_values_to_list()

    ran = driver.jump_wall_clock(timedelta(seconds=10))
    # advance_wall_clock would run a batch at each of the 10 triggers; a jump runs one.
    assert [b.processing_time for b in ran] == [T0 + timedelta(seconds=10)]
    assert driver.current_time == T0 + timedelta(seconds=10)
    assert sessions.read_values_to_list() == [{"user": "a", "count": 1, "kind": "expired"}]

    ran = driver.advance_wall_clock(S)  # the next trigger is the first interval after it
    assert [b.processing_time for b in ran] == [T0 + timedelta(seconds=11)]


def test_a_clock_jump_between_triggers_runs_nothing(topology_driver):
    driver = topology_driver(passthrough)
    driver.create_input_topic("events").pipe_input({"n": 1})
    assert driver.jump_wall_clock(timedelta(milliseconds=500)) == []  # next trigger at 1 s
    (batch,) = driver.jump_wall_clock(timedelta(milliseconds=2500))
    assert batch.processing_time == T0 + timedelta(seconds=3)


def test_jump_wall_clock_refuses_negative_time(topology_driver):
    from pyspark_streamtest import TimeWentBackwardsError

    driver = topology_driver(passthrough)
    with pytest.raises(TimeWentBackwardsError):
        driver.jump_wall_clock(-S)
    assert driver.current_time == T0


# --- StopStream / StartStream ------------------------------------------------------------------
def test_stop_and_start_resume_from_the_checkpoint(topology_driver):
    driver = topology_driver(counts_per_user)
    clicks = driver.create_input_topic("clicks")
    counts = driver.create_output_topic("counts")
    clicks.pipe_input({"user": "a", "url": "/"})
    driver.process_all_available()
    assert counts.read_values_to_list() == [{"user": "a", "count": 1}]

    driver.stop()
    assert not driver.is_running
    driver.stop()  # stopping stopped queries does nothing
    clicks.pipe_value_list([{"user": "a", "url": "/"}, {"user": "b", "url": "/"}])
    assert driver.advance_wall_clock(timedelta(seconds=5)) == []  # time moves, nothing runs
    assert driver.current_time == T0 + timedelta(seconds=5)
    with pytest.raises(DriverStoppedError, match=r"driver\.start\(\)"):
        driver.process_all_available()
    with pytest.raises(DriverStoppedError, match=r"driver\.start\(\)"):
        driver.advance_watermark_to(at(10))
    assert counts.is_empty()

    ran = driver.start()  # the records piped while stopped run at once, state continues
    assert driver.is_running
    assert [(b.batch_id, b.num_input_rows, b.processing_time) for b in ran] == [
        (1, 2, T0 + timedelta(seconds=5))]
    assert sorted(counts.read_values_to_list(), key=str) == [
        {"user": "a", "count": 2}, {"user": "b", "count": 1}]
    assert driver.start() == []  # already running
    assert [b.batch_id for b in driver.batches] == [0, 1]


def test_start_after_stop_with_nothing_piped_runs_nothing(topology_driver):
    driver = topology_driver(passthrough)
    driver.create_input_topic("events").pipe_input({"n": 1})
    driver.process_all_available()
    driver.stop()
    assert driver.start() == []
    driver.create_input_topic("events").pipe_input({"n": 2})
    (batch,) = driver.process_all_available()
    assert batch.batch_id == 1


# --- assertNumStateRows, as Spark's StateStoreMetricsTest -----------------------------------
def test_updated_rows_are_summed_since_the_previous_check(topology_driver):
    driver = topology_driver(counts_per_user)
    clicks = driver.create_input_topic("clicks")
    clicks.pipe_value_list([{"user": "a", "url": "/"}, {"user": "b", "url": "/"}])
    driver.process_all_available()
    driver.assert_num_state_rows("counts", total=2, updated=2)
    driver.assert_num_state_rows("counts", total=2, updated=0)  # nothing new: zeros

    clicks.pipe_input({"user": "a", "url": "/"})
    driver.process_all_available()
    clicks.pipe_input({"user": "c", "url": "/"})
    driver.process_all_available()
    driver.assert_num_state_rows("counts", total=[3], updated=[2], removed=0,
                                 dropped_by_watermark=0)
    driver.assert_num_state_rows("counts", total=2, updated=1, batch_id=1)  # one batch only


def test_a_failed_check_shows_the_summed_batches_and_keeps_the_sum(topology_driver):
    driver = topology_driver(counts_per_user)
    clicks = driver.create_input_topic("clicks")
    clicks.pipe_value_list([{"user": "a", "url": "/"}, {"user": "b", "url": "/"}])
    driver.process_all_available()
    clicks.pipe_input({"user": "a", "url": "/"})
    driver.process_all_available()
    with pytest.raises(AssertionError) as failure:
        driver.assert_num_state_rows("counts", total=2, updated=1)
    message = str(failure.value)
    assert "summed over batches 0..1" in message
    assert "1/3" in message and "<-" in message
    driver.assert_num_state_rows("counts", total=2, updated=3)  # a failure moves nothing


def test_the_sums_start_again_after_a_restart(topology_driver):
    driver = topology_driver(counts_per_user)
    clicks = driver.create_input_topic("clicks")
    clicks.pipe_value_list([{"user": "a", "url": "/"}, {"user": "b", "url": "/"}])
    driver.process_all_available()
    driver.restart()
    clicks.pipe_input({"user": "a", "url": "/"})
    driver.process_all_available()
    driver.assert_num_state_rows("counts", total=2, updated=1)


def test_rows_dropped_by_watermark_are_summed(topology_driver):
    driver = topology_driver(clicks_per_user)
    clicks = driver.create_input_topic("clicks")
    clicks.pipe_input({"user": "a", "url": "/"}, timestamp=at(30))
    driver.process_all_available()  # the watermark becomes 20 s
    driver.assert_num_state_rows("counts", total=1, updated=1, dropped_by_watermark=0)
    clicks.pipe_input({"user": "a", "url": "/"}, timestamp=at(5))
    driver.process_all_available()
    clicks.pipe_input({"user": "b", "url": "/"}, timestamp=at(6))
    driver.process_all_available()
    driver.assert_num_state_rows("counts", total=1, updated=0, dropped_by_watermark=2)


# --- memory-sink reads: CheckAnswer, CheckLastBatch ------------------------------------------
def test_all_rows_and_last_batch_rows_in_update_mode(topology_driver):
    driver = topology_driver(counts_per_user)
    clicks = driver.create_input_topic("clicks")
    counts = driver.create_output_topic("counts")
    assert counts.all_rows() == [] and counts.last_batch_rows() == []
    clicks.pipe_value_list([{"user": "a", "url": "/"}, {"user": "b", "url": "/"}])
    driver.process_all_available()
    clicks.pipe_input({"user": "a", "url": "/"})
    driver.process_all_available()
    assert sorted(counts.all_rows(), key=str) == [
        {"user": "a", "count": 1}, {"user": "a", "count": 2}, {"user": "b", "count": 1}]
    assert counts.last_batch_rows() == [{"user": "a", "count": 2}]
    assert counts.queue_size == 3  # neither read consumes


def test_all_rows_in_complete_mode_is_the_last_result(topology_driver):
    driver = topology_driver(total_count)
    clicks = driver.create_input_topic("clicks")
    total = driver.create_output_topic("total")
    clicks.pipe_value_list([{"user": "a", "url": "/"}, {"user": "b", "url": "/"}])
    driver.process_all_available()
    clicks.pipe_input({"user": "a", "url": "/"})
    driver.process_all_available()
    assert sorted(total.all_rows(), key=str) == [
        {"user": "a", "count": 2}, {"user": "b", "count": 1}]
    assert total.queue_size == 4  # the topic still has every batch's rows


def test_last_batch_rows_is_empty_after_a_batch_that_wrote_nothing(topology_driver):
    driver = topology_driver(clicks_per_user)
    clicks = driver.create_input_topic("clicks")
    counts = driver.create_output_topic("counts")
    clicks.pipe_input({"user": "a", "url": "/"}, timestamp=at(1))
    clicks.pipe_input({"user": "a", "url": "/"}, timestamp=at(25))
    ran = driver.process_all_available()  # the data batch, then the no-data batch emits
    assert counts.last_batch_rows() == [{"window": window(0, 10), "user": "a", "count": 1}]
    assert len(ran) == 2
    clicks.pipe_input({"user": "b", "url": "/"}, timestamp=at(26))
    driver.process_all_available()
    assert counts.last_batch_rows() == []
    assert counts.all_rows() == [{"window": window(0, 10), "user": "a", "count": 1}]


# --- sql_conf while the topology is built ---------------------------------------------------
def test_sql_conf_applies_while_the_topology_is_built(spark):
    def hours(t: Topology) -> None:
        clicks = t.input("clicks", schema="user STRING, ts TIMESTAMP", timestamp_column="ts")
        t.output("hours", clicks.select("user", F.hour("ts").alias("hour"),
                                        F.date_format("ts", "HH:mm").alias("text")))

    before = spark.conf.get("spark.sql.session.timeZone")
    with TopologyTestDriver(hours, spark=spark,
                            sql_conf={"spark.sql.session.timeZone": "America/New_York"}) as driver:
        assert spark.conf.get("spark.sql.session.timeZone") == before
        driver.create_input_topic("clicks").pipe_input({"user": "a"}, timestamp=at(12 * 3600))
        driver.process_all_available()
        assert driver.create_output_topic("hours").read_values_to_list() == [
            {"user": "a", "hour": 7, "text": "07:00"}]


def test_sql_conf_is_restored_when_the_topology_fails(spark):
    def broken(t: Topology) -> None:
        raise RuntimeError("boom")

    before = spark.conf.get("spark.sql.session.timeZone")
    with pytest.raises(RuntimeError, match="boom"):
        TopologyTestDriver(broken, spark=spark,
                           sql_conf={"spark.sql.session.timeZone": "Asia/Tokyo"})
    assert spark.conf.get("spark.sql.session.timeZone") == before


# --- per-output batch history ------------------------------------------------------------
def test_each_output_topic_has_its_own_batch_history(topology_driver):
    def two_outputs(t: Topology) -> None:
        clicks = t.input("clicks", schema="user STRING, url STRING, ts TIMESTAMP",
                         timestamp_column="ts")
        t.output("users", clicks.select("user"))
        t.output("counts", clicks.groupBy("user").count(), output_mode="update")

    driver = topology_driver(two_outputs)
    clicks = driver.create_input_topic("clicks")
    users, counts = driver.create_output_topic("users"), driver.create_output_topic("counts")
    clicks.pipe_input({"user": "a", "url": "/"})
    driver.process_all_available()
    assert [b.output for b in driver.batches] == ["users", "counts"]
    assert [(b.output, b.batch_id) for b in counts.batches] == [("counts", 0)]
    assert counts.batches[-1].output_values == [{"user": "a", "count": 1}]
    assert users.batches[-1].output_values == [{"user": "a"}]
    users.read_values_to_list()
    assert len(users.batches) == 1  # reads do not touch the history
