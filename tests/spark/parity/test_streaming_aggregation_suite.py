"""Cases ported from Spark's StreamingAggregationSuite (sql/core, org.apache.spark.sql.streaming).

Spark runs most of these once per state format version; the driver runs the session's
default. Expected rows, state counts and clock values are Spark's.
"""

from __future__ import annotations

from datetime import timedelta

import pytest
from pyspark.errors import AnalysisException
from pyspark.sql import functions as F

from pyspark_streamtest import Topology, TopologyError
from tests.spark.parity._common import (
    EPOCH,
    add_ints,
    check_last_batch,
    check_new_answer,
)


def value_counts(mode: str):
    def topology(t: Topology) -> None:
        values = t.input("values", schema="value INT")
        t.output("counts", values.groupBy("value").agg(F.count("*").alias("count")),
                 output_mode=mode)  # type: ignore[arg-type]
    return topology


# StreamingAggregationSuite: "simple count, update mode"
def test_simple_count_update_mode(topology_driver):
    driver = topology_driver(value_counts("update"))
    values = driver.create_input_topic("values")
    counts = driver.create_output_topic("counts")

    add_ints(values, 3)
    driver.process_all_available()
    check_last_batch(counts, "value count", (3, 1))
    add_ints(values, 3, 2)
    driver.process_all_available()
    check_last_batch(counts, "value count", (3, 2), (2, 1))
    driver.stop()                                                   # StopStream
    driver.start()                                                  # StartStream()
    add_ints(values, 3, 2, 1)
    driver.process_all_available()
    check_last_batch(counts, "value count", (3, 3), (2, 2), (1, 1))
    add_ints(values, 4, 4, 4, 4)
    driver.process_all_available()
    check_last_batch(counts, "value count", (4, 4))


# StreamingAggregationSuite: "count distinct"
def test_count_distinct(topology_driver):
    def topology(t: Topology) -> None:
        pairs = t.input("pairs", schema="_1 INT, _2 ARRAY<INT>")
        t.output("distinct", pairs.select("*", F.explode("_2").alias("value"))
                 .groupBy("_1").agg(F.size(F.collect_set("value")).alias("n")),
                 output_mode="update")

    driver = topology_driver(topology)
    driver.create_input_topic("pairs").pipe_input((1, [1, 2]))
    driver.process_all_available()
    check_last_batch(driver.create_output_topic("distinct"), "_1 n", (1, 2))


# StreamingAggregationSuite: "simple count, complete mode"
def test_simple_count_complete_mode(topology_driver):
    driver = topology_driver(value_counts("complete"))
    values = driver.create_input_topic("values")
    counts = driver.create_output_topic("counts")

    add_ints(values, 3)
    driver.process_all_available()
    check_last_batch(counts, "value count", (3, 1))
    add_ints(values, 2)
    driver.process_all_available()
    check_last_batch(counts, "value count", (3, 1), (2, 1))
    driver.stop()
    driver.start()
    add_ints(values, 3, 2, 1)
    driver.process_all_available()
    check_last_batch(counts, "value count", (3, 2), (2, 2), (1, 1))
    add_ints(values, 4, 4, 4, 4)
    driver.process_all_available()
    check_last_batch(counts, "value count", (4, 4), (3, 2), (2, 2), (1, 1))


# StreamingAggregationSuite: "simple count, append mode"
def test_simple_count_append_mode_is_rejected(topology_driver):
    with pytest.raises(TopologyError) as caught:     # Spark's AnalysisException, as cause
        topology_driver(value_counts("append"))
    assert isinstance(caught.value.__cause__, AnalysisException)
    message = str(caught.value.__cause__).lower()
    assert "append" in message and "not supported" in message


# StreamingAggregationSuite: "sort after aggregate in complete mode"
def test_sort_after_aggregate_in_complete_mode(topology_driver):
    def topology(t: Topology) -> None:
        values = t.input("values", schema="value INT")
        t.output("sorted", values.groupBy("value").agg(F.count("*").alias("count"))
                 .orderBy(F.col("count").desc()), output_mode="complete")

    driver = topology_driver(topology)
    values = driver.create_input_topic("values")
    out = driver.create_output_topic("sorted")
    add_ints(values, 3)
    driver.process_all_available()
    check_last_batch(out, "value count", (3, 1), is_sorted=True)
    add_ints(values, 2, 3)
    driver.process_all_available()
    check_last_batch(out, "value count", (3, 2), (2, 1), is_sorted=True)
    driver.stop()
    driver.start()
    add_ints(values, 3, 2, 1)
    driver.process_all_available()
    check_last_batch(out, "value count", (3, 3), (2, 2), (1, 1), is_sorted=True)
    add_ints(values, 4, 4, 4, 4)
    driver.process_all_available()
    check_last_batch(out, "value count", (4, 4), (3, 3), (2, 2), (1, 1), is_sorted=True)


def five_second_windows(t: Topology) -> None:
    values = t.input("values", schema="value INT")
    t.output("counts", values.withColumn("eventTime", F.timestamp_seconds("value"))
             .withWatermark("eventTime", "10 seconds")
             .groupBy(F.window("eventTime", "5 seconds").alias("window"))
             .agg(F.count("*").alias("count"))
             .select(F.col("window.start").cast("long").alias("start"), "count"))


# StreamingAggregationSuite: "state metrics - append mode"
def test_state_metrics_append_mode(topology_driver):
    # AddData before StartStream(ProcessingTime("1 second"), manualClock): the first
    # trigger, at clock 0, is batch 0 with the data.
    driver = topology_driver(five_second_windows, start_time=EPOCH)
    values = driver.create_input_topic("values")
    counts = driver.create_output_topic("counts")
    driver.stop()
    add_ints(values, 15)
    (batch0,) = driver.start()
    assert batch0.batch_id == 0
    assert counts.all_rows() == []                               # CheckAnswer(), watermark 0
    assert batch0.output_values == []                            # numOutputRows == 0
    driver.assert_num_state_rows("counts", total=1, updated=1, batch_id=0)

    (batch1,) = driver.advance_wall_clock(timedelta(seconds=1))  # watermark = 5
    assert (batch1.batch_id, batch1.is_data_batch, batch1.watermark) == (
        1, False, EPOCH + timedelta(seconds=5))
    assert counts.all_rows() == [] and batch1.output_values == []
    driver.assert_num_state_rows("counts", total=1, updated=0, batch_id=1)

    add_ints(values, 10, 12, 14)
    (batch2,) = driver.advance_wall_clock(timedelta(seconds=1))  # watermark = 5
    assert batch2.batch_id == 2 and batch2.output_values == []
    driver.assert_num_state_rows("counts", total=2, updated=1, batch_id=2)

    add_ints(values, 25)
    (batch3,) = driver.advance_wall_clock(timedelta(seconds=1))  # watermark = 5
    assert batch3.batch_id == 3 and batch3.output_values == []
    driver.assert_num_state_rows("counts", total=3, updated=1, batch_id=3)

    (batch4,) = driver.advance_wall_clock(timedelta(seconds=1))  # watermark = 15
    assert (batch4.batch_id, batch4.is_data_batch) == (4, False)
    check_new_answer(counts, "start count", (10, 3))
    assert batch4.output_values == [{"start": 10, "count": 3}]  # numOutputRows == 1
    driver.assert_num_state_rows("counts", total=2, updated=0, batch_id=4)


# StreamingAggregationSuite: "state metrics - update/complete mode"
@pytest.mark.parametrize("mode", ["update", "complete"])
def test_state_metrics_update_complete_mode(topology_driver, mode):
    def topology(t: Topology) -> None:
        values = t.input("values", schema="value INT")
        pairs = values.select(F.explode(F.array("value", F.col("value") + 1)).alias("value"))
        t.output("counts", pairs.groupBy("value").agg(F.count("*").alias("count")),
                 output_mode=mode)

    driver = topology_driver(topology)
    values = driver.create_input_topic("values")
    counts = driver.create_output_topic("counts")
    add_ints(values, 1)
    (first,) = driver.process_all_available()
    check_last_batch(counts, "value count", (1, 1), (2, 1))
    assert len(first.state_metrics) == 1                            # stateNodes.size == 1
    assert len(first.output_values) == 2                            # numOutputRows
    driver.assert_num_state_rows("counts", total=2, updated=2, batch_id=first.batch_id)

    add_ints(values, 2, 3)
    (second,) = driver.process_all_available()
    if mode == "update":
        check_last_batch(counts, "value count", (2, 2), (3, 2), (4, 1))
    else:
        check_last_batch(counts, "value count", (1, 1), (2, 2), (3, 2), (4, 1))
    assert len(second.state_metrics) == 1
    assert len(second.output_values) == (3 if mode == "update" else 4)
    driver.assert_num_state_rows("counts", total=4, updated=3, batch_id=second.batch_id)


# StreamingAggregationSuite: "multiple keys"
def test_multiple_keys(topology_driver):
    def topology(t: Topology) -> None:
        values = t.input("values", schema="value INT")
        t.output("counts", values.groupBy("value", (F.col("value") + 1).alias("next"))
                 .agg(F.count("*").alias("count")), output_mode="update")

    driver = topology_driver(topology)
    values = driver.create_input_topic("values")
    counts = driver.create_output_topic("counts")
    add_ints(values, 1, 2)
    driver.process_all_available()
    check_last_batch(counts, "value next count", (1, 2, 1), (2, 3, 1))
    add_ints(values, 1, 2)
    driver.process_all_available()
    check_last_batch(counts, "value next count", (1, 2, 2), (2, 3, 2))


# StreamingAggregationSuite: "typed aggregators"
# groupByKey(_._1).agg(typed.sumLong(_._2)) is Scala's typed API; the same aggregation in
# the DataFrame API is groupBy("_1").agg(sum("_2")).
def test_typed_aggregators(topology_driver):
    def topology(t: Topology) -> None:
        pairs = t.input("pairs", schema="_1 STRING, _2 INT")
        t.output("sums", pairs.groupBy("_1").agg(F.sum("_2").alias("sum")),
                 output_mode="update")

    driver = topology_driver(topology)
    driver.create_input_topic("pairs").pipe_value_list(
        [("a", 10), ("a", 20), ("b", 1), ("b", 2), ("c", 1)])
    driver.process_all_available()
    check_last_batch(driver.create_output_topic("sums"), "_1 sum",
                     ("a", 30), ("b", 3), ("c", 1))


# StreamingAggregationSuite: "prune results by current_time, complete mode"
# Spark then purges the commit log while stopped so that the restart re-runs the last
# batch; the driver owns the checkpoint, so that re-run (CheckLastBatch((20, 1), (85, 1))
# after StartStream) is not ported. The restart at 90 s and the batch at 100 s are.
def test_prune_results_by_current_time_complete_mode(topology_driver):
    def topology(t: Topology) -> None:
        values = t.input("values", schema="value BIGINT")
        t.output("counts", values.groupBy("value").agg(F.count("*").alias("count"))
                 .where(F.col("value") >= F.current_timestamp().cast("long") - 10),
                 output_mode="complete")

    ten_seconds = timedelta(seconds=10)
    driver = topology_driver(topology, start_time=EPOCH, trigger_interval=ten_seconds)
    values = driver.create_input_topic("values")
    counts = driver.create_output_topic("counts")

    add_ints(values, 0, 5, 5, 10)
    driver.advance_wall_clock(ten_seconds)           # clock 10 s: all keys retained
    check_last_batch(counts, "value count", (0, 1), (5, 2), (10, 1))
    add_ints(values, 15, 15, 20)
    driver.advance_wall_clock(ten_seconds)           # clock 20 s: keys >= 10
    check_last_batch(counts, "value count", (10, 1), (15, 2), (20, 1))
    add_ints(values, 0, 85)
    driver.advance_wall_clock(ten_seconds)           # clock 30 s: keys >= 20
    check_last_batch(counts, "value count", (20, 1), (85, 1))

    driver.stop()                                    # StopStream
    driver.jump_wall_clock(timedelta(seconds=60))    # clock.advance(60 * 1000L)
    driver.start()                                   # StartStream(...)
    assert driver.current_time == EPOCH + timedelta(seconds=90)
    add_ints(values, 85, 90, 100, 105)
    driver.advance_wall_clock(ten_seconds)           # clock 100 s: keys >= 90
    check_last_batch(counts, "value count", (90, 1), (100, 1), (105, 1))


# StreamingAggregationSuite: "SPARK-19690: do not convert batch aggregation in streaming
# query to streaming"
def test_spark_19690_batch_aggregation_in_a_streaming_query_stays_batch(topology_driver):
    def topology(t: Topology) -> None:
        stream = t.input("values", schema="value INT")
        batch = (t.spark.createDataFrame([(v,) for v in (1, 2, 3, 4, 5)], "value INT")
                 .withColumn("parity", F.col("value") % 2)
                 .groupBy("parity").agg(F.count("*").alias("joinValue")))
        t.output("joined", stream.join(batch, stream["value"] == batch["parity"]))

    driver = topology_driver(topology)
    values = driver.create_input_topic("values")
    out = driver.create_output_topic("joined")
    add_ints(values, 0, 1, 2, 3)
    driver.process_all_available()
    check_last_batch(out, "value parity joinValue", (0, 0, 2), (1, 1, 3))
    add_ints(values, 0, 1, 2, 3)
    driver.process_all_available()
    check_last_batch(out, "value parity joinValue", (0, 0, 2), (1, 1, 3))


# StreamingAggregationSuite: "SPARK-22230: last should change with new batches"
def test_spark_22230_last_changes_with_new_batches(topology_driver):
    def topology(t: Topology) -> None:
        values = t.input("values", schema="value INT")
        t.output("last", values.agg(F.last("value").alias("last")), output_mode="complete")

    driver = topology_driver(topology)
    values = driver.create_input_topic("values")
    out = driver.create_output_topic("last")
    add_ints(values, 1, 2, 3)
    driver.process_all_available()
    check_last_batch(out, "last", (3,))
    add_ints(values, 4, 5, 6)
    driver.process_all_available()
    check_last_batch(out, "last", (6,))
    values.pipe_empty_batch()                        # AddData(input): no rows
    (empty,) = driver.process_all_available()
    assert (empty.is_data_batch, empty.num_input_rows) == (True, 0)
    check_last_batch(out, "last", (6,))
    add_ints(values, 0)
    driver.process_all_available()
    check_last_batch(out, "last", (0,))


# StreamingAggregationSuite: "SPARK-23004: Ensure that TypedImperativeAggregate functions
# do not throw errors"
def test_spark_23004_typed_imperative_aggregate_does_not_throw(topology_driver, spark):
    def topology(t: Topology) -> None:
        values = t.input("values", schema="value INT")
        t.output("lists", values.selectExpr("value as group", "value").groupBy("group")
                 .agg(F.collect_list("value")), output_mode="update")

    # 128 rows in one post-shuffle partition: the threshold at which ObjectHashAggregateExec
    # falls back to sort-based aggregation.
    threshold = int(spark.conf.get("spark.sql.objectHashAggregate.sortBased.fallbackThreshold"))
    assert threshold == 128
    driver = topology_driver(topology, sql_conf={"spark.sql.shuffle.partitions": "1"})
    add_ints(driver.create_input_topic("values"), *range(1, threshold + 1))
    (batch,) = driver.process_all_available()        # AssertOnQuery(processAllAvailable)
    assert batch.num_input_rows == threshold
