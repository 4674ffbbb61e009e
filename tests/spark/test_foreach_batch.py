"""``t.foreach_batch``: the user's function runs inside every micro-batch of a real
query, with Spark's batch id, as ``writeStream.foreachBatch`` runs it."""

from __future__ import annotations

from datetime import timedelta

import pytest
from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from pyspark_streamtest import StreamingQueryFailedError, Topology, TopologyError
from tests.helpers import at


class Calls:
    """What a foreachBatch function saw: (batch id, rows) per call."""

    def __init__(self, fail_on: str | None = None) -> None:
        self.seen: list[tuple[int, list[tuple[object, ...]]]] = []
        self.fail_on = fail_on

    def __call__(self, batch: DataFrame, batch_id: int) -> None:
        rows = sorted(tuple(r) for r in batch.collect())
        self.seen.append((batch_id, rows))
        if self.fail_on is not None and any(self.fail_on in r for r in rows):
            raise ValueError(f"cannot store {self.fail_on!r}")


def windowed(calls: Calls):
    def topology(t: Topology) -> None:
        clicks = t.input("clicks", schema="user STRING, ts TIMESTAMP", timestamp_column="ts")
        counts = (clicks.withWatermark("ts", "5 seconds")
                  .groupBy(F.window("ts", "10 seconds"), "user").count()
                  .select(F.col("window.start").alias("start"), "user", "count"))
        t.foreach_batch("store", counts, calls)
    return topology


def test_the_function_sees_every_batch_with_its_id_no_data_batches_included(topology_driver):
    calls = Calls()
    driver = topology_driver(windowed(calls))
    clicks = driver.create_input_topic("clicks")
    clicks.pipe_input({"user": "a"}, timestamp=at(1))
    clicks.pipe_input({"user": "a"}, timestamp=at(2))
    first = driver.process_all_available()  # the watermark moved: a no-data batch follows
    clicks.pipe_input({"user": "b"}, timestamp=at(20))  # watermark 15 s closes [0, 10)
    ran = driver.process_all_available()

    assert [(b.batch_id, b.new_data) for b in (*first, *ran)] == [
        (0, True), (1, False), (2, True), (3, False)]
    assert calls.seen == [(0, []), (1, []), (2, []), (3, [(at(0).replace(tzinfo=None), "a", 2)])]
    # The output keeps the rows the function was given.
    store = driver.create_output_topic("store")
    assert [(r.batch_id, r.value["user"], r.value["count"])
            for r in store.read_records_to_list()] == [(3, "a", 2)]


def stateless(calls: Calls):
    def topology(t: Topology) -> None:
        t.foreach_batch("store", t.input("clicks", schema="user STRING"), calls)
    return topology


def test_an_error_in_the_function_fails_the_batch_and_restart_retries_the_same_batch(
        topology_driver):
    calls = Calls(fail_on="bad")
    driver = topology_driver(stateless(calls), trigger_interval=timedelta(seconds=10))
    clicks = driver.create_input_topic("clicks")
    clicks.pipe_input({"user": "bad"})
    with pytest.raises(StreamingQueryFailedError) as failed:
        driver.process_all_available()
    assert (failed.value.output, failed.value.batch_id) == ("store", 0)
    assert "ValueError: cannot store 'bad'" in failed.value.cause

    calls.fail_on = None  # the cause is fixed: Spark's recovery runs batch 0 again
    ran = driver.restart()
    assert [b.batch_id for b in ran] == [0]
    assert calls.seen == [(0, [("bad",)]), (0, [("bad",)])]


def test_the_function_must_be_callable(topology_driver):
    def topology(t: Topology) -> None:
        t.foreach_batch("store", t.input("x", schema="a INT"), "not a function")  # type: ignore[arg-type]

    with pytest.raises(TopologyError, match="foreachBatch function must be callable"):
        topology_driver(topology)


def test_a_batch_runs_once_its_function_sees_what_the_driver_records(topology_driver):
    """Spark runs a foreachBatch batch's plan once (the sink's rows and the function's
    DataFrame are one execution): numInputRows counts each record once, and a
    non-deterministic column has the same values in the function and in the output."""
    seen: list[str] = []

    def remember(batch: DataFrame, batch_id: int) -> None:
        seen.extend(row["id"] for row in batch.collect())
        seen.extend(row["id"] for row in batch.collect())  # a second action reads the same

    def topology(t: Topology) -> None:
        clicks = t.input("clicks", schema="user STRING")
        t.foreach_batch("audit", clicks.withColumn("id", F.expr("uuid()")), remember)
        t.output("plain", t.input("views", schema="user STRING"))

    driver = topology_driver(topology)
    clicks = driver.create_input_topic("clicks")
    clicks.pipe_value_list([{"user": u} for u in "abcd"])
    driver.create_input_topic("views").pipe_value_list([{"user": u} for u in "abcd"])
    ran = driver.process_all_available()

    assert sorted((b.output, b.num_input_rows) for b in ran) == [("audit", 4), ("plain", 4)]
    recorded = [r.value["id"] for r in driver.create_output_topic("audit").read_records_to_list()]
    assert len(set(recorded)) == 4
    assert seen == recorded + recorded


def test_the_batch_is_of_its_query_s_session_as_pyspark_hands_it_over(topology_driver, spark):
    """PySpark's foreachBatch wraps each batch in its query's own (cloned) session: a
    temp view of the batch is what ``batch_df.sparkSession.sql`` reads, and in classic
    mode the test's session does not see it. (Over Connect 4.0-4.2 the batch is the
    client's session's, as there: tests/spark/test_connect.py.)"""
    counted: list[int] = []

    def store(batch: DataFrame, batch_id: int) -> None:
        batch.createOrReplaceTempView("this_batch")
        row = batch.sparkSession.sql("SELECT count(*) AS n FROM this_batch").first()
        counted.append(-1 if row is None else row.n)

    def topology(t: Topology) -> None:
        t.foreach_batch("store", t.input("clicks", schema="user STRING"), store)

    driver = topology_driver(topology)
    driver.create_input_topic("clicks").pipe_value_list([{"user": u} for u in "ab"])
    driver.process_all_available()
    assert counted == [2]
    if not type(spark).__module__.startswith("pyspark.sql.connect"):
        assert not spark.catalog.tableExists("this_batch")
