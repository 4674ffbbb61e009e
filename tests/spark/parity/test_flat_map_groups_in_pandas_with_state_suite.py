"""Cases ported from Spark's FlatMapGroupsInPandasWithStateSuite (sql/core,
org.apache.spark.sql.streaming): ``applyInPandasWithState`` driven by Scala's StreamTest,
with the Python functions of its ``pythonScript`` blocks.

``AdvanceManualClock(ms)`` on a ``ProcessingTime("1 second")`` query with a manual clock
runs one trigger at the new time (the trigger executor was stalled): ``jump_wall_clock``.
"""

from __future__ import annotations

import calendar
import datetime
from datetime import timedelta

import numpy as np
import pandas as pd
import pytest
from pyspark.sql import functions as F

from pyspark_streamtest import Topology
from tests.spark.parity._common import EPOCH, check_new_answer, secs

SECOND = timedelta(seconds=1)
KEY_COUNT = "key STRING, countAsString STRING"


def _count_up_to_2_no_watermark(key, pdf_iter, state):
    """Running count up to 2, then remove the count; output only while state is defined."""
    assert state.getCurrentProcessingTimeMs() >= 0
    try:
        state.getCurrentWatermarkMs()
        raise AssertionError("getCurrentWatermarkMs() did not raise")
    except RuntimeError as e:
        assert "watermark" in str(e)
    count = state.getOption
    count = 0 if count is None else count[0]
    for pdf in pdf_iter:
        count += len(pdf)
        state.update((count,))
    if count >= 3:
        state.remove()
        yield pd.DataFrame()
    else:
        yield pd.DataFrame({"key": [key[0]], "countAsString": [str(count)]})


def running_counts(t: Topology) -> None:
    values = t.input("input", schema="value STRING")
    t.output("result", values.groupBy("value").applyInPandasWithState(
        _count_up_to_2_no_watermark, KEY_COUNT, "count LONG", "Update", "NoTimeout"),
        output_mode="update")


# FlatMapGroupsInPandasWithStateSuite: "applyInPandasWithState - streaming"
def test_apply_in_pandas_with_state_streaming(topology_driver):
    driver = topology_driver(running_counts)
    data = driver.create_input_topic("input")
    out = driver.create_output_topic("result")
    data.pipe_value_list([("a",)])
    driver.process_all_available()
    check_new_answer(out, "key countAsString", ("a", "1"))
    driver.assert_num_state_rows("result", total=1, updated=1, dropped_by_watermark=0)
    data.pipe_value_list([("a",), ("b",)])
    driver.process_all_available()
    check_new_answer(out, "key countAsString", ("a", "2"), ("b", "1"))
    driver.assert_num_state_rows("result", total=2, updated=2, dropped_by_watermark=0)
    driver.restart()                                 # StopStream, StartStream()
    data.pipe_value_list([("a",), ("b",)])           # removes state for "a", no output for a
    driver.process_all_available()
    check_new_answer(out, "key countAsString", ("b", "2"))
    driver.assert_num_state_rows("result", total=[1], updated=[1], dropped_by_watermark=[0],
                                 removed=[1])
    driver.restart()
    data.pipe_value_list([("a",), ("c",)])           # recreates state for "a"
    driver.process_all_available()
    check_new_answer(out, "key countAsString", ("a", "1"), ("c", "1"))
    driver.assert_num_state_rows("result", total=3, updated=2, dropped_by_watermark=0)


def _one_row_per_value(key, pdf_iter, state):
    prev_count = state.getOption
    prev_count = 0 if prev_count is None else prev_count[0]
    count = prev_count
    for pdf in pdf_iter:
        count += len(pdf)
        yield pdf.assign(valueAsString=lambda x: x.value.apply(str),
                         prevCountAsString=str(prev_count))
    state.update((count,))


# FlatMapGroupsInPandasWithStateSuite: "applyInPandasWithState - streaming, multiple groups
# in partition, multiple outputs per grouping key"
def test_multiple_groups_in_partition_multiple_outputs_per_key(topology_driver):
    def topology(t: Topology) -> None:
        pairs = t.input("input", schema="_1 STRING, _2 INT").selectExpr("_1 AS key",
                                                                        "_2 AS value")
        t.output("result", pairs.groupBy("key").applyInPandasWithState(
            _one_row_per_value,
            "key STRING, value INT, valueAsString STRING, prevCountAsString STRING",
            "count LONG", "Update", "NoTimeout")
            .select("key", "value", "valueAsString", "prevCountAsString"),
            output_mode="update")

    driver = topology_driver(topology, sql_conf={"spark.sql.shuffle.partitions": "1"})
    data = driver.create_input_topic("input")
    out = driver.create_output_topic("result")
    columns = "key value valueAsString prevCountAsString"
    data.pipe_value_list([("a", 1)])
    driver.process_all_available()
    check_new_answer(out, columns, ("a", 1, "1", "0"))
    driver.assert_num_state_rows("result", total=1, updated=1, dropped_by_watermark=0)
    data.pipe_value_list([("a", 2), ("a", 3), ("b", 1)])
    driver.process_all_available()
    check_new_answer(out, columns, ("a", 2, "2", "1"), ("a", 3, "3", "1"), ("b", 1, "1", "0"))
    driver.assert_num_state_rows("result", total=2, updated=2, dropped_by_watermark=0)
    driver.restart()
    data.pipe_value_list([("b", 2), ("c", 1), ("d", 1), ("e", 1)])
    driver.process_all_available()
    check_new_answer(out, columns, ("b", 2, "2", "1"), ("c", 1, "1", "0"), ("d", 1, "1", "0"),
                     ("e", 1, "1", "0"))
    driver.assert_num_state_rows("result", total=5, updated=4, dropped_by_watermark=0)
    data.pipe_value_list([("a", 4)])
    driver.process_all_available()
    check_new_answer(out, columns, ("a", 4, "4", "3"))


def _count_up_to_2_minus_one(key, pdf_iter, state):
    """Running count up to 2; -1 when the count went beyond 2 and the state was removed."""
    count = state.getOption
    count = 0 if count is None else count[0]
    for pdf in pdf_iter:
        count += len(pdf)
    state.update((count,))
    if count >= 3:
        state.remove()
        yield pd.DataFrame({"key": [key[0]], "countAsString": [str(-1)]})
    else:
        yield pd.DataFrame({"key": [key[0]], "countAsString": [str(count)]})


# FlatMapGroupsInPandasWithStateSuite: "applyInPandasWithState - streaming + aggregation"
def test_streaming_plus_aggregation(topology_driver):
    def topology(t: Topology) -> None:
        values = t.input("input", schema="value STRING")
        t.output("counts", values.groupBy("value").applyInPandasWithState(
            _count_up_to_2_minus_one, KEY_COUNT, "count LONG", "Append", "NoTimeout")
            .groupBy("key").count(), output_mode="complete")

    driver = topology_driver(topology)
    data = driver.create_input_topic("input")
    out = driver.create_output_topic("counts")
    data.pipe_value_list([("a",)])
    driver.process_all_available()
    check_new_answer(out, "key count", ("a", 1))
    data.pipe_value_list([("a",), ("b",)])           # ("a", "2"), ("b", "1")
    driver.process_all_available()
    check_new_answer(out, "key count", ("a", 2), ("b", 1))
    driver.restart()
    data.pipe_value_list([("a",), ("b",)])           # ("a", "-1"), ("b", "2")
    driver.process_all_available()
    check_new_answer(out, "key count", ("a", 3), ("b", 2))
    driver.restart()
    data.pipe_value_list([("a",), ("c",)])           # ("a", "1"), ("c", "1")
    driver.process_all_available()
    check_new_answer(out, "key count", ("a", 4), ("b", 2), ("c", 1))


def _count_with_processing_time_timeout(key, pdf_iter, state):
    """The count as state, a processing-time timeout of 10 s; -1 when timed out."""
    assert state.getCurrentProcessingTimeMs() >= 0
    try:
        state.getCurrentWatermarkMs()
        raise AssertionError("getCurrentWatermarkMs() did not raise")
    except RuntimeError as e:
        assert "watermark" in str(e)
    if state.hasTimedOut:
        state.remove()
        yield pd.DataFrame({"key": [key[0]], "countAsString": [str(-1)]})
    else:
        count = state.getOption
        count = 0 if count is None else count[0]
        for pdf in pdf_iter:
            count += len(pdf)
        state.update((count,))
        state.setTimeoutDuration(10000)
        yield pd.DataFrame({"key": [key[0]], "countAsString": [str(count)]})


# FlatMapGroupsInPandasWithStateSuite: "applyInPandasWithState - streaming with processing
# time timeout"
def test_streaming_with_processing_time_timeout(topology_driver):
    def topology(t: Topology) -> None:
        values = t.input("input", schema="value STRING")
        t.output("result", values.groupBy("value").applyInPandasWithState(
            _count_with_processing_time_timeout, KEY_COUNT, "count LONG", "Update",
            "ProcessingTimeTimeout"), output_mode="update")

    # StartStream(Trigger.ProcessingTime("1 second"), triggerClock = clock)
    driver = topology_driver(topology, start_time=EPOCH)
    data = driver.create_input_topic("input")
    out = driver.create_output_topic("result")

    data.pipe_value_list([("a",)])
    driver.jump_wall_clock(1 * SECOND)               # AdvanceManualClock(1 * 1000)
    check_new_answer(out, "key countAsString", ("a", "1"))
    driver.assert_num_state_rows("result", total=1, updated=1, dropped_by_watermark=0)

    data.pipe_value_list([("b",)])
    driver.jump_wall_clock(1 * SECOND)
    check_new_answer(out, "key countAsString", ("b", "1"))
    driver.assert_num_state_rows("result", total=2, updated=1, dropped_by_watermark=0)

    data.pipe_value_list([("b",)])
    driver.jump_wall_clock(10 * SECOND)
    check_new_answer(out, "key countAsString", ("a", "-1"), ("b", "2"))
    driver.assert_num_state_rows("result", total=[1], updated=[1], dropped_by_watermark=[0],
                                 removed=[1])

    driver.stop()                                    # StopStream
    driver.start()                                   # StartStream(ProcessingTime, clock)

    data.pipe_value_list([("c",)])
    driver.jump_wall_clock(11 * SECOND)
    check_new_answer(out, "key countAsString", ("b", "-1"), ("c", "1"))
    driver.assert_num_state_rows("result", total=[1], updated=[1], dropped_by_watermark=[0],
                                 removed=[1])

    ran = driver.jump_wall_clock(12 * SECOND)
    assert driver.current_time == secs(35)           # clock.getTimeMillis() == 35000
    assert ran[-1].processing_time == secs(35)       # lastProgress.timestamp
    check_new_answer(out, "key countAsString", ("c", "-1"))
    driver.assert_num_state_rows("result", total=[0], updated=[0], dropped_by_watermark=[0],
                                 removed=[1])


def _max_event_time_with_event_time_timeout(key, pdf_iter, state):
    assert state.getCurrentProcessingTimeMs() >= 0
    assert state.getCurrentWatermarkMs() >= -1
    timeout_delay_sec = 5
    if state.hasTimedOut:
        state.remove()
        yield pd.DataFrame({"key": [key[0]], "maxEventTimeSec": [-1]})
    else:
        m = state.getOption
        max_event_time_sec = 0 if m is None else m[0]
        for pdf in pdf_iter:
            pser = pdf.eventTime.apply(
                lambda dt: (int(calendar.timegm(dt.utctimetuple()) + dt.microsecond)))
            max_event_time_sec = int(max(pser.max(), max_event_time_sec))
        state.update((max_event_time_sec,))
        timeout_timestamp_sec = max_event_time_sec + timeout_delay_sec
        state.setTimeoutTimestamp(timeout_timestamp_sec * 1000)
        yield pd.DataFrame({"key": [key[0]], "maxEventTimeSec": [max_event_time_sec]})


# FlatMapGroupsInPandasWithStateSuite: "applyInPandasWithState - streaming w/ event time
# timeout + watermark"
def test_streaming_with_event_time_timeout_and_watermark(topology_driver):
    def topology(t: Topology) -> None:
        pairs = t.input("input", schema="_1 STRING, _2 INT")
        t.output("result", pairs.select(F.col("_1").alias("key"),
                                        F.timestamp_seconds("_2").alias("eventTime"))
                 .withWatermark("eventTime", "10 seconds").groupBy("key")
                 .applyInPandasWithState(_max_event_time_with_event_time_timeout,
                                         "key STRING, maxEventTimeSec INT",
                                         "maxEventTimeSec LONG", "Update", "EventTimeTimeout"),
                 output_mode="update")

    driver = topology_driver(topology, sql_conf={"spark.sql.session.timeZone": "UTC"})
    data = driver.create_input_topic("input")
    out = driver.create_output_topic("result")
    # Max event time = 15. Timeout timestamp for "a" = 15 + 5 = 20. Watermark = 15 - 10 = 5.
    data.pipe_value_list([("a", 11), ("a", 13), ("a", 15)])
    driver.process_all_available()
    check_new_answer(out, "key maxEventTimeSec", ("a", 15))
    data.pipe_value_list([("a", 4)])                 # older than the watermark for "a"
    driver.process_all_available()
    check_new_answer(out, "key maxEventTimeSec")
    data.pipe_value_list([("a", 10)])                # newer than the watermark for "a"
    driver.process_all_available()
    check_new_answer(out, "key maxEventTimeSec", ("a", 15))
    # Watermark = 31 - 10 = 21, so "a" times out (its timeout timestamp is 20)
    data.pipe_value_list([("b", 31)])
    driver.process_all_available()
    check_new_answer(out, "key maxEventTimeSec", ("a", -1), ("b", 31))


def _count_with_timeout_duration(key, pdf_iter, state):
    if state.hasTimedOut:
        state.remove()
        yield pd.DataFrame({"key": [key[0]], "countAsString": [str(-1)]})
    else:
        count = state.getOption
        count = 0 if count is None else count[0]
        for pdf in pdf_iter:
            count += len(pdf)
        state.update((count,))
        state.setTimeoutDuration(10000)
        yield pd.DataFrame({"key": [key[0]], "countAsString": [str(count)]})


# FlatMapGroupsInPandasWithStateSuite: "SPARK-20714: watermark does not fail query when
# timeout = NoTimeout" and "... timeout = ProcessingTimeTimeout" (Spark's body is the same
# for both: its query always passes "ProcessingTimeTimeout")
def test_spark_20714_watermark_does_not_fail_query_with_a_timeout(topology_driver):
    def topology(t: Topology) -> None:
        pairs = t.input("input", schema="_1 STRING, _2 BIGINT").toDF("key", "time")
        t.output("result", pairs.selectExpr("key", "timestamp_seconds(time) as timestamp")
                 .withWatermark("timestamp", "10 second").groupBy("key")
                 .applyInPandasWithState(_count_with_timeout_duration, KEY_COUNT, "count LONG",
                                         "Update", "ProcessingTimeTimeout"),
                 output_mode="update")

    driver = topology_driver(topology, start_time=EPOCH,
                             sql_conf={"spark.sql.session.timeZone": "UTC"})
    driver.create_input_topic("input").pipe_input(("a", 1))
    driver.jump_wall_clock(SECOND)                   # AdvanceManualClock(1 * 1000)
    check_new_answer(driver.create_output_topic("result"), "key countAsString", ("a", "1"))


def _chunk_count(key, pdf_iter, state):
    chunk_count = 0
    for _ in pdf_iter:
        chunk_count += 1
    yield pd.DataFrame({"key": [key[0]], "chunkCount": [chunk_count]})


def keyed(function, output_schema: str, state_schema: str):
    def topology(t: Topology) -> None:
        keys = t.input("input", schema="value STRING").selectExpr("value AS key")
        t.output("result", keys.groupBy("key").applyInPandasWithState(
            function, output_schema, state_schema, "Update", "NoTimeout"),
            output_mode="update")
    return topology


# FlatMapGroupsInPandasWithStateSuite: "applyInPandasWithState - streaming - arrow
# RecordBatch size with chunking" (Spark checks sizes 1, 2, 4 and 8; size 2 here)
@pytest.mark.parametrize(("arrow_batch_size", "expected"), [
    pytest.param(2, [("a", 2), ("b", 3)], id="2"),
])
def test_arrow_record_batch_size_with_chunking(topology_driver, arrow_batch_size, expected):
    driver = topology_driver(
        keyed(_chunk_count, "key STRING, chunkCount INT", "notUsed INT"),
        sql_conf={"spark.sql.shuffle.partitions": "1",
                  "spark.sql.execution.arrow.maxRecordsPerBatch": str(arrow_batch_size)})
    driver.create_input_topic("input").pipe_value_list(
        [(v,) for v in ("a", "a", "a", "b", "b", "b", "b", "b")])
    driver.process_all_available()
    check_new_answer(driver.create_output_topic("result"), "key chunkCount", *expected)


def _consume_first_chunk_only(key, pdf_iter, state):
    num_batches = state.getOption
    num_batches = 0 if num_batches is None else num_batches[0]
    num_batches += 1
    next(pdf_iter)                                   # only consume the first element
    state.update((num_batches,))
    yield pd.DataFrame({"key": [key[0]], "numBatches": [num_batches]})


# FlatMapGroupsInPandasWithStateSuite: "applyInPandasWithState - streaming - partial consume
# of iterator in user function" (Spark loops over Arrow batch sizes 1 to 3; 3 here)
@pytest.mark.parametrize("arrow_batch_size", [3])
def test_partial_consume_of_iterator_in_user_function(topology_driver, arrow_batch_size):
    driver = topology_driver(
        keyed(_consume_first_chunk_only, "key STRING, numBatches INT", "numBatches INT"),
        sql_conf={"spark.sql.shuffle.partitions": "1",
                  "spark.sql.execution.arrow.maxRecordsPerBatch": str(arrow_batch_size)})
    data = driver.create_input_topic("input")
    out = driver.create_output_topic("result")
    test_data = (["a"] * (arrow_batch_size * 2) + ["b"] * int(arrow_batch_size * 2.5) + ["c"])
    data.pipe_value_list([(v,) for v in test_data])
    driver.process_all_available()
    check_new_answer(out, "key numBatches", ("a", 1), ("b", 1), ("c", 1))
    data.pipe_value_list([(v,) for v in test_data])
    driver.process_all_available()
    check_new_answer(out, "key numBatches", ("a", 2), ("b", 2), ("c", 2))


def _two_key_count_with_timeout(key, pdf_iter, state):
    if state.hasTimedOut:
        state.remove()
        yield pd.DataFrame({"key1": [key[0]], "key2": [key[1]], "countAsStr": [str(-1)]})
    else:
        count = state.getOption
        count = 0 if count is None else count[0]
        for pdf in pdf_iter:
            count += len(pdf)
        state.update((count,))
        state.setTimeoutDuration(10000)
        yield pd.DataFrame({"key1": [key[0]], "key2": [key[1]], "countAsStr": [str(count)]})


TWO_KEYS = "key1 STRING, key2 STRING, countAsStr STRING"


# FlatMapGroupsInPandasWithStateSuite: "SPARK-40670: applyInPandasWithState - streaming
# having non-null columns"
def test_spark_40670_streaming_having_non_null_columns(topology_driver):
    def topology(t: Topology) -> None:
        data = (t.input("input", schema="value STRING").withColumnRenamed("value", "key1")
                # the type of columns with string literal will be non-nullable
                .withColumn("key2", F.lit("__FAKE__"))
                .withColumn("val1", F.lit("__FAKE__"))
                .withColumn("val2", F.lit("__FAKE__")))
        t.output("result", data.groupBy("key1", "key2").applyInPandasWithState(
            _two_key_count_with_timeout, TWO_KEYS, "count LONG", "Update",
            "ProcessingTimeTimeout"), output_mode="update")

    driver = topology_driver(topology, start_time=EPOCH)
    data = driver.create_input_topic("input")
    out = driver.create_output_topic("result")
    data.pipe_input(("a",))
    driver.jump_wall_clock(1 * SECOND)
    check_new_answer(out, "key1 key2 countAsStr", ("a", "__FAKE__", "1"))
    driver.assert_num_state_rows("result", total=1, updated=1, dropped_by_watermark=0)
    data.pipe_input(("b",))
    driver.jump_wall_clock(1 * SECOND)
    check_new_answer(out, "key1 key2 countAsStr", ("b", "__FAKE__", "1"))
    driver.assert_num_state_rows("result", total=2, updated=1, dropped_by_watermark=0)
    data.pipe_input(("b",))
    driver.jump_wall_clock(10 * SECOND)
    check_new_answer(out, "key1 key2 countAsStr", ("a", "__FAKE__", "-1"),
                     ("b", "__FAKE__", "2"))
    driver.assert_num_state_rows("result", total=[1], updated=[1], dropped_by_watermark=[0],
                                 removed=[1])


# FlatMapGroupsInPandasWithStateSuite: "SPARK-41261: applyInPandasWithState - key in user
# function should be correct for timed out state despite of place for key columns"
def test_spark_41261_key_of_timed_out_state_whatever_the_key_columns_place(topology_driver):
    def topology(t: Topology) -> None:
        # schema: val1, key2, val2, key1, val3
        data = (t.input("input", schema="value STRING").withColumnRenamed("value", "val1")
                .withColumn("key2", F.col("val1"))
                .withColumn("val2", F.lit("__FAKE__"))
                .withColumn("key1", F.lit("__FAKE__"))
                .withColumn("val3", F.lit("__FAKE__")))
        # grouping columns: key1, key2 (swapped order)
        t.output("result", data.groupBy("key1", "key2").applyInPandasWithState(
            _two_key_count_with_timeout, TWO_KEYS, "count LONG", "Update",
            "ProcessingTimeTimeout"), output_mode="update")

    driver = topology_driver(topology, start_time=EPOCH)
    data = driver.create_input_topic("input")
    out = driver.create_output_topic("result")
    data.pipe_input(("a",))
    driver.jump_wall_clock(1 * SECOND)
    check_new_answer(out, "key1 key2 countAsStr", ("__FAKE__", "a", "1"))
    driver.assert_num_state_rows("result", total=1, updated=1, dropped_by_watermark=0)
    data.pipe_input(("b",))
    driver.jump_wall_clock(11 * SECOND)
    check_new_answer(out, "key1 key2 countAsStr", ("__FAKE__", "a", "-1"),
                     ("__FAKE__", "b", "1"))
    driver.assert_num_state_rows("result", total=[1], updated=[1], dropped_by_watermark=[0],
                                 removed=[1])


def _numpy_values_in_state(key, pdf_iter, state):
    pdf = pd.DataFrame({
        "int32": [np.int32(1)],
        "int64": [np.int64(1)],
        "float32": [np.float32(1)],
        "float64": [np.float64(1)],
        "bool": [True],
        "datetime": [datetime.datetime(1990, 1, 1, 0, 0, 0)],
        "timedelta": [datetime.timedelta(1)],
    })
    state.update(tuple(pdf.iloc[0]))
    # Assert on Python primitive type comparison.
    assert state.get == (
        1, 1, 1.0, 1.0, True,
        datetime.datetime(1990, 1, 1, 0, 0, 0), datetime.timedelta(1)
    )
    yield pd.DataFrame({"key": [key[0]]})


# FlatMapGroupsInPandasWithStateSuite: "SPARK-41260: applyInPandasWithState - NumPy
# instances to JVM rows in state"
def test_spark_41260_numpy_instances_to_jvm_rows_in_state(topology_driver):
    def topology(t: Topology) -> None:
        values = t.input("input", schema="value STRING")
        t.output("result", values.groupBy("value").applyInPandasWithState(
            _numpy_values_in_state, "key STRING",
            "int32 INT, int64 BIGINT, float32 FLOAT, float64 DOUBLE, bool BOOLEAN, "
            "datetime DATE, timedelta INTERVAL DAY TO SECOND",
            "Update", "NoTimeout"), output_mode="update")

    driver = topology_driver(topology)
    driver.create_input_topic("input").pipe_input(("a",))
    driver.process_all_available()
    check_new_answer(driver.create_output_topic("result"), "key", ("a",))
    driver.assert_num_state_rows("result", total=1, updated=1, dropped_by_watermark=0)
