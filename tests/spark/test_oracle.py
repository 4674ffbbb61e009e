"""The differential oracle compares the driver's batches with the same micro-batches run
by Spark alone (Spark's JVM ManualClock and MemorySink), and fails at the first batch
and field that differ. These tests turn it on for one driver and show that it passes
on a faithful run and catches a driver that changes what Spark does."""

from __future__ import annotations

from datetime import timedelta

import pytest
from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from pyspark_streamtest import (
    Feature,
    OracleMismatchError,
    Topology,
    TopologyTestDriver,
    supported_features,
)
from pyspark_streamtest._spark.query import sink as sink_module
from pyspark_streamtest.driver import oracle as oracle_module
from tests.helpers import at, clicks_per_user


@pytest.fixture
def oracle(monkeypatch):
    monkeypatch.setenv(oracle_module.ORACLE_ENV, "1")
    before = oracle_module.STATS.as_dict()
    yield lambda: {key: oracle_module.STATS.as_dict()[key] - before[key]
                   for key in ("queries", "batches", "state_stores", "same_time_triggers",
                               "input_only_batches")}


@pytest.fixture
def kept_open(spark, oracle):
    """A driver open across the test and the teardown of its ``topology_driver``, as a
    module-scoped one is, with the oracle on: the oracle's queries beside its queries run meanwhile."""
    with TopologyTestDriver(clicks_per_user, spark=spark) as driver:
        driver.create_input_topic("clicks").pipe_input({"user": "a", "url": "/"},
                                                        timestamp=at(1))
        driver.process_all_available()
        yield driver


def test_the_oracle_s_queries_of_a_driver_kept_open_are_not_queries_the_test_left_running(
        kept_open, topology_driver, spark):
    """``topology_driver``'s teardown (before ``kept_open``'s) fails a test that left a
    query of its own running; the oracle's queries of a driver still open are the driver's."""
    assert any((q.name or "").startswith("spark-alone-streamtest-")
               for q in spark.streams.active)
    driver = topology_driver(clicks_per_user)
    driver.create_input_topic("clicks").pipe_input({"user": "b", "url": "/"},
                                                    timestamp=at(2))
    assert len(driver.process_all_available()) == 2
    assert kept_open.is_running


def test_a_faithful_run_compares_every_batch_and_the_state(topology_driver, oracle, spark):
    driver = topology_driver(clicks_per_user)
    clicks = driver.create_input_topic("clicks")
    clicks.pipe_input({"user": "a", "url": "/"}, timestamp=at(1))
    clicks.pipe_input({"user": "a", "url": "/x"}, timestamp=at(7))
    driver.process_all_available()
    clicks.pipe_input({"user": "b", "url": "/"}, timestamp=at(21))
    ran = driver.process_all_available()
    driver.advance_wall_clock(timedelta(seconds=5))
    driver.restart()
    clicks.pipe_input({"user": "c", "url": "/"}, timestamp=at(3))  # late: dropped
    driver.process_all_available()
    assert [b.is_data_batch for b in ran] == [True, False]
    driver.close()

    compared = oracle()
    assert compared["queries"] == 1
    assert compared["batches"] == len(driver.batches) == 5
    # Three batches ran at the time of the batch before them (the no-data batches, and
    # the data batch piped after a no-data batch): Spark alone runs each at its next
    # trigger time, 1 ms later. The windowed count does not read the clock, so their
    # rows and state were compared all the same.
    assert compared["same_time_triggers"] == 3
    assert compared["input_only_batches"] == 0
    # The state stores at the restart and at the close (read with format("statestore"),
    # PySpark 4.0+).
    readable = Feature.STATE_STORE_READS in supported_features(spark)
    assert compared["state_stores"] == (2 if readable else 0)


def test_it_catches_a_batch_whose_rows_the_driver_changed(topology_driver, oracle,
                                                          monkeypatch):
    original = sink_module.CollectingSink.take_batches

    def drop_a_row(self):  # a driver bug: one row of the batch lost on the way
        return [(batch_id, rows[1:]) for batch_id, rows in original(self)]

    monkeypatch.setattr(sink_module.CollectingSink, "take_batches", drop_a_row)

    def topology(t: Topology) -> None:
        t.output("upper", t.input("words", schema="w STRING")
                 .select(F.upper("w").alias("w")))

    driver = topology_driver(topology)
    driver.create_input_topic("words").pipe_value_list([{"w": "a"}, {"w": "b"}])
    with pytest.raises(OracleMismatchError) as found:
        driver.process_all_available()
    message = str(found.value)
    assert "output 'upper', batch 0: rows out differs from Spark alone" in message
    assert "driver:      1 rows" in message and "Spark alone: 2 rows" in message


def test_it_catches_a_foreach_batch_that_runs_the_batch_twice(topology_driver, oracle,
                                                              monkeypatch):
    """The defect the oracle was built after: the driver collected a foreachBatch
    batch, then the function ran the plan again (numInputRows 8 for 4 records)."""
    def collect_then_call(self, frame, batch_id):
        rows = frame.collect()
        self._then(frame, batch_id)
        return rows

    monkeypatch.setattr(sink_module.CollectingSink, "_collect_then_call", collect_then_call)

    def count(batch: DataFrame, batch_id: int) -> None:
        batch.count()

    def topology(t: Topology) -> None:
        t.foreach_batch("audit", t.input("clicks", schema="user STRING"), count)

    driver = topology_driver(topology)
    driver.create_input_topic("clicks").pipe_value_list([{"user": u} for u in "abcd"])
    with pytest.raises(OracleMismatchError, match=r"(?s)batch 0: numInputRows differs.*"
                       r"driver:      8.*Spark alone: 4"):
        driver.process_all_available()
