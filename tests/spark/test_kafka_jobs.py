"""Kafka jobs as production runs them (issue 58): the Kafka source's admission control
(``maxOffsetsPerTrigger``, ``minOffsetsPerTrigger``, ``maxTriggerDelay``), backfills
that end (``availableNow``, ``once``), the job's command line and the triggers the
driver refuses, and ``assign``. The batches expected are the ones Spark's Kafka source
makes, by its rules (the cases ported from Spark's suites run through real queries in
``tests/spark/parity/test_kafka_micro_batch_source_suite.py``; their arithmetic alone in
``tests/unit/test_admission.py``)."""

from __future__ import annotations

import argparse
import sys
from datetime import datetime, timedelta, timezone

import pytest
from pyspark.sql import SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import StructField, StructType, TimestampType

from pyspark_streamtest import (
    BackfillNeverEndsError,
    DriverStoppedError,
    Feature,
    InvalidArgumentError,
    InvalidArgumentTypeError,
    StreamingQueryFailedError,
    Topology,
    TopologyError,
    TopologyTestDriver,
    UnsupportedAppCallError,
)
from pyspark_streamtest._spark.versions import pyspark_version_tuple
from pyspark_streamtest.state import Window
from tests.helpers import T0, at

EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)


def values(batch) -> list[str]:
    return [r.value for r in batch.input_records]


def two_topics(spark: SparkSession) -> None:
    (spark.readStream.format("kafka").option("subscribe", "clicks,views")
     .option("maxOffsetsPerTrigger", 500).load()
     .writeStream.format("memory").queryName("events").start())


def test_max_offsets_per_trigger_shares_the_limit_over_the_topics_by_their_backlog(spark):
    """700 + 500 records piped before a trigger: Spark's Kafka source makes three
    batches of 291 + 208, 291 + 208 and 118 + 84 (the shares round down), one per
    trigger, not one batch of 1200."""
    with TopologyTestDriver.from_app(two_topics, spark=spark, start_time=T0) as driver:
        clicks = driver.create_input_topic("clicks", value_serializer="string")
        views = driver.create_input_topic("views", value_serializer="string")
        clicks.pipe_value_list([f"c{i}" for i in range(700)])
        views.pipe_value_list([f"v{i}" for i in range(500)])
        ran = driver.advance_wall_clock(timedelta(seconds=5))
        assert [(b.batch_id, b.processing_time, b.num_input_rows) for b in ran] == [
            (0, at(1), 499), (1, at(2), 499), (2, at(3), 202)]
        per_topic = [(sum(v[0] == "c" for v in values(b)), sum(v[0] == "v" for v in values(b)))
                     for b in ran]
        assert per_topic == [(291, 208), (291, 208), (118, 84)]
        # each partition is read in its order, and every record once
        read = [v for b in ran for v in values(b)]
        assert sorted(read) == sorted([f"c{i}" for i in range(700)] + [f"v{i}" for i in range(500)])
        assert [v for v in read if v[0] == "c"] == [f"c{i}" for i in range(700)]


def test_process_all_available_drains_the_backlog_in_the_batches_the_limit_makes(spark):
    with TopologyTestDriver.from_app(two_topics, spark=spark, start_time=T0) as driver:
        driver.create_input_topic("clicks", value_serializer="string").pipe_value_list(
            [f"c{i}" for i in range(700)])
        driver.create_input_topic("views", value_serializer="string").pipe_value_list(
            [f"v{i}" for i in range(500)])
        ran = driver.process_all_available()
        assert [(b.num_input_rows, b.processing_time) for b in ran] == [
            (499, T0), (499, T0), (202, T0)]


def pipe_per_partition(events, counts) -> None:
    """``counts`` records to each partition (partition, count), valued ``"p-i"``."""
    for partition, count in counts:
        for i in range(count):
            events.pipe_input(None, f"{partition}-{i}", partition=partition)


def per_partition(ran, partitions: int = 3) -> list[list[int]]:
    """How many records of each partition each batch read."""
    return [[sum(1 for r in b.input_records if r.partition == p) for p in range(partitions)]
            for b in ran]


def partitioned(t: Topology) -> None:
    events = t.kafka_input("events", partitions=3, max_offsets_per_trigger=10)
    t.output("out", events.select(F.col("value").cast("string").alias("v"), "partition"))


def test_a_topology_s_kafka_input_takes_the_limit_partition_by_partition(topology_driver):
    """Spark's rule per partition: 3, 5 and 12 waiting with a limit of 10 take
    floor(10 * 3/20) = 1, floor(10 * 5/20) = 2 and floor(10 * 12/20) = 6."""
    driver = topology_driver(partitioned)
    events = driver.create_input_topic("events", value_serializer="string")
    pipe_per_partition(events, ((0, 3), (1, 5), (2, 12)))
    counts = per_partition(driver.process_all_available())
    # 3/5/12 of 20 -> 1/2/6 (1.5, 2.5, 6 rounded down); 2/3/6 of 11 -> 1/2/5 (1.8, 2.7,
    # 5.5); 1/1/1 -> all (3.3 each, at most the backlog)
    assert counts == [[1, 2, 6], [1, 2, 5], [1, 1, 1]]


def small_batches_wait(spark: SparkSession) -> None:
    (spark.readStream.format("kafka").option("subscribe", "events")
     .option("minOffsetsPerTrigger", 5).option("maxTriggerDelay", "10s").load()
     .writeStream.format("memory").queryName("events")
     .trigger(processingTime="2 seconds").start())


def test_min_offsets_per_trigger_waits_for_enough_records_or_the_max_trigger_delay(spark):
    with TopologyTestDriver.from_app(small_batches_wait, spark=spark, start_time=T0) as driver:
        events = driver.create_input_topic("events", value_serializer="string")
        # The query's first trigger, when the job started it (T0), passed the delay test
        # (Spark's lastTriggerMillis starts at 0): maxTriggerDelay counts from there.
        events.pipe_value_list(["a", "b"])  # 2 < 5: held back at 2, 4, 6 and 8 s
        assert driver.advance_wall_clock(timedelta(seconds=8)) == []
        (batch,) = driver.advance_wall_clock(timedelta(seconds=2))  # 10 s after T0
        assert (batch.processing_time, values(batch)) == (at(10), ["a", "b"])
        events.pipe_value_list(["c", "d", "e", "f", "g"])  # 5: enough, at once
        (batch,) = driver.advance_wall_clock(timedelta(seconds=2))
        assert (batch.processing_time, batch.num_input_rows) == (at(12), 5)
        events.pipe_input(None, "h")  # held back until 10 s after the batch at 12 s
        assert driver.advance_wall_clock(timedelta(seconds=8)) == []
        (batch,) = driver.advance_wall_clock(timedelta(seconds=2))
        assert (batch.processing_time, values(batch)) == (at(22), ["h"])


def windows_per_ten_seconds(spark: SparkSession, limit: int | None) -> None:
    reader = spark.readStream.format("kafka").option("subscribe", "events")
    if limit is not None:
        reader = reader.option("maxOffsetsPerTrigger", limit)
    (reader.load().withWatermark("timestamp", "5 seconds")
     .groupBy(F.window("timestamp", "10 seconds")).count()
     .writeStream.format("memory").queryName("counts").start())


@pytest.mark.parametrize(("limit", "dropped"), [(None, 0), (2, 1)])
def test_batch_boundaries_the_limit_makes_decide_what_is_late(spark, limit, dropped):
    """Records at 30, 31, 32, 33 and 2 s piped at once: in one batch nothing is late;
    two records a batch make three, and the third drops the record at 2 s as late by the
    watermark of the first (26 s; Spark drops by the watermark the batch before evicted
    with), as production with ``maxOffsetsPerTrigger=2`` does."""
    def job(spark: SparkSession) -> None:
        windows_per_ten_seconds(spark, limit)

    with TopologyTestDriver.from_app(job, spark=spark, start_time=T0) as driver:
        events = driver.create_input_topic("events", value_serializer="string")
        for second in (30, 31, 32, 33, 2):
            events.pipe_input(None, str(second), timestamp=at(second))
        ran = driver.process_all_available()
        assert [b.num_input_rows for b in ran if b.is_data_batch] == (
            [5] if limit is None else [2, 2, 1])
        assert sum(b.num_rows_dropped_by_watermark for b in ran) == dropped


def backfill(spark: SparkSession) -> None:
    parser = argparse.ArgumentParser(prog="sessions")
    parser.add_argument("--trigger", choices=["availableNow", "once", "1 minute"],
                        default="1 minute")
    args = parser.parse_args()  # sys.argv[1:], as in production
    events = (spark.readStream.format("kafka").option("subscribe", "events")
              .option("maxOffsetsPerTrigger", 3).load())
    writer = (events.withWatermark("timestamp", "10 seconds")
              .groupBy(F.window("timestamp", "10 seconds")).count()
              .writeStream.format("memory").queryName("counts"))
    if args.trigger == "availableNow":
        writer = writer.trigger(availableNow=True)
    elif args.trigger == "once":
        writer = writer.trigger(once=True)
    else:
        writer = writer.trigger(processingTime=args.trigger)
    writer.start()
    spark.streams.awaitAnyTermination()


def test_an_available_now_backfill_reads_its_backlog_in_limited_batches_then_ends(spark):
    with TopologyTestDriver.from_app(backfill, spark=spark, start_time=T0,
                                     argv=["--trigger", "availableNow"]) as driver:
        # main() returned: its query found an empty topic, ran nothing and ended
        assert driver.batches == () and driver.ended_outputs == ("counts",)
        assert not driver.is_running
        events = driver.create_input_topic("events", value_serializer="string")
        for second in (0, 5, 10, 15, 20, 25, 30):
            events.pipe_input(None, str(second), timestamp=at(second))
        ran = driver.restart()  # the next scheduled run of the job
        # 3 + 3 + 1 records by the limit, then the no-data batch the watermark (20 s)
        # asks for, which closes [10, 20); then a trigger that constructs nothing: the end
        assert [(b.batch_id, b.num_input_rows, b.processing_time) for b in ran] == [
            (0, 3, T0), (1, 3, T0), (2, 1, T0), (3, 0, T0)]
        counts = driver.create_output_topic("counts")
        assert sorted(counts.read_values_to_list(), key=lambda v: v["window"]["start"]) == [
            {"window": {"start": at(0), "end": at(10)}, "count": 2},
            {"window": {"start": at(10), "end": at(20)}, "count": 2}]
        assert not driver.is_running and driver.ended_outputs == ("counts",)
        # records piped after the end wait for the next run, which reads only them
        events.pipe_input(None, "late", timestamp=at(100))
        with pytest.raises(DriverStoppedError, match=r"ended.*driver\.restart\(\)"):
            driver.process_all_available()
        assert driver.advance_wall_clock(timedelta(minutes=5)) == []
        ran = driver.restart()
        assert [(b.batch_id, b.num_input_rows) for b in ran] == [(4, 1), (5, 0)]
        assert sorted(counts.read_values_to_list(), key=lambda v: v["window"]["start"]) == [
            {"window": {"start": at(20), "end": at(30)}, "count": 2},
            {"window": {"start": at(30), "end": at(40)}, "count": 1}]


@pytest.mark.streamtest_requires(Feature.STATE_STORE_READS)
def test_what_an_ended_backfill_leaves_is_readable_after_its_end(spark):
    """State, watermark, late records and history stay the driver's to read once an
    ``availableNow`` query has ended. The limit of 3 makes the record at 3 s a batch
    of its own, the fourth: Spark drops a row as late by the watermark of the batch
    before (15 s, after 25 s was seen), so it is late there, though it would not have
    been in the third batch (whose previous watermark was 0 s)."""
    with TopologyTestDriver.from_app(backfill, spark=spark, start_time=T0,
                                     argv=["--trigger", "availableNow"]) as driver:
        events = driver.create_input_topic("events", value_serializer="string")
        for second in (0, 5, 10, 15, 20, 25, 30, 35, 40, 3):
            events.pipe_input(None, str(second), timestamp=at(second))
        ran = driver.restart()
        assert [(b.num_input_rows, b.watermark, b.num_rows_dropped_by_watermark)
                for b in ran] == [(3, EPOCH, 0), (3, at(0), 0), (3, at(15), 0), (1, at(30), 1)]
        assert not driver.is_running and driver.ended_outputs == ("counts",)
        assert driver.watermark("counts") == at(30)
        (late,) = driver.late_records("counts")
        assert (late.record.value, late.batch_id, late.watermark) == ("3", 3, at(15))
        assert [(e.window, e.value) for e in driver.get_window_store("counts").all()] == [
            (Window(at(30), at(40)), {"count": 2}), (Window(at(40), at(50)), {"count": 1})]
        assert [(e.window, e.value)
                for e in driver.get_window_store("counts", batch_id=1).all()] == [
            (Window(at(0), at(10)), {"count": 2}), (Window(at(10), at(20)), {"count": 2}),
            (Window(at(20), at(30)), {"count": 2})]
        assert [b.batch_id for b in driver.batches] == [0, 1, 2, 3]
        with pytest.raises(DriverStoppedError, match=r"every query of the driver has ended.*restart\(\)"):
            driver.advance_watermark_to(at(60), output="counts")
        assert driver.watermark("counts") == at(30)


def held_back_backfill(spark: SparkSession) -> None:
    (spark.readStream.format("kafka").option("subscribe", "events")
     .option("minOffsetsPerTrigger", 3).option("maxOffsetsPerTrigger", 5).load()
     .writeStream.format("memory").queryName("events").trigger(availableNow=True).start())


def test_an_available_now_backfill_ends_with_a_backlog_below_the_minimum_unread(spark):
    """Spark's ``KafkaMicroBatchStream`` has no special case for ``AvailableNow`` in
    its ``minOffsetsPerTrigger`` rule: 7 records, a maximum of 5 and a minimum of 3
    make one batch of 5; the 2 left are fewer than the minimum and the delay has not
    passed, so the next trigger constructs nothing and the query ends. The next run's
    first trigger is let through (its count starts again) and reads them."""
    with TopologyTestDriver.from_app(held_back_backfill, spark=spark, start_time=T0) as driver:
        events = driver.create_input_topic("events", value_serializer="string")
        events.pipe_value_list([str(i) for i in range(7)])
        assert [values(b) for b in driver.restart()] == [["0", "1", "2", "3", "4"]]
        assert driver.ended_outputs == ("events",)
        assert [values(b) for b in driver.restart()] == [["5", "6"]]


def test_a_once_backfill_reads_everything_in_one_batch_whatever_the_limit(spark):
    with TopologyTestDriver.from_app(backfill, spark=spark, start_time=T0,
                                     argv=["--trigger", "once"]) as driver:
        events = driver.create_input_topic("events", value_serializer="string")
        for second in (0, 5, 10, 15, 20, 25, 30):
            events.pipe_input(None, str(second), timestamp=at(second))
        (batch,) = driver.restart()
        # ReadAllAvailable: one batch of 7; no no-data batch after it
        assert (batch.batch_id, batch.num_input_rows) == (0, 7)
        assert driver.ended_outputs == ("counts",)
        assert driver.create_output_topic("counts").read_values_to_list() == []


def test_the_job_sees_its_own_command_line_never_pytest_s(spark):
    seen: list[list[str]] = []
    before = list(sys.argv)

    def job(spark: SparkSession) -> None:
        seen.append(list(sys.argv))
        backfill(spark)

    with TopologyTestDriver.from_app(job, spark=spark) as driver:
        assert driver.output_names == ("counts",)
    with TopologyTestDriver.from_app(job, spark=spark, argv=["--trigger", "once"]):
        pass
    assert sys.argv == before
    assert [argv[1:] for argv in seen[:1]] == [[]]
    assert seen[-1][1:] == ["--trigger", "once"]
    assert seen[0][0].endswith("test_kafka_jobs.py")
    with pytest.raises(InvalidArgumentTypeError, match=r"argv=.*strings"):
        TopologyTestDriver.from_app(job, spark=spark, argv="--trigger once")
    with pytest.raises(InvalidArgumentTypeError, match=r"str\(5\)"):
        TopologyTestDriver.from_app(job, spark=spark, argv=["--n", 5])


@pytest.mark.parametrize(("trigger", "message"), [
    ({"realTime": "5 seconds"}, r"realTime='5 seconds'.*real-time mode.*processingTime"),
    ({"soonish": True}, r"trigger\(soonish=\.\.\.\): a trigger this driver does not know"),
    ({"once": True, "availableNow": True}, r"takes one of .*once, availableNow"),
    ({"once": False}, r"once=True or availableNow=True"),
], ids=["realTime", "unknown", "two", "not-true"])
def test_triggers_the_driver_cannot_run_are_refused_naming_what_to_do(spark, trigger, message):
    def job(spark: SparkSession) -> None:
        spark.readStream.format("rate").load().writeStream.format("noop").trigger(
            **trigger).start()

    with pytest.raises(UnsupportedAppCallError, match=message):
        TopologyTestDriver.from_app(job, spark=spark)


@pytest.mark.parametrize(("option", "value", "message"), [
    ("maxOffsetsPerTrigger", "0", r"maxOffsetsPerTrigger must be a positive number"),
    ("maxOffsetsPerTrigger", "many", r"maxOffsetsPerTrigger='many'.*whole number"),
    ("maxTriggerDelay", "5 parsecs", r"maxTriggerDelay='5 parsecs'.*time"),
], ids=["zero", "text", "delay"])
def test_read_limits_spark_refuses_are_refused(spark, option, value, message):
    def job(spark: SparkSession) -> None:
        (spark.readStream.format("kafka").option("subscribe", "a").option(option, value)
         .load().writeStream.format("noop").start())

    with pytest.raises(TopologyError, match=message):
        TopologyTestDriver.from_app(job, spark=spark)


def test_min_above_max_offsets_is_refused(spark):
    def job(spark: SparkSession) -> None:
        (spark.readStream.format("kafka").option("subscribe", "a")
         .option("minOffsetsPerTrigger", 10).option("maxOffsetsPerTrigger", 5)
         .load().writeStream.format("noop").start())

    with pytest.raises(UnsupportedAppCallError, match=r"minOffsetsPerTrigger=10 above"):
        TopologyTestDriver.from_app(job, spark=spark)


def assigned_job(assign: str, limit: int | None = None):
    def job(spark: SparkSession) -> None:
        reader = spark.readStream.format("kafka").option("assign", assign)
        if limit is not None:
            reader = reader.option("maxOffsetsPerTrigger", limit)
        reader.load().writeStream.format("memory").queryName("events").start()
    return job


def test_an_assigned_source_reads_its_partitions_and_shares_the_limit_over_their_backlog(spark):
    """``assign`` {"events": [0, 2]} on a topic of 3 partitions: what is piped to
    partition 1 takes its offsets but is never read, and the limit of 20 is shared over
    the backlog of 0 and 2 alone (30 and 10: 15 + 5, then the 15 + 5 left), not over
    all three (30, 20, 10 would take 10 + 6 + 3)."""
    job = assigned_job('{"events": [0, 2]}', limit=20)
    with TopologyTestDriver.from_app(job, spark=spark, start_time=T0,
                                     partitions={"events": 3}) as driver:
        events = driver.create_input_topic("events", value_serializer="string")
        pipe_per_partition(events, ((0, 30), (1, 20), (2, 10)))
        ran = driver.process_all_available()
        assert per_partition(ran) == [[15, 0, 5], [15, 0, 5]]
        assert [r.offset for b in ran for r in b.input_records if r.partition == 2] == list(
            range(10))
        events.pipe_input(None, "1-late", partition=1)
        assert driver.process_all_available() == []
        events.pipe_input(None, "2-next", partition=2)
        assert [values(b) for b in driver.process_all_available()] == [["2-next"]]


def test_an_assigned_topic_has_the_partitions_the_job_names_unless_told_otherwise(spark):
    job = assigned_job('{"events": [1]}')
    with TopologyTestDriver.from_app(job, spark=spark, start_time=T0) as driver:
        events = driver.create_input_topic("events", value_serializer="string")
        events.pipe_input(None, "zero", partition=0)
        events.pipe_input(None, "one", partition=1)
        ran = driver.process_all_available()
        assert [[(r.partition, r.value) for r in b.input_records] for b in ran] == [
            [(1, "one")]]


@pytest.mark.parametrize(("assign", "partitions", "message"), [
    ('{"events": [0, 3]}', {"events": 2},
     r"assigns partitions \[0, 3\] of 'events', which has 2 here.*at least 4"),
    ("events-0", {}, r"assign='events-0'.*JSON object"),
    ('{"events": [0, -1]}', {}, r"JSON object of topics and their partitions"),
    ('{"events": []}', {}, r"assigns no partition of 'events'"),
], ids=["missing-partition", "not-json", "negative", "empty"])
def test_assignments_spark_cannot_read_are_refused(spark, assign, partitions, message):
    with pytest.raises(UnsupportedAppCallError, match=message):
        TopologyTestDriver.from_app(assigned_job(assign), spark=spark, partitions=partitions)


def assigned_topology(t: Topology) -> None:
    events = t.kafka_input("events", partitions=3, assign=[2, 0])
    t.output("out", events.select(F.col("value").cast("string").alias("v"), "partition"))


def test_a_topology_s_kafka_input_reads_only_the_partitions_assigned(topology_driver):
    driver = topology_driver(assigned_topology)
    events = driver.create_input_topic("events", value_serializer="string")
    pipe_per_partition(events, ((0, 4), (1, 4), (2, 4)))
    driver.process_all_available()
    rows = driver.create_output_topic("out").read_values_to_list()
    assert sorted((row["partition"], row["v"]) for row in rows) == [
        (p, f"{p}-{i}") for p in (0, 2) for i in range(4)]


@pytest.mark.parametrize("assign", [[3], [], "0", [True]])
def test_a_topology_s_assignment_outside_the_topic_is_refused(spark, assign):
    def topology(t: Topology) -> None:
        t.output("out", t.kafka_input("events", partitions=3, assign=assign))

    with pytest.raises(TopologyError, match=r"assign must"):
        TopologyTestDriver(topology, spark=spark)


def fan_out(batch, batch_id) -> None:
    """The common fan-out: the batch written to two topics, then to a table."""
    out = batch.select(F.col("key"), F.col("value"))
    out.write.format("kafka").option("kafka.bootstrap.servers", "kafka:9092") \
        .option("topic", "audit").save()
    (out.withColumn("topic", F.lit("mirror")).write.format("kafka")
     .option("kafka.bootstrap.servers", "kafka:9092").mode("append").save())


def lag_monitor(spark: SparkSession) -> None:
    (spark.readStream.format("kafka").option("subscribe", "events").load()
     .writeStream.foreachBatch(fan_out).start())


def test_a_foreach_batch_that_writes_its_batch_to_kafka_fills_the_topics(spark):
    with TopologyTestDriver.from_app(lag_monitor, spark=spark, start_time=T0) as driver:
        events = driver.create_input_topic("events", key_serializer="string",
                                           value_serializer="string")
        audit = driver.create_output_topic("audit", key_deserializer="string",
                                           value_deserializer="string")
        mirror = driver.create_output_topic("mirror", value_deserializer="string")
        events.pipe_input("k1", "one")
        events.pipe_input("k2", "two")
        (batch,) = driver.advance_wall_clock(timedelta(seconds=1))
        assert audit.read_key_values_to_list() == [("k1", "one"), ("k2", "two")]
        assert [r.offset for r in batch.output_records if r.topic == "mirror"] == [0, 1]
        assert mirror.read_values_to_list() == ["one", "two"]
        # the 2 rows the function was given, and the 4 Kafka records it wrote
        assert batch.num_output_rows == len(batch.output_records) == 6


def test_a_crash_between_two_writes_leaves_the_first_written_and_spark_runs_the_batch_again(
        spark):
    with TopologyTestDriver.from_app(lag_monitor, spark=spark, start_time=T0) as driver:
        events = driver.create_input_topic("events", value_serializer="string")
        audit = driver.create_output_topic("audit", value_deserializer="string")
        mirror = driver.create_output_topic("mirror", value_deserializer="string")
        driver.crash_after_write("fan_out", 1)  # audit written, then the batch dies
        events.pipe_input(None, "one")
        ran = driver.advance_wall_clock(timedelta(seconds=1))
        assert [(b.batch_id, b.attempt, b.crashed) for b in ran] == [
            (0, 1, "after_write_1"), (0, 2, None)]
        assert sorted({r.topic for r in ran[0].output_records}) == ["audit"]
        # at-least-once: the retry wrote audit again, and mirror once
        assert audit.read_values_to_list() == ["one", "one"]
        assert mirror.read_values_to_list() == ["one"]


def test_a_crash_after_a_file_write_leaves_the_file_written_for_the_retry_to_repeat(
        topology_driver, spark, tmp_path):
    """A topology's ``foreach_batch`` that appends the batch to Parquet, then writes it
    to Kafka: a crash after the first write leaves the Parquet files of the crashed
    attempt (written for real) and no Kafka record, and Spark's run of the same batch
    appends them again: the duplicate a non-idempotent file write makes, there to be
    seen by the test. The second attempt's records are the batch's rows (the output
    ``archive``) and what it wrote to ``published``."""
    table = str(tmp_path / "archive")

    def archive_then_publish(batch, batch_id) -> None:
        batch.select("value").write.mode("append").parquet(table)
        batch.select("value").write.format("kafka").option("topic", "published").save()

    def topology(t: Topology) -> None:
        t.foreach_batch("archive", t.kafka_input("events"), archive_then_publish)

    driver = topology_driver(topology)
    published = driver.create_output_topic("published", value_deserializer="string")
    driver.crash_after_write("archive", 1)
    driver.create_input_topic("events", value_serializer="string").pipe_input(None, "one")
    ran = driver.process_all_available()
    assert [(b.batch_id, b.attempt, b.crashed, sorted(r.topic for r in b.output_records))
            for b in ran] == [(0, 1, "after_write_1", []), (0, 2, None, ["archive", "published"])]
    archived = spark.read.parquet(table).collect()
    assert [bytes(r.value).decode() for r in archived] == ["one", "one"]
    assert published.read_values_to_list() == ["one"]


def test_crash_after_write_is_refused_for_an_output_without_a_batch_function(spark):
    with TopologyTestDriver.from_app(two_topics, spark=spark) as driver:
        with pytest.raises(InvalidArgumentError, match=r"no foreachBatch function"):
            driver.crash_after_write("events")
        with pytest.raises(InvalidArgumentError, match=r"counted from 1"):
            driver.crash_after_write("events", 0)


def test_a_kafka_write_without_a_topic_fails_the_batch_as_spark_s_sink_does(spark):
    def no_topic(batch, batch_id) -> None:
        batch.select("value").write.format("kafka").save()

    def job(spark: SparkSession) -> None:
        (spark.readStream.format("kafka").option("subscribe", "events").load()
         .writeStream.foreachBatch(no_topic).start())

    with TopologyTestDriver.from_app(job, spark=spark, start_time=T0) as driver:
        driver.create_input_topic("events", value_serializer="string").pipe_input(None, "x")
        with pytest.raises(StreamingQueryFailedError, match=r"needs the 'topic' option"):
            driver.advance_wall_clock(timedelta(seconds=1))


@pytest.mark.parametrize("how", ["mode", "save"])
@pytest.mark.parametrize("mode", ["overwrite", "Ignore"])
def test_a_kafka_write_in_a_save_mode_spark_s_sink_refuses_fails_the_batch(spark, mode, how):
    def overwrite(batch, batch_id) -> None:
        writer = batch.select("value").write.format("kafka").option("topic", "audit")
        writer.mode(mode).save() if how == "mode" else writer.save(mode=mode)

    def job(spark: SparkSession) -> None:
        (spark.readStream.format("kafka").option("subscribe", "events").load()
         .writeStream.foreachBatch(overwrite).start())

    with TopologyTestDriver.from_app(job, spark=spark, start_time=T0) as driver:
        driver.create_input_topic("events", value_serializer="string").pipe_input(None, "x")
        with pytest.raises(StreamingQueryFailedError,
                           match=rf"save mode '{mode}'.*not allowed for Kafka"):
            driver.advance_wall_clock(timedelta(seconds=1))


def windowed(df):
    return (df.withWatermark("ts", "10 seconds").groupBy(F.window("ts", "10 seconds")).count()
            .select(F.col("window.start").alias("start"), "count"))


@pytest.mark.parametrize("trigger", ["availableNow", "once"])
def test_a_backfill_runs_the_batches_spark_s_own_trigger_runs(spark, tmp_path, trigger):
    """Checked against Spark alone: the same query with Spark's own
    ``Trigger.AvailableNow`` (or ``Once``) over a memory stream holding the backlog,
    its own clock and memory sink: the same batches (the data batch, then for
    ``availableNow`` the no-data batches that close the windows), watermarks, rows out,
    and the query ends by itself."""
    from pyspark_streamtest._spark.jvm import Jvm
    from pyspark_streamtest._spark.query.memory_stream import JsonMemoryStream

    if spark.__class__.__module__.startswith("pyspark.sql.connect"):
        pytest.skip("Spark alone runs here on the classic session")
    seconds = [0, 5, 12, 31, 2]
    stream = JsonMemoryStream(Jvm(spark), StructType([StructField("ts", TimestampType())]))
    stream.add_json_lines([f'{{"ts":"{at(s).isoformat()}"}}' for s in seconds])
    alone = (windowed(stream.dataframe).writeStream.format("memory").queryName(
        f"alone_{trigger}").option("checkpointLocation", str(tmp_path / "alone"))
        .trigger(**{trigger: True}).start())
    try:
        assert alone.awaitTermination(120)
        spark_batches = [(p["batchId"], p["numInputRows"], p["eventTime"].get("watermark"))
                         for p in alone.recentProgress if p["batchId"] is not None]
        spark_rows = sorted((r.start, r["count"]) for r in spark.table(f"alone_{trigger}")
                            .select(F.col("start").cast("long").alias("start"), "count")
                            .collect())
    finally:
        alone.stop()
        spark.catalog.dropTempView(f"alone_{trigger}")

    def job(spark: SparkSession) -> None:
        events = spark.readStream.schema("ts TIMESTAMP").json("/in/events")
        (windowed(events).writeStream.format("memory").queryName("counts")
         .trigger(**{trigger: True}).start())

    with TopologyTestDriver.from_app(job, spark=spark, start_time=T0) as driver:
        events = driver.create_input_topic("events")
        events.pipe_value_list([{"ts": at(s)} for s in seconds])
        ran = driver.restart()
        ours = [(b.batch_id, b.num_input_rows, b.watermark) for b in ran]
        rows = sorted((int(r.value["start"].timestamp()), r.value["count"])
                      for b in ran for r in b.output_records)
        assert driver.ended_outputs == ("counts",)
    assert [(i, n) for i, n, _ in ours] == [(i, n) for i, n, _ in spark_batches]
    assert [w.strftime("%Y-%m-%dT%H:%M:%S.000Z") for _, _, w in ours] == [
        w for _, _, w in spark_batches]
    assert rows == spark_rows
    assert len(ours) == (2 if trigger == "availableNow" else 1)


def test_an_available_now_query_over_a_source_without_it_runs_as_once_from_spark_4(spark):
    def job(spark: SparkSession) -> None:
        (windowed(spark.readStream.format("rate").load().withColumnRenamed("timestamp", "ts"))
         .writeStream.format("memory").queryName("counts").trigger(availableNow=True).start())

    with TopologyTestDriver.from_app(job, spark=spark, start_time=T0) as driver:
        driver.create_input_topic("rate").pipe_value_list(
            [{"timestamp": at(s), "value": s} for s in (0, 31)])
        ran = driver.restart()
        expected = 2 if pyspark_version_tuple() < (4, 0) else 1  # SPARK-45178, 4.0+
        assert len(ran) == expected


def _remember_with_a_timeout(key, frames, state):
    import pandas as pd

    for _ in frames:
        pass
    state.update((1,))
    state.setTimeoutDuration(60_000)
    yield pd.DataFrame({"k": [key[0]]})


def test_an_available_now_query_spark_would_never_end_is_said_so(spark):
    """Spark asks for a no-data batch at every trigger of a query with a processing-time
    timeout, so its Trigger.AvailableNow never ends (no version handles it): the driver
    stops after three such batches in a row and says why, instead of looping."""
    from pyspark.sql.streaming.state import GroupStateTimeout

    def job(spark: SparkSession) -> None:
        (spark.readStream.schema("k STRING").json("/in/keys").groupBy("k")
         .applyInPandasWithState(_remember_with_a_timeout, "k STRING", "seen INT", "update",
                                 GroupStateTimeout.ProcessingTimeTimeout)
         .writeStream.format("memory").queryName("keys").outputMode("update")
         .trigger(availableNow=True).start())

    with TopologyTestDriver.from_app(job, spark=spark, start_time=T0) as driver:
        driver.create_input_topic("keys").pipe_input({"k": "a"})
        with pytest.raises(BackfillNeverEndsError, match=r"would never end.*timeout"):
            driver.restart()
        assert not driver.is_running and not driver.closed
        assert [b.is_data_batch for b in driver.batches] == [True, False, False, False]


def lag_of(batch, batch_id) -> None:
    """A lag monitor: what the topic holds (a bounded batch read), against what this
    query has read; written to Kafka."""
    spark = batch.sparkSession
    held = (spark.read.format("kafka").option("subscribe", "events")
            .option("startingOffsets", "earliest").option("endingOffsets", "latest").load())
    first_two = (spark.read.format("kafka").option("subscribe", "events")
                 .option("endingOffsets", '{"events":{"0":2}}').load())
    lag = held.count() - batch.count()
    (spark.createDataFrame([(f"{lag}/{first_two.count()}",)], "value STRING")
     .write.format("kafka").option("topic", "lag").save())


HELD_AT_START: list[int] = []
"""What each start of ``lag_job`` found in its topic (a test empties it first; under
``--streamtest-oracle`` Spark alone builds the job again, so a start may add two)."""


def lag_job(spark: SparkSession) -> None:
    at_start = spark.read.format("kafka").option("subscribe", "events").load()
    assert at_start.columns == ["key", "value", "topic", "partition", "offset", "timestamp",
                                "timestampType"]  # the Kafka source's columns
    HELD_AT_START.append(at_start.count())
    (spark.readStream.format("kafka").option("subscribe", "events")
     .option("maxOffsetsPerTrigger", 2).load()
     .writeStream.foreachBatch(lag_of).start())


def test_a_bounded_kafka_read_in_the_job_reads_what_the_topic_holds(spark):
    HELD_AT_START.clear()
    with TopologyTestDriver.from_app(lag_job, spark=spark, start_time=T0) as driver:
        assert set(HELD_AT_START) == {0}  # at start-up the topic is empty
        events = driver.create_input_topic("events", value_serializer="string")
        lag = driver.create_output_topic("lag", value_deserializer="string")
        events.pipe_value_list(["a", "b", "c", "d", "e"])
        driver.process_all_available()
        # 5 held; each batch reads 2, 2, 1: the topic's records less the batch's
        assert lag.read_values_to_list() == ["3/2", "3/2", "4/2"]


@pytest.mark.parametrize(("options", "message"), [
    ({"subscribe": "events", "startingOffsets": "latest"}, r"startingOffsets='latest'"),
    ({"subscribe": "events", "endingOffsets": '{"events":{"0":-2}}'}, r"refuses earliest"),
    ({"subscribe": "events", "startingTimestamp": "1"}, r"by offsets .* only"),
    ({}, r"exactly one of the options subscribe"),
], ids=["latest-start", "earliest-end", "timestamp", "no-topic"])
def test_bounded_kafka_reads_spark_refuses_are_refused(spark, options, message):
    def job(spark: SparkSession) -> None:
        spark.read.format("kafka").options(**options).load()

    with pytest.raises(UnsupportedAppCallError, match=message):
        TopologyTestDriver.from_app(job, spark=spark)


def announcing_job(spark: SparkSession) -> None:
    """A job that tells a topic it started (a batch write in main(), before its query)."""
    (spark.createDataFrame([("orders-job", "started", "v2")], "key STRING, value STRING, v STRING")
     .selectExpr("key", "value", "array(named_struct('key', 'version', 'value', "
                 "CAST(v AS BINARY))) AS headers")
     .write.format("kafka").option("kafka.bootstrap.servers", "k:9092")
     .option("topic", "job-events").save())
    (spark.readStream.format("kafka").option("subscribe", "events").load()
     .selectExpr("key", "value").writeStream.format("kafka").option("topic", "job-events")
     .start())


def test_a_kafka_write_in_main_is_a_record_of_its_topic_before_any_batch(spark):
    with TopologyTestDriver.from_app(announcing_job, spark=spark, start_time=T0) as driver:
        job_events = driver.create_output_topic("job-events", key_deserializer="string",
                                                value_deserializer="string")
        (started,) = job_events.read_records_to_list()  # written when the job started
        assert (started.key, started.value, started.headers) == (
            "orders-job", "started", (("version", b"v2"),))
        assert (started.batch_id, started.timestamp, started.offset) == (None, T0, 0)
        events = driver.create_input_topic("events", key_serializer="string",
                                           value_serializer="string")
        events.pipe_input("k", "one")
        driver.process_all_available()
        (record,) = job_events.read_records_to_list()
        assert (record.value, record.offset, record.batch_id) == ("one", 1, 0)
        driver.restart()  # the queries again, not main(): nothing more written
        assert job_events.read_records_to_list() == []
        driver.restart(app=announcing_job)  # a new version: its main() runs and writes
        upgraded = driver.create_output_topic("job-events", value_deserializer="string")
        assert [(r.value, r.offset) for r in upgraded.read_records_to_list()] == [
            ("started", 2)]
        driver.reset()  # as a new driver: the job's record again, at offset 0
        again = driver.create_output_topic("job-events", value_deserializer="string")
        assert [(r.value, r.offset) for r in again.read_records_to_list()] == [("started", 0)]


def test_a_kafka_write_in_main_without_a_topic_is_refused_as_spark_s_sink_refuses_it(spark):
    def job(spark: SparkSession) -> None:
        spark.createDataFrame([("x",)], "value STRING").write.format("kafka").save()

    with pytest.raises(TopologyError, match=r"in the job's main\(\) names no topic"):
        TopologyTestDriver.from_app(job, spark=spark)


def test_a_saved_checkpoint_keeps_what_the_topics_held_for_a_batch_read(spark, tmp_path):
    HELD_AT_START.clear()
    with TopologyTestDriver.from_app(lag_job, spark=spark, start_time=T0) as first:
        events = first.create_input_topic("events", value_serializer="string")
        events.pipe_value_list(["a", "b"])
        first.process_all_available()
        first.save_checkpoint(tmp_path / "saved")
    first_start = len(HELD_AT_START)
    with TopologyTestDriver.from_app(lag_job, spark=spark,
                                     checkpoint=tmp_path / "saved") as second:
        # main()'s read at the second start finds a and b
        assert (set(HELD_AT_START[:first_start]), set(HELD_AT_START[first_start:])) == (
            {0}, {2})
        events = second.create_input_topic("events", value_serializer="string")
        lag = second.create_output_topic("lag", value_deserializer="string")
        events.pipe_value_list(["c", "d", "e"])
        second.process_all_available()
        # a and b (offsets 0 and 1) were held before the save: 5 held, the batches
        # read 2 then 1, and the read up to offset 2 finds a and b
        assert lag.read_values_to_list() == ["3/2", "4/2"]
