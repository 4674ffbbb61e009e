"""Cases ported from Spark's EventTimeWatermarkSuite (sql/core, org.apache.spark.sql.streaming).

Spark's ``MemoryStream[Int]`` is an input with one ``value INT`` column; event time is
``timestamp_seconds(value)``, so watermarks are seconds after the epoch. Spark's private
helpers of this suite are mapped as follows: ``assertNumStateRows(n)`` is numRowsTotal
of the last batch (``assert_num_state_rows(total=n)``); ``assertNumRowsDroppedByWatermark(n)``
reads the last batch that had input rows; ``assertEventStats(..., wtrmark = w)`` reads the
last batch with input rows, of which the driver exposes the watermark (not the min, max
and avg event time, which are left out).
"""

from __future__ import annotations

from datetime import datetime, timezone

import pytest
from pyspark.errors import AnalysisException
from pyspark.sql import functions as F

from pyspark_streamtest import BatchRecord, StreamingQueryFailedError, Topology
from tests.spark.parity._common import (
    add_ints,
    check_answer,
    check_last_batch,
    check_new_answer,
    secs,
)

ALLOW_MULTIPLE = "spark.sql.streaming.statefulOperator.allowMultiple"
NO_DATA_BATCHES = "spark.sql.streaming.noDataMicroBatches.enabled"
POLICY = "spark.sql.streaming.multipleWatermarkPolicy"


def windowed_counts(mode: str = "append", watermark: bool = True):
    """The suite's windowed aggregation: 5 s windows of timestamp_seconds(value), with a
    10 s watermark, as (window start in seconds, count)."""
    def topology(t: Topology) -> None:
        values = t.input("values", schema="value INT")
        timed = values.withColumn("eventTime", F.timestamp_seconds("value"))
        if watermark:
            timed = timed.withWatermark("eventTime", "10 seconds")
        t.output("counts", timed.groupBy(F.window("eventTime", "5 seconds").alias("window"))
                 .agg(F.count("*").alias("count"))
                 .select(F.col("window.start").cast("long").alias("start"), "count"),
                 output_mode=mode)  # type: ignore[arg-type]
    return topology


def last_batch_with_data(driver, output: str) -> BatchRecord:
    return [b for b in driver.batches if b.output == output and b.num_input_rows > 0][-1]


def dropped_by_watermark(driver, output: str) -> int:
    """The suite's assertNumRowsDroppedByWatermark: the last batch that read rows."""
    return last_batch_with_data(driver, output).state_metrics[0].rows_dropped_by_watermark


# EventTimeWatermarkSuite: "error on bad column"
def test_error_on_bad_column(topology_driver):
    def topology(t: Topology) -> None:
        t.output("out", t.input("values", schema="value INT")
                 .withWatermark("badColumn", "1 minute"))

    with pytest.raises(AnalysisException) as caught:
        topology_driver(topology)
    assert "badColumn" in str(caught.value)


# EventTimeWatermarkSuite: "error on wrong type"
def test_error_on_wrong_type(topology_driver):
    def topology(t: Topology) -> None:
        t.output("out", t.input("values", schema="value INT").withWatermark("value", "1 minute"))

    with pytest.raises(AnalysisException) as caught:
        topology_driver(topology)
    assert "value" in str(caught.value) and "int" in str(caught.value).lower()


# EventTimeWatermarkSuite: "event time and watermark metrics"
def test_event_time_and_watermark_metrics(topology_driver):
    # No event time metrics when there is no watermarking
    driver = topology_driver(windowed_counts("complete", watermark=False))
    values = driver.create_input_topic("values")
    counts = driver.create_output_topic("counts")
    add_ints(values, 15)
    driver.process_all_available()
    check_answer(counts, "start count", (15, 1))
    assert last_batch_with_data(driver, "counts").watermark is None
    add_ints(values, 10, 12, 14)
    driver.process_all_available()
    check_answer(counts, "start count", (10, 3), (15, 1))
    assert last_batch_with_data(driver, "counts").watermark is None

    # The watermark where watermarking is set
    driver = topology_driver(windowed_counts())
    values = driver.create_input_topic("values")
    counts = driver.create_output_topic("counts")
    add_ints(values, 15)
    driver.process_all_available()
    check_answer(counts, "start count")
    assert last_batch_with_data(driver, "counts").watermark == secs(0)
    add_ints(values, 10, 12, 14)
    driver.process_all_available()
    check_answer(counts, "start count")
    assert last_batch_with_data(driver, "counts").watermark == secs(5)
    add_ints(values, 25)
    driver.process_all_available()
    check_answer(counts, "start count", (10, 3))
    assert last_batch_with_data(driver, "counts").watermark == secs(5)


# EventTimeWatermarkSuite: "append mode"
def test_append_mode(topology_driver):
    driver = topology_driver(windowed_counts())
    values = driver.create_input_topic("values")
    counts = driver.create_output_topic("counts")
    add_ints(values, 10, 11, 12, 13, 14, 15)
    driver.process_all_available()
    check_new_answer(counts, "start count")
    add_ints(values, 25)                             # Advance watermark to 15 seconds
    driver.process_all_available()
    check_new_answer(counts, "start count", (10, 5))
    driver.assert_num_state_rows("counts", total=2)
    assert dropped_by_watermark(driver, "counts") == 0
    add_ints(values, 10)                             # less than the watermark
    driver.process_all_available()
    check_new_answer(counts, "start count")
    driver.assert_num_state_rows("counts", total=2)
    assert dropped_by_watermark(driver, "counts") == 1


# EventTimeWatermarkSuite: "update mode"
def test_update_mode(topology_driver):
    driver = topology_driver(windowed_counts("update"),
                             sql_conf={"spark.sql.shuffle.partitions": "10"})
    values = driver.create_input_topic("values")
    counts = driver.create_output_topic("counts")
    add_ints(values, 10, 11, 12, 13, 14, 15)
    driver.process_all_available()
    check_new_answer(counts, "start count", (10, 5), (15, 1))
    add_ints(values, 25)                             # Advance watermark to 15 seconds
    driver.process_all_available()
    check_new_answer(counts, "start count", (25, 1))
    driver.assert_num_state_rows("counts", total=2)
    assert dropped_by_watermark(driver, "counts") == 0
    add_ints(values, 10, 25)                         # Ignore 10 as it's less than watermark
    driver.process_all_available()
    check_new_answer(counts, "start count", (25, 2))
    driver.assert_num_state_rows("counts", total=2)
    assert dropped_by_watermark(driver, "counts") == 1
    add_ints(values, 10)                             # less than the watermark
    driver.process_all_available()
    check_new_answer(counts, "start count")
    driver.assert_num_state_rows("counts", total=2)
    assert dropped_by_watermark(driver, "counts") == 1


# EventTimeWatermarkSuite: "delay in months and years handled correctly"
def test_delay_in_months_and_years_handled_correctly(topology_driver):
    def topology(t: Topology) -> None:
        values = t.input("values", schema="value BIGINT")
        t.output("counts", values.withColumn("eventTime", F.timestamp_seconds("value"))
                 .withWatermark("eventTime", "2 years 5 months")
                 .groupBy(F.window("eventTime", "5 seconds").alias("window"))
                 .agg(F.count("*").alias("count"))
                 .select(F.col("window.start").cast("long").alias("start"), "count"))

    def months_since_epoch(moment: datetime) -> int:
        return moment.year * 12 + moment.month - 1

    now = datetime.now(timezone.utc)
    now_s = int(now.timestamp())
    driver = topology_driver(topology)
    values = driver.create_input_topic("values")
    counts = driver.create_output_topic("counts")
    add_ints(values, now_s)
    driver.process_all_available()
    check_answer(counts, "start count")
    add_ints(values, now_s)
    driver.process_all_available()
    check_answer(counts, "start count")
    watermark = last_batch_with_data(driver, "counts").watermark
    assert watermark is not None
    month_diff = months_since_epoch(now) - months_since_epoch(watermark)
    assert month_diff in (29, 30), (now, watermark)


# EventTimeWatermarkSuite: "recovery"
# Spark's AssertOnQuery while stopped purges the commit log before the latest commit
# (keeping it: nothing re-runs) and clears the memory sink; here reading every row so
# far stands for the clear, so CheckAnswer after it is "the rows written since".
def test_recovery(topology_driver):
    driver = topology_driver(windowed_counts())
    values = driver.create_input_topic("values")
    counts = driver.create_output_topic("counts")
    add_ints(values, 10, 11, 12, 13, 14, 15)
    driver.process_all_available()
    check_answer(counts, "start count")
    add_ints(values, 25)                             # Advance watermark to 15 seconds
    driver.process_all_available()
    check_answer(counts, "start count", (10, 5))
    driver.stop()                                    # StopStream
    counts.read_values_to_list()                     # q.sink.clear()
    driver.start()                                   # StartStream()
    add_ints(values, 10, 27, 30)                     # watermark -> 20 s, 10 is ignored
    driver.process_all_available()
    check_new_answer(counts, "start count", (15, 1))  # CheckAnswer((15, 1)) since the clear
    driver.restart()                                 # StopStream, StartStream()
    add_ints(values, 17)                             # watermark still 20 s: 17 is ignored
    driver.process_all_available()
    check_new_answer(counts, "start count")          # CheckAnswer((15, 1)): nothing new
    add_ints(values, 40)                             # watermark -> 30 s, emits 25
    driver.process_all_available()
    check_new_answer(counts, "start count", (25, 2))


# EventTimeWatermarkSuite: "watermark with 2 streams"
def test_watermark_with_2_streams(topology_driver):
    def topology(t: Topology) -> None:
        first = (t.input("first", schema="value INT")
                 .withColumn("eventTime", F.timestamp_seconds("value"))
                 .withWatermark("eventTime", "10 seconds").select("value"))
        second = (t.input("second", schema="value INT")
                  .withColumn("eventTime", F.timestamp_seconds("value"))
                  .withWatermark("eventTime", "5 seconds").select("value"))
        t.output("sum", first.union(second).agg(F.sum("value")), output_mode="complete")

    driver = topology_driver(topology)
    first = driver.create_input_topic("first")
    second = driver.create_input_topic("second")

    def watermark_after_data(first_data=(), second_data=()):
        if first_data:
            add_ints(first, *first_data)
        if second_data:
            add_ints(second, *second_data)
        driver.process_all_available()
        add_ints(first, 0)                           # a dummy batch: it runs with the new one
        driver.process_all_available()
        return driver.batches[-1].watermark           # lastExecution's batchWatermarkMs

    # Global watermark starts at 0 until we get data from both sides
    assert watermark_after_data(first_data=[11]) == secs(0)
    assert watermark_after_data(second_data=[6]) == secs(1)
    # Global watermark stays at left watermark 1 when right watermark moves to 2
    assert watermark_after_data(second_data=[8]) == secs(1)
    # Global watermark switches to right side value 2 when left watermark goes higher
    assert watermark_after_data(first_data=[21]) == secs(3)
    # Global watermark goes back to left
    assert watermark_after_data(second_data=[17, 28, 39]) == secs(11)
    # Global watermark stays on left as long as it's below right
    assert watermark_after_data(first_data=[31]) == secs(21)
    assert watermark_after_data(first_data=[41]) == secs(31)
    # Global watermark switches back to right again
    assert watermark_after_data(first_data=[51]) == secs(34)
    # Global watermark is updated correctly with simultaneous data from both sides
    assert watermark_after_data(first_data=[100], second_data=[100]) == secs(90)
    assert watermark_after_data(first_data=[120], second_data=[110]) == secs(105)
    assert watermark_after_data(first_data=[130], second_data=[125]) == secs(120)
    # Global watermark doesn't decrement with simultaneous data
    assert watermark_after_data(first_data=[100], second_data=[100]) == secs(120)
    assert watermark_after_data(first_data=[140], second_data=[100]) == secs(120)
    assert watermark_after_data(first_data=[100], second_data=[135]) == secs(130)
    # Global watermark recovers after restart, but left side watermark ahead of it does not.
    assert watermark_after_data(first_data=[200], second_data=[190]) == secs(185)
    driver.restart()                                 # union.stop(); unionWriter.start()
    assert watermark_after_data() == secs(185)
    # Even though the left side was ahead of 185000 in the last execution, the watermark
    # won't increment until it gets past it in this execution.
    assert watermark_after_data(second_data=[200]) == secs(185)
    assert watermark_after_data(first_data=[200]) == secs(190)


# EventTimeWatermarkSuite: "complete mode"
def test_complete_mode(topology_driver):
    driver = topology_driver(windowed_counts("complete"))
    values = driver.create_input_topic("values")
    counts = driver.create_output_topic("counts")
    # No eviction when asked to compute complete results.
    for added, expected in [((10, 11, 12), [(10, 3)]),
                            ((25,), [(10, 3), (25, 1)]),
                            ((25,), [(10, 3), (25, 2)]),
                            ((10,), [(10, 4), (25, 2)]),
                            ((25,), [(10, 4), (25, 3)])]:
        add_ints(values, *added)
        driver.process_all_available()
        check_answer(counts, "start count", *expected)


# EventTimeWatermarkSuite: "group by on raw timestamp"
def test_group_by_on_raw_timestamp(topology_driver):
    def topology(t: Topology) -> None:
        values = t.input("values", schema="value INT")
        t.output("counts", values.withColumn("eventTime", F.timestamp_seconds("value"))
                 .withWatermark("eventTime", "10 seconds")
                 .groupBy("eventTime").agg(F.count("*").alias("count"))
                 .select(F.col("eventTime").cast("long").alias("eventTime"), "count"))

    driver = topology_driver(topology)
    values = driver.create_input_topic("values")
    counts = driver.create_output_topic("counts")
    add_ints(values, 10)
    driver.process_all_available()
    check_answer(counts, "eventTime count")
    add_ints(values, 25)                             # Advance watermark to 15 seconds
    driver.process_all_available()
    check_answer(counts, "eventTime count", (10, 1))


def overriding_watermark(t: Topology) -> None:
    pairs = t.input("pairs", schema="_1 BIGINT, _2 BIGINT")
    t.output("counts", pairs.withColumn("first", F.timestamp_seconds("_1"))
             .withColumn("second", F.timestamp_seconds("_2"))
             .withWatermark("first", "1 minute")
             .select("*")
             .withWatermark("second", "2 minutes")
             .groupBy(F.window("second", "1 minute")).count())


# EventTimeWatermarkSuite: "overriding watermark should not be allowed by default"
def test_overriding_watermark_should_not_be_allowed_by_default(topology_driver):
    driver = topology_driver(overriding_watermark)
    driver.create_input_topic("pairs").pipe_input((100, 200))
    with pytest.raises(StreamingQueryFailedError) as caught:  # ExpectFailure[AnalysisException]
        driver.process_all_available()
    assert "Redefining watermark is disallowed." in str(caught.value)
    assert ALLOW_MULTIPLE in str(caught.value)


# EventTimeWatermarkSuite: "overriding watermark should not fail in compatibility mode"
def test_overriding_watermark_should_not_fail_in_compatibility_mode(topology_driver):
    driver = topology_driver(overriding_watermark, sql_conf={ALLOW_MULTIPLE: "false"})
    counts = driver.create_output_topic("counts")
    driver.create_input_topic("pairs").pipe_input((100, 200))
    driver.process_all_available()
    check_answer(counts, "window count")
    # watermark from the first definition = 100 - 60 = 40, from the second = 200 - 120 =
    # 80: the aggregation of the last execution runs with min(40, 80) = 40 s (Spark checks
    # the operator's watermarks for late events and for eviction; both are this value in
    # compatibility mode).
    assert driver.batches[-1].watermark == secs(40)


def multiple_event_time_columns(t: Topology) -> None:
    df1 = (t.input("input1", schema="_1 STRING, _2 BIGINT")
           .selectExpr("_1 AS id1", "timestamp_seconds(_2) AS ts1")
           .withWatermark("ts1", "1 minute"))
    df2 = (t.input("input2", schema="_1 STRING, _2 BIGINT")
           .selectExpr("_1 AS id2", "timestamp_seconds(_2) AS ts2")
           .withWatermark("ts2", "2 minutes"))
    joined = (df1.join(df2, F.expr("id1 = id2 AND ts1 = ts2 + INTERVAL 10 SECONDS"), "inner")
              .selectExpr("id1", "ts1", "ts2"))
    t.output("dedup", joined.dropDuplicates()
             .selectExpr("id1", "CAST(ts1 AS LONG) AS ts1", "CAST(ts2 AS LONG) AS ts2"))


def _multi_add(driver) -> None:
    driver.create_input_topic("input1").pipe_value_list([("A", 200), ("B", 300)])
    driver.create_input_topic("input2").pipe_value_list([("A", 190), ("C", 350)])


# EventTimeWatermarkSuite: "multiple event time columns in an input DataFrame for stateful
# operator is not allowed"
def test_multiple_event_time_columns_for_a_stateful_operator_is_not_allowed(topology_driver):
    driver = topology_driver(multiple_event_time_columns,
                             sql_conf={"spark.sql.session.timeZone": "UTC"})
    _multi_add(driver)                               # MultiAddData
    with pytest.raises(StreamingQueryFailedError) as caught:  # ExpectFailure[SparkException]
        driver.process_all_available()
    assert "More than one event time columns are available." in str(caught.value)
    assert "Please ensure there is at most one event time column per stream." in str(
        caught.value)


# EventTimeWatermarkSuite: "stateful operator should pick the first occurrence of event
# time column if there is multiple event time columns in compatibility mode"
def test_stateful_operator_picks_the_first_event_time_column_in_compatibility_mode(
    topology_driver,
):
    driver = topology_driver(multiple_event_time_columns,
                             sql_conf={ALLOW_MULTIPLE: "false",
                                       "spark.sql.session.timeZone": "UTC"})
    _multi_add(driver)
    driver.process_all_available()
    check_answer(driver.create_output_topic("dedup"), "id1 ts1 ts2", ("A", 200, 190))


# EventTimeWatermarkSuite: "SPARK-27340 Alias on TimeWindow expression cause watermark
# metadata lost"
def test_spark_27340_alias_on_time_window_keeps_the_watermark(topology_driver):
    def topology(t: Topology) -> None:
        values = t.input("values", schema="value INT")
        aliased = (values.withColumn("eventTime", F.timestamp_seconds("value"))
                   .withWatermark("eventTime", "10 seconds")
                   .select(F.window("eventTime", "5 seconds").alias("aliasWindow")))
        t.output("counts", aliased.groupBy("aliasWindow").agg(F.count("*").alias("count"))
                 .select(F.col("aliasWindow.start").cast("long").alias("start"), "count"))

    driver = topology_driver(topology)
    values = driver.create_input_topic("values")
    counts = driver.create_output_topic("counts")
    add_ints(values, 10, 11, 12, 13, 14, 15)
    driver.process_all_available()
    check_new_answer(counts, "start count")
    add_ints(values, 25)                             # Advance watermark to 15 seconds
    driver.process_all_available()
    check_new_answer(counts, "start count", (10, 5))
    driver.assert_num_state_rows("counts", total=2)
    add_ints(values, 10)                             # less than the watermark
    driver.process_all_available()
    check_new_answer(counts, "start count")
    driver.assert_num_state_rows("counts", total=2)


# EventTimeWatermarkSuite: "test no-data flag"
@pytest.mark.parametrize("flag", [True, False])
def test_no_data_flag(topology_driver, flag):
    driver = topology_driver(windowed_counts(), sql_conf={NO_DATA_BATCHES: str(flag).lower()})
    values = driver.create_input_topic("values")
    counts = driver.create_output_topic("counts")
    add_ints(values, 10, 11, 12, 13, 14, 15)
    driver.process_all_available()
    check_new_answer(counts, "start count")
    add_ints(values, 25)                             # Advance watermark to 15 seconds
    driver.process_all_available()
    # a new answer if the flag is set, none otherwise
    if flag:
        check_new_answer(counts, "start count", (10, 5))
    else:
        check_new_answer(counts, "start count")


def multiple_watermarks(t: Topology) -> None:
    df1 = (t.input("input1", schema="value INT")
           .withColumn("eventTime", F.timestamp_seconds("value"))
           .withWatermark("eventTime", "10 seconds"))
    df2 = (t.input("input2", schema="value INT")
           .withColumn("eventTime", F.timestamp_seconds("value"))
           .withWatermark("eventTime", "15 seconds"))
    t.output("union", df1.union(df2).select(F.col("eventTime").cast("int").alias("eventTime")))


def _check_watermark(driver, topic, seconds: int) -> None:
    """The suite's checkWatermark: add 1 to ``topic``, process, and read the watermark of
    the query's last progress (the batch that read the 1)."""
    add_ints(topic, 1)
    driver.process_all_available()
    assert driver.batches[-1].watermark == secs(seconds)


# EventTimeWatermarkSuite: "MultipleWatermarkPolicy: max"
def test_multiple_watermark_policy_max(topology_driver):
    driver = topology_driver(multiple_watermarks, sql_conf={POLICY: "max"})
    input1 = driver.create_input_topic("input1")
    input2 = driver.create_input_topic("input2")
    out = driver.create_output_topic("union")
    add_ints(input1, 20)
    add_ints(input2, 30)                             # MultiAddData(input1, 20)(input2, 30)
    driver.process_all_available()
    check_last_batch(out, "eventTime", (20,), (30,))
    _check_watermark(driver, input1, 15)             # max(20 - 10, 30 - 15) = 15
    driver.restart()
    _check_watermark(driver, input1, 15)             # watermark recovered correctly
    add_ints(input1, 120)
    add_ints(input2, 130)
    driver.process_all_available()
    check_last_batch(out, "eventTime", (120,), (130,))
    _check_watermark(driver, input1, 115)            # max(120 - 10, 130 - 15) = 115
    add_ints(input1, 150)
    driver.process_all_available()
    check_last_batch(out, "eventTime", (150,))
    _check_watermark(driver, input1, 140)            # advances even if one input has data


# EventTimeWatermarkSuite: "MultipleWatermarkPolicy: min"
def test_multiple_watermark_policy_min(topology_driver):
    driver = topology_driver(multiple_watermarks, sql_conf={POLICY: "min"})
    input1 = driver.create_input_topic("input1")
    input2 = driver.create_input_topic("input2")
    out = driver.create_output_topic("union")
    add_ints(input1, 20)
    add_ints(input2, 30)
    driver.process_all_available()
    check_last_batch(out, "eventTime", (20,), (30,))
    _check_watermark(driver, input1, 10)             # min(20 - 10, 30 - 15) = 10
    driver.restart()
    _check_watermark(driver, input1, 10)             # watermark recovered correctly
    add_ints(input1, 120)
    add_ints(input2, 130)
    driver.process_all_available()
    check_last_batch(out, "eventTime", (120,), (130,))
    _check_watermark(driver, input2, 110)            # min(120 - 10, 130 - 15) = 110
    add_ints(input2, 150)
    driver.process_all_available()
    check_last_batch(out, "eventTime", (150,))
    _check_watermark(driver, input2, 110)            # does not advance with one input
