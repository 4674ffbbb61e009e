"""Late records of queries holding a transformWithState operator: its own event-time
filter (EventTime time mode only), and drops by the operators before it (the IoT job's
``dropDuplicatesWithinWatermark``), each checked against Spark's per-operator counts."""

from __future__ import annotations

import pytest
from pyspark.sql import functions as F

from pyspark_streamtest import Feature, Topology
from tests.helpers import at
from tests.spark.test_late_records_computed import click, json_topic, parsed

ROCKSDB = {
    "spark.sql.streaming.stateStore.providerClass":
        "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider",
}
METHODS = [
    pytest.param("transformWithState",
                 marks=pytest.mark.streamtest_requires(Feature.TRANSFORM_WITH_STATE)),
    pytest.param("transformWithStateInPandas",
                 marks=pytest.mark.streamtest_requires(Feature.TRANSFORM_WITH_STATE_IN_PANDAS)),
]


def _counter(row_based: bool):
    """Emits (user, rows seen in this call) for every key it is called for."""
    import pandas as pd
    from pyspark.sql import Row
    from pyspark.sql.streaming.stateful_processor import StatefulProcessor

    class Seen(StatefulProcessor):
        def init(self, handle):
            self.calls = handle.getValueState("calls", "calls LONG")

        def handleInputRows(self, key, rows, timerValues):  # noqa: N802, N803 (Spark API)
            seen = sum(1 if row_based else len(frame) for frame in rows)
            self.calls.update(((self.calls.get()[0] if self.calls.exists() else 0) + 1,))
            if row_based:
                yield Row(user=key[0], seen=seen)
            else:
                yield pd.DataFrame({"user": [key[0]], "seen": [seen]})

        def close(self):
            pass

    return Seen()


def _apply(frame, method: str, time_mode: str):
    return getattr(frame.groupBy("user"), method)(
        _counter(method == "transformWithState"), "user STRING, seen LONG", "Update", time_mode)


def _plain(method: str, time_mode: str, dedup: bool = False):
    def topology(t: Topology) -> None:
        clicks = t.input("clicks", schema="user STRING, ts TIMESTAMP", timestamp_column="ts")
        marked = clicks.withWatermark("ts", "5 seconds")
        if dedup:
            marked = marked.dropDuplicatesWithinWatermark(["user"])
        t.output("seen", _apply(marked, method, time_mode), output_mode="update")

    return topology


def _late_and_on_time(driver):
    clicks = driver.create_input_topic("clicks")
    clicks.pipe_input({"user": "a"}, timestamp=at(30))
    driver.process_all_available()  # watermark 25 s
    clicks.pipe_input({"user": "b"}, timestamp=at(25))  # at the watermark: late
    clicks.pipe_input({"user": "c"}, timestamp=at(26))
    return driver.process_all_available()


@pytest.mark.parametrize("method", METHODS)
def test_event_time_mode_drops_rows_at_or_behind_the_watermark(topology_driver, method):
    driver = topology_driver(_plain(method, "EventTime"), sql_conf=ROCKSDB)
    ran = _late_and_on_time(driver)
    late = driver.late_records("seen")
    assert [(x.record.value["user"], x.batch_id, x.watermark, x.operator_id) for x in late] == [
        ("b", ran[0].batch_id, at(25), 0)]
    assert late[0].operator.startswith("transformWithState")
    assert ran[0].num_rows_dropped_by_watermark == 1
    assert ran[0].late_records == tuple(late)
    assert driver.create_output_topic("seen").read_values_to_list()[1:] == [
        {"user": "c", "seen": 1}]


@pytest.mark.parametrize("time_mode", ["ProcessingTime", "None"])
@pytest.mark.parametrize("method", METHODS)
def test_other_time_modes_keep_late_rows(topology_driver, method, time_mode):
    """Spark filters late rows in transformWithState only in the EventTime mode: the row
    behind the watermark reaches the processor, and no record is late."""
    driver = topology_driver(_plain(method, time_mode), sql_conf=ROCKSDB)
    ran = _late_and_on_time(driver)
    assert driver.late_records("seen") == []
    assert ran[0].num_rows_dropped_by_watermark == 0
    assert sorted(v["user"] for v in driver.create_output_topic("seen").read_values_to_list()
                  ) == ["a", "b", "c"]


@pytest.mark.parametrize("time_mode", ["EventTime", "ProcessingTime"])
@pytest.mark.parametrize("method", METHODS)
def test_a_drop_before_the_processor_names_that_operator(topology_driver, method, time_mode):
    """The IoT job's shape: dropDuplicatesWithinWatermark before the processor. Spark
    lists the processor first (operator 0) and the dedup second; the dedup drops the late
    row, so it never reaches the processor."""
    driver = topology_driver(_plain(method, time_mode, dedup=True), sql_conf=ROCKSDB)
    ran = _late_and_on_time(driver)
    (late,) = driver.late_records("seen")
    assert (late.record.value["user"], late.operator, late.operator_id, late.watermark) == (
        "b", "dedupeWithinWatermark", 1, at(25))
    assert [op["numRowsDroppedByWatermark"] for op in ran[0].state_operators] == [0, 1]


def _parsed_event_time(method: str):
    def topology(t: Topology) -> None:
        clicks = parsed(t, "clicks", "user STRING, url STRING, at TIMESTAMP")
        marked = clicks.withWatermark("at", "5 seconds").where(F.col("url") != "/health")
        t.output("seen", _apply(marked, method, "EventTime"), output_mode="update")

    return topology


@pytest.mark.parametrize("method", METHODS)
def test_event_time_parsed_from_a_kafka_value_is_evaluated(topology_driver, method):
    """The event time comes from the JSON value, so the driver evaluates the plan below
    the processor over the piped records (the filter applies) and checks Spark's count."""
    driver = topology_driver(_parsed_event_time(method), sql_conf=ROCKSDB)
    clicks = json_topic(driver, "clicks")
    clicks.pipe_input("a", click("a", 30))
    driver.process_all_available()  # watermark 25 s
    clicks.pipe_input("b", click("b", 20))
    clicks.pipe_input("h", click("h", 3, url="/health"))  # filtered out first: not late
    clicks.pipe_input("c", click("c", 27))
    ran = driver.process_all_available()
    late = driver.late_records("seen")
    assert [(x.record.key, x.batch_id, x.operator_id) for x in late] == [
        ("b", ran[0].batch_id, 0)]
    assert ran[0].num_rows_dropped_by_watermark == 1
