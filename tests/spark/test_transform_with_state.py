"""transformWithState (row-based, 4.1+) and transformWithStateInPandas (4.0+) under the driver:
state across batches, processing-time timers fired by the test's clock."""

from __future__ import annotations

from datetime import timedelta

import pytest

from pyspark_streamtest import Feature, Topology
from tests.helpers import T0, at

ROCKSDB = {
    "spark.sql.streaming.stateStore.providerClass":
        "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider",
}
PROVIDER = "spark.sql.streaming.stateStore.providerClass"
OUTPUT_SCHEMA = "user STRING, kind STRING, total LONG, at_ms LONG"


def _counting_processor(row_based: bool):
    """Counts clicks per user; 5 s of processing time after a user's latest click, a
    timer emits ("idle", total) for that user."""
    import pandas as pd
    from pyspark.sql import Row
    from pyspark.sql.streaming.stateful_processor import StatefulProcessor

    def rows_out(user, kind, total, at_ms):
        if row_based:
            yield Row(user=user, kind=kind, total=total, at_ms=at_ms)
        else:
            yield pd.DataFrame({"user": [user], "kind": [kind], "total": [total],
                                "at_ms": [at_ms]})

    class ClickCounter(StatefulProcessor):
        def init(self, handle):
            self.handle = handle
            self.total = handle.getValueState("total", "total LONG")

        def handleInputRows(self, key, rows, timerValues):  # noqa: N802, N803 (Spark API)
            seen = sum(1 if row_based else len(frame) for frame in rows)
            total = (self.total.get()[0] if self.total.exists() else 0) + seen
            self.total.update((total,))
            for old in list(self.handle.listTimers()):
                self.handle.deleteTimer(old)
            now = timerValues.getCurrentProcessingTimeInMs()
            self.handle.registerTimer(now + 5000)
            yield from rows_out(key[0], "count", total, now)

        def handleExpiredTimer(self, key, timerValues, expiredTimerInfo):  # noqa: N802, N803
            total = self.total.get()[0]
            yield from rows_out(key[0], "idle", total, timerValues.getCurrentProcessingTimeInMs())

        def close(self):
            pass

    return ClickCounter()


def _topology(method: str):
    def topology(t: Topology) -> None:
        clicks = t.input("clicks", schema="user STRING, ts TIMESTAMP", timestamp_column="ts")
        counted = getattr(clicks.groupBy("user"), method)(
            _counting_processor(row_based=method == "transformWithState"),
            OUTPUT_SCHEMA,
            "Update",
            "ProcessingTime",
        )
        t.output("activity", counted, output_mode="update")

    return topology


def _run_and_check(topology_driver, spark, method: str) -> None:
    provider_before = spark.conf.get(PROVIDER, None)
    driver = topology_driver(_topology(method), sql_conf=ROCKSDB)
    assert spark.conf.get(PROVIDER, None) == provider_before  # scoped to the driver's queries
    clicks = driver.create_input_topic("clicks")
    activity = driver.create_output_topic("activity")
    t0_ms = int(T0.timestamp() * 1000)

    clicks.pipe_value_list([{"user": "a"}, {"user": "a"}, {"user": "b"}], start_timestamp=at(0), advance=timedelta(0))
    driver.process_all_available()
    assert sorted(activity.read_values_to_list(), key=lambda v: v["user"]) == [
        {"user": "a", "kind": "count", "total": 2, "at_ms": t0_ms},
        {"user": "b", "kind": "count", "total": 1, "at_ms": t0_ms},
    ]

    driver.advance_wall_clock(timedelta(seconds=2))
    clicks.pipe_input({"user": "b"}, timestamp=at(2))
    driver.process_all_available()
    assert activity.read_values_to_list() == [
        {"user": "b", "kind": "count", "total": 2, "at_ms": t0_ms + 2000},
    ]

    # a's timer is due at 5 s, b's (re-registered) at 7 s: each fires in the first batch
    # whose processing time reaches it, and nothing fires before.
    driver.advance_wall_clock(timedelta(seconds=2))
    assert activity.is_empty()
    driver.advance_wall_clock(timedelta(seconds=1))
    assert [(r.value, r.processing_time) for r in activity.read_records_to_list()] == [
        ({"user": "a", "kind": "idle", "total": 2, "at_ms": t0_ms + 5000}, at(5)),
    ]
    driver.advance_wall_clock(timedelta(seconds=2))
    assert activity.read_values_to_list() == [
        {"user": "b", "kind": "idle", "total": 2, "at_ms": t0_ms + 7000},
    ]
    driver.advance_wall_clock(timedelta(seconds=3))  # timers fire once
    assert activity.is_empty()


@pytest.mark.streamtest_requires(Feature.TRANSFORM_WITH_STATE_IN_PANDAS)
def test_transform_with_state_in_pandas_counts_and_fires_timers(topology_driver, spark):
    _run_and_check(topology_driver, spark, "transformWithStateInPandas")


@pytest.mark.streamtest_requires(Feature.TRANSFORM_WITH_STATE)
def test_transform_with_state_counts_and_fires_timers(topology_driver, spark):
    _run_and_check(topology_driver, spark, "transformWithState")
