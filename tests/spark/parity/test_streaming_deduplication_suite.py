"""Cases ported from Spark's StreamingDeduplicationSuite (sql/core,
org.apache.spark.sql.streaming).

``assertNumStateRows(total, updated)`` is Spark's StateStoreMetricsTest helper: ``total``
from the last batch, ``updated`` (and ``droppedByWatermark``, 0 unless given, and
``removed`` when given) summed over the batches since the previous check;
``driver.assert_num_state_rows`` does the same.
"""

from __future__ import annotations

import pytest
from pyspark.sql import functions as F

from pyspark_streamtest import Feature, StreamingQueryFailedError, Topology, supported_features
from tests.spark.parity._common import (
    SPARK,
    add_ints,
    check_answer,
    check_last_batch,
    check_new_answer,
)

NO_DATA_BATCHES = "spark.sql.streaming.noDataMicroBatches.enabled"


def dedup_of(schema: str, *columns: str, repeat: int = 1):
    def topology(t: Topology) -> None:
        result = t.input("input", schema=schema)
        for _ in range(repeat):
            result = result.dropDuplicates()
        t.output("result", result.dropDuplicates(list(columns)) if columns else result)
    return topology


# StreamingDeduplicationSuite: "deduplicate with all columns"
def test_deduplicate_with_all_columns(topology_driver):
    driver = topology_driver(dedup_of("value STRING", repeat=1))
    data = driver.create_input_topic("input")
    out = driver.create_output_topic("result")
    for added, expected, total, updated in [("a", [("a",)], 1, 1), ("a", [], 1, 0),
                                            ("b", [("b",)], 2, 1)]:
        data.pipe_input((added,))
        driver.process_all_available()
        check_last_batch(out, "value", *expected)
        driver.assert_num_state_rows("result", total=total, updated=updated,
                                     dropped_by_watermark=0)


# StreamingDeduplicationSuite: "deduplicate with some columns"
def test_deduplicate_with_some_columns(topology_driver):
    driver = topology_driver(dedup_of("_1 STRING, _2 INT", "_1", repeat=0))
    data = driver.create_input_topic("input")
    out = driver.create_output_topic("result")
    for added, expected, total, updated in [(("a", 1), [("a", 1)], 1, 1),
                                            (("a", 2), [], 1, 0),         # Dropped
                                            (("b", 1), [("b", 1)], 2, 1)]:
        data.pipe_input(added)
        driver.process_all_available()
        check_last_batch(out, "_1 _2", *expected)
        driver.assert_num_state_rows("result", total=total, updated=updated,
                                     dropped_by_watermark=0)


# StreamingDeduplicationSuite: "multiple deduplicates"
def test_multiple_deduplicates(topology_driver):
    driver = topology_driver(dedup_of("_1 STRING, _2 INT", "_1", repeat=1))
    data = driver.create_input_topic("input")
    out = driver.create_output_topic("result")
    data.pipe_input(("a", 1))
    driver.process_all_available()
    check_last_batch(out, "_1 _2", ("a", 1))
    driver.assert_num_state_rows("result", total=[1, 1], updated=[1, 1],
                                 dropped_by_watermark=[0, 0])
    data.pipe_input(("a", 2))                        # Dropped from the second dropDuplicates
    driver.process_all_available()
    check_last_batch(out, "_1 _2")
    driver.assert_num_state_rows("result", total=[1, 2], updated=[0, 1],
                                 dropped_by_watermark=[0, 0])
    data.pipe_input(("b", 1))
    driver.process_all_available()
    check_last_batch(out, "_1 _2", ("b", 1))
    driver.assert_num_state_rows("result", total=[2, 3], updated=[1, 1],
                                 dropped_by_watermark=[0, 0])


def dedup_with_watermark(t: Topology) -> None:
    values = t.input("input", schema="value INT")
    t.output("result", values.withColumn("eventTime", F.timestamp_seconds("value"))
             .withWatermark("eventTime", "10 seconds")
             .dropDuplicates()
             .select(F.col("eventTime").cast("long").alias("eventTime")))


TEN_TO_FIFTEEN_FIVE_TIMES = [v for _ in range(5) for v in range(10, 16)]


# StreamingDeduplicationSuite: "SPARK-35896: metrics in StateOperatorProgress are output
# correctly"
def test_spark_35896_metrics_in_state_operator_progress(topology_driver):
    driver = topology_driver(dedup_with_watermark,
                             sql_conf={"spark.sql.shuffle.partitions": "2"})
    data = driver.create_input_topic("input")
    out = driver.create_output_topic("result")
    add_ints(data, *TEN_TO_FIFTEEN_FIVE_TIMES)
    driver.process_all_available()
    check_answer(out, "eventTime", *[(v,) for v in range(10, 16)])
    driver.assert_num_state_rows("result", total=[6], updated=[6], dropped_by_watermark=[0],
                                 removed=[0])
    add_ints(data, 25)                               # watermark 15 s: no-data batch drops <= 15
    driver.process_all_available()
    check_new_answer(out, "eventTime", (25,))
    driver.assert_num_state_rows("result", total=[1], updated=[1], dropped_by_watermark=[0],
                                 removed=[6])
    add_ints(data, 10)                               # less than the watermark
    driver.process_all_available()
    check_new_answer(out, "eventTime")
    driver.assert_num_state_rows("result", total=[1], updated=[0], dropped_by_watermark=[1],
                                 removed=[0])
    add_ints(data, 10)
    driver.process_all_available()
    check_new_answer(out, "eventTime")
    # assertStateOperatorProgressMetric: the last progress's first state operator
    operator = driver.batches[-1].state_operators[0]
    assert (operator["operatorName"], operator["numShufflePartitions"],
            operator["numStateStoreInstances"]) == ("dedupe", 2, 2)


# StreamingDeduplicationSuite: "deduplicate with watermark"
def test_deduplicate_with_watermark(topology_driver):
    driver = topology_driver(dedup_with_watermark)
    data = driver.create_input_topic("input")
    out = driver.create_output_topic("result")
    add_ints(data, *TEN_TO_FIFTEEN_FIVE_TIMES)
    driver.process_all_available()
    check_answer(out, "eventTime", *[(v,) for v in range(10, 16)])
    driver.assert_num_state_rows("result", total=6, updated=6, dropped_by_watermark=0)
    add_ints(data, 25)                               # watermark 15 s: no-data batch drops <= 15
    driver.process_all_available()
    check_new_answer(out, "eventTime", (25,))
    driver.assert_num_state_rows("result", total=1, updated=1, dropped_by_watermark=0)
    add_ints(data, 10)                               # less than the watermark
    driver.process_all_available()
    check_new_answer(out, "eventTime")
    driver.assert_num_state_rows("result", total=1, updated=0, dropped_by_watermark=1)
    add_ints(data, 45)                               # watermark 35 s: no-data batch drops 25
    driver.process_all_available()
    check_new_answer(out, "eventTime", (45,))
    driver.assert_num_state_rows("result", total=1, updated=1, dropped_by_watermark=0)


# StreamingDeduplicationSuite: "deduplicate with aggregate - append mode"
def test_deduplicate_with_aggregate_append_mode(topology_driver):
    def topology(t: Topology) -> None:
        values = t.input("input", schema="value INT")
        t.output("counts", values.withColumn("eventTime", F.timestamp_seconds("value"))
                 .withWatermark("eventTime", "10 seconds")
                 .dropDuplicates()
                 .groupBy(F.window("eventTime", "5 seconds").alias("window"))
                 .agg(F.count("*").alias("count"))
                 .select(F.col("window.start").cast("long").alias("start"), "count"))

    driver = topology_driver(topology)
    data = driver.create_input_topic("input")
    out = driver.create_output_topic("counts")
    add_ints(data, *TEN_TO_FIFTEEN_FIVE_TIMES)
    driver.process_all_available()
    check_last_batch(out, "start count")
    # states in aggregate in [10, 14), [15, 20) (2 windows); in deduplicate 10 to 15
    driver.assert_num_state_rows("counts", total=[2, 6], updated=[2, 6],
                                 dropped_by_watermark=[0, 0])
    add_ints(data, 25)                               # Advance watermark to 15 seconds
    driver.process_all_available()
    check_last_batch(out, "start count", (10, 5))    # emitted with the no-data batch
    driver.assert_num_state_rows("counts", total=[2, 1], updated=[1, 1],
                                 dropped_by_watermark=[0, 0])
    add_ints(data, 10)                               # less than the watermark
    driver.process_all_available()
    check_last_batch(out, "start count")
    driver.assert_num_state_rows("counts", total=[2, 1], updated=[0, 0],
                                 dropped_by_watermark=[0, 1])
    add_ints(data, 40)                               # Advance watermark to 30 seconds
    driver.process_all_available()
    check_last_batch(out, "start count", (15, 1), (25, 1))
    driver.assert_num_state_rows("counts", total=[1, 1], updated=[1, 1],
                                 dropped_by_watermark=[0, 0])


def dedup_then_sum(mode: str):
    def topology(t: Topology) -> None:
        pairs = t.input("input", schema="_1 STRING, _2 INT")
        t.output("sums", pairs.select(F.col("_1").alias("str"), F.col("_2").alias("num"))
                 .dropDuplicates().groupBy("str").agg(F.sum("num").alias("sum")),
                 output_mode=mode)  # type: ignore[arg-type]
    return topology


# StreamingDeduplicationSuite: "deduplicate with aggregate - update mode"
# StreamingDeduplicationSuite: "deduplicate with aggregate - complete mode"
@pytest.mark.parametrize("mode", ["update", "complete"])
def test_deduplicate_with_aggregate_update_and_complete_mode(topology_driver, mode):
    driver = topology_driver(dedup_then_sum(mode))
    data = driver.create_input_topic("input")
    out = driver.create_output_topic("sums")
    steps = [
        (("a", 1), [("a", 1)], [("a", 1)], [1, 1], [1, 1]),
        (("a", 1), [], [("a", 1)], [1, 1], [0, 0]),                 # Dropped
        (("a", 2), [("a", 3)], [("a", 3)], [1, 2], [1, 1]),
        (("b", 1), [("b", 1)], [("a", 3), ("b", 1)], [2, 3], [1, 1]),
    ]
    for added, update_rows, complete_rows, total, updated in steps:
        data.pipe_input(added)
        driver.process_all_available()
        check_last_batch(out, "str sum", *(update_rows if mode == "update" else complete_rows))
        driver.assert_num_state_rows("sums", total=total, updated=updated,
                                     dropped_by_watermark=[0, 0])


# StreamingDeduplicationSuite: "SPARK-19841: watermarkPredicate should filter based on keys"
def test_spark_19841_watermark_predicate_filters_on_keys(topology_driver):
    def topology(t: Topology) -> None:
        pairs = t.input("input", schema="_1 INT, _2 INT")
        t.output("ids", pairs.toDF("time", "id")
                 .withColumn("time", F.timestamp_seconds("time"))
                 .withWatermark("time", "1 second")
                 .dropDuplicates(["id", "time"])               # Change the column positions
                 .select("id"))

    driver = topology_driver(topology)
    data = driver.create_input_topic("input")
    out = driver.create_output_topic("ids")
    data.pipe_value_list([(1, 1), (1, 1), (1, 2)])
    driver.process_all_available()
    check_answer(out, "id", (1,), (2,))
    data.pipe_value_list([(1, 1), (2, 3), (2, 4)])
    driver.process_all_available()
    check_new_answer(out, "id", (3,), (4,))
    data.pipe_value_list([(1, 0), (1, 1), (3, 5), (3, 6)])  # Drop (1, 0), (1, 1): watermark
    driver.process_all_available()
    check_new_answer(out, "id", (5,), (6,))
    data.pipe_value_list([(1, 0), (4, 7)])                   # Drop (1, 0) due to watermark
    driver.process_all_available()
    check_new_answer(out, "id", (7,))


# StreamingDeduplicationSuite: "SPARK-21546: dropDuplicates should ignore watermark when
# it's not a key"
def test_spark_21546_dropduplicates_ignores_a_watermark_that_is_not_a_key(topology_driver):
    def topology(t: Topology) -> None:
        pairs = t.input("input", schema="_1 INT, _2 INT")
        t.output("ids", pairs.toDF("id", "time")
                 .withColumn("time", F.timestamp_seconds("time"))
                 .withWatermark("time", "1 second")
                 .dropDuplicates(["id"])
                 .select("id", F.col("time").cast("long").alias("time")))

    driver = topology_driver(topology)
    driver.create_input_topic("input").pipe_value_list([(1, 1), (1, 2), (2, 2)])
    driver.process_all_available()
    check_answer(driver.create_output_topic("ids"), "id time", (1, 1), (2, 2))


# StreamingDeduplicationSuite: "test no-data flag"
@pytest.mark.parametrize("flag", [True, False])
def test_no_data_flag(topology_driver, flag):
    driver = topology_driver(dedup_with_watermark, sql_conf={NO_DATA_BATCHES: str(flag).lower()})
    data = driver.create_input_topic("input")
    out = driver.create_output_topic("result")
    add_ints(data, 10, 11, 12, 13, 14, 15)
    driver.process_all_available()
    check_answer(out, "eventTime", *[(v,) for v in range(10, 16)])
    driver.assert_num_state_rows("result", total=6, updated=6, dropped_by_watermark=0)
    add_ints(data, 25)                               # Advance watermark to 15 seconds
    driver.process_all_available()
    check_new_answer(out, "eventTime", (25,))
    # State is cleaned if the flag is set, and not cleaned otherwise
    if flag:
        driver.assert_num_state_rows("result", total=1, updated=1, dropped_by_watermark=0)
    else:
        driver.assert_num_state_rows("result", total=7, updated=1, dropped_by_watermark=0)


class DroppedDuplicates:
    """The suite's assertStateOperatorCustomMetric("numDroppedDuplicateRows", n): the first
    operator's custom metric summed over the batches since the previous check."""

    def __init__(self, driver, output: str) -> None:
        self._driver, self._output, self._seen = driver, output, 0

    def since_last_check(self) -> int:
        batches = [b for b in self._driver.batches if b.output == self._output]
        new, self._seen = batches[self._seen:], len(batches)
        return sum(int(b.state_operators[0]["customMetrics"]["numDroppedDuplicateRows"])
                   for b in new)


# StreamingDeduplicationSuite: "SPARK-35880: custom metric numDroppedDuplicateRows in state
# operator progress"
def test_spark_35880_custom_metric_num_dropped_duplicate_rows(topology_driver, spark):
    names = Feature.STATE_STORE_READS in supported_features(spark)  # 4.0+
    driver = topology_driver(dedup_of("_1 STRING, _2 INT", "_1", repeat=0))
    data = driver.create_input_topic("input")
    out = driver.create_output_topic("result")
    dropped_duplicates = DroppedDuplicates(driver, "result")
    for added, expected, dropped in [([("a", 1)], [("a", 1)], 0),
                                     ([("a", 2), ("b", 3)], [("b", 3)], 1),
                                     ([("a", 5), ("b", 2), ("c", 9)], [("c", 9)], 2)]:
        data.pipe_value_list(added)
        driver.process_all_available()
        check_last_batch(out, "_1 _2", *expected)
        assert dropped_duplicates.since_last_check() == dropped
    # not in the suite: the driver names those rows, checked against the metric per batch
    assert not names or [(d.batch_id, d.record.value) for d in driver.duplicate_records("result")] == [
        (1, {"_1": "a", "_2": 2}), (2, {"_1": "a", "_2": 5}), (2, {"_1": "b", "_2": 2})]

    # with watermark
    driver = topology_driver(dedup_with_watermark)
    data = driver.create_input_topic("input")
    out = driver.create_output_topic("result")
    dropped_duplicates = DroppedDuplicates(driver, "result")
    add_ints(data, *TEN_TO_FIFTEEN_FIVE_TIMES)
    driver.process_all_available()
    check_answer(out, "eventTime", *[(v,) for v in range(10, 16)])
    assert dropped_duplicates.since_last_check() == 24
    for added, expected, dropped in [((14,), [], 1),
                                     ((25,), [(25,)], 0),     # watermark 15 s
                                     ((10,), [], 0),          # less than the watermark
                                     ((26, 26), [(26,)], 1)]:
        add_ints(data, *added)
        driver.process_all_available()
        check_new_answer(out, "eventTime", *expected)
        assert dropped_duplicates.since_last_check() == dropped
    assert not names or len(driver.duplicate_records("result")) == 24 + 1 + 1


NEEDS_COLLATIONS = pytest.mark.skipif(SPARK < (4, 0), reason="collations need Spark 4.0")


# StreamingDeduplicationSuite: "collation aware deduplication"
@NEEDS_COLLATIONS
def test_collation_aware_deduplication(topology_driver):
    def topology(t: Topology) -> None:
        pairs = t.input("input", schema="_1 STRING, _2 INT")
        t.output("result", pairs.selectExpr("try_cast(_1 AS STRING COLLATE UTF8_BINARY) AS str",
                                            "_2 AS int")
                 .dropDuplicates(["str"]))

    driver = topology_driver(topology)
    data = driver.create_input_topic("input")
    out = driver.create_output_topic("result")
    for added, expected, total, updated in [(("a", 1), [("a", 1)], 1, 1),
                                            (("a", 2), [], 1, 0),        # Dropped
                                            (("ä", 1), [("ä", 1)], 2, 1)]:
        data.pipe_input(added)
        driver.process_all_available()
        check_last_batch(out, "str int", *expected)
        driver.assert_num_state_rows("result", total=total, updated=updated,
                                     dropped_by_watermark=0)


# StreamingDeduplicationSuite: "non-binary collation aware deduplication not supported"
@NEEDS_COLLATIONS
def test_non_binary_collation_aware_deduplication_not_supported(topology_driver):
    def topology(t: Topology) -> None:
        values = t.input("input", schema="value STRING")
        t.output("result", values.selectExpr("try_cast(value AS STRING COLLATE UTF8_LCASE) AS str")
                 .dropDuplicates(["str"]))

    driver = topology_driver(topology)
    driver.create_input_topic("input").pipe_input(("a",))
    with pytest.raises(StreamingQueryFailedError) as caught:   # StreamingQueryException
        driver.process_all_available()
    assert "STATE_STORE_UNSUPPORTED_OPERATION_BINARY_INEQUALITY" in str(caught.value)
