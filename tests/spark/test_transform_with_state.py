"""transformWithState (row-based, 4.1+) and transformWithStateInPandas (4.0+) under the driver:
state across batches, processing-time timers fired by the test's clock."""

from __future__ import annotations

from datetime import timedelta

import pytest

from pyspark_streamtest import Feature, Topology
from pyspark_streamtest.state import StateVariableDescription
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
    # The state variable, read through Spark's state data source.
    assert driver.get_state_store("activity", state_var="total").to_dict() == {
        "a": {"total": 2}, "b": {"total": 2}}
    # describe() names the operator; its state lives in state variables, not one schema.
    (operator,) = driver.describe().query("activity").operators
    assert operator.kind.startswith("transformWithState")
    assert (operator.key_schema, operator.value_schema) == (None, None)
    assert (operator.time_mode, operator.timers) == ("ProcessingTime", "processing time")
    assert operator.state_variables == (StateVariableDescription(
        "total", "value", "struct<user:string>", "struct<total:bigint>"),)
    assert "state variable 'total': value state" in str(driver.describe())


@pytest.mark.streamtest_requires(Feature.TRANSFORM_WITH_STATE_IN_PANDAS)
def test_transform_with_state_in_pandas_counts_and_fires_timers(topology_driver, spark):
    _run_and_check(topology_driver, spark, "transformWithStateInPandas")


@pytest.mark.streamtest_requires(Feature.TRANSFORM_WITH_STATE)
def test_transform_with_state_counts_and_fires_timers(topology_driver, spark):
    _run_and_check(topology_driver, spark, "transformWithState")


def _event_time_processor():
    """Per user: remembers the latest event time; an event-time timer 10 s after it emits
    ("idle", latest) once the watermark passes it. Keeps a TTL'd value of the last url."""
    import pandas as pd
    from pyspark.sql.streaming.stateful_processor import StatefulProcessor

    class IdleAfter10s(StatefulProcessor):
        def init(self, handle):
            self.handle = handle
            self.latest = handle.getValueState("latest", "ms LONG")

        def handleInputRows(self, key, rows, timerValues):  # noqa: N802, N803 (Spark API)
            newest = max(int(ts.timestamp() * 1000) for frame in rows for ts in frame["ts"])
            if self.latest.exists():
                newest = max(newest, self.latest.get()[0])
                for old in list(self.handle.listTimers()):
                    self.handle.deleteTimer(old)
            self.latest.update((newest,))
            self.handle.registerTimer(newest + 10_000)
            yield pd.DataFrame({"user": [key[0]], "kind": ["seen"], "at_ms": [newest]})

        def handleExpiredTimer(self, key, timerValues, expiredTimerInfo):  # noqa: N802, N803
            yield pd.DataFrame({"user": [key[0]], "kind": ["idle"],
                                "at_ms": [expiredTimerInfo.getExpiryTimeInMs()]})
            self.latest.clear()

        def handleInitialState(self, key, initialState, timerValues):  # noqa: N802, N803
            newest = int(initialState["ms"].iloc[0])
            self.latest.update((newest,))
            self.handle.registerTimer(newest + 10_000)

        def close(self):
            pass

    return IdleAfter10s()


def event_time_topology(t: Topology) -> None:
    clicks = t.input("clicks", schema="user STRING, ts TIMESTAMP", timestamp_column="ts")
    initial = t.spark.createDataFrame(
        [("carl", int(at(2).timestamp() * 1000))], "user STRING, ms LONG").groupBy("user")
    t.output("idle", clicks.withWatermark("ts", "5 seconds").groupBy("user")
             .transformWithStateInPandas(_event_time_processor(),
                                         "user STRING, kind STRING, at_ms LONG",
                                         "Update", "EventTime", initialState=initial),
             output_mode="update")


@pytest.mark.streamtest_requires(Feature.TRANSFORM_WITH_STATE_IN_PANDAS)
def test_event_time_timers_and_initial_state(topology_driver):
    driver = topology_driver(event_time_topology, sql_conf=ROCKSDB)
    clicks = driver.create_input_topic("clicks")
    idle = driver.create_output_topic("idle")
    ms = lambda s: int(at(s).timestamp() * 1000)  # noqa: E731

    clicks.pipe_input({"user": "a"}, timestamp=at(1))
    clicks.pipe_input({"user": "a"}, timestamp=at(4))
    driver.process_all_available()
    assert idle.read_values_to_list() == [{"user": "a", "kind": "seen", "at_ms": ms(4)}]

    # carl's timer comes from the initial state (2 s + 10 s = 12 s); a's is at 14 s.
    # A timer fires in the first batch whose watermark has reached it.
    driver.advance_watermark_to(at(12) - timedelta(milliseconds=1))
    assert idle.is_empty()
    driver.advance_watermark_to(at(12))
    assert idle.read_values_to_list() == [{"user": "carl", "kind": "idle", "at_ms": ms(12)}]
    driver.advance_watermark_to(at(14))
    assert idle.read_values_to_list() == [{"user": "a", "kind": "idle", "at_ms": ms(14)}]
    driver.advance_watermark_to(at(60))
    assert idle.is_empty()


def _ttl_processor():
    """Remembers each user's last url for 5 s of processing time (state TTL); every
    input row reports whether a remembered url was still there."""
    import pandas as pd
    from pyspark.sql.streaming.stateful_processor import StatefulProcessor

    class LastUrl(StatefulProcessor):
        def init(self, handle):
            self.last = handle.getValueState("last", "url STRING", 5000)

        def handleInputRows(self, key, rows, timerValues):  # noqa: N802, N803 (Spark API)
            remembered = self.last.get()[0] if self.last.exists() else None
            urls = [u for frame in rows for u in frame["url"]]
            self.last.update((urls[-1],))
            yield pd.DataFrame({"user": [key[0]], "remembered": [remembered]})

        def close(self):
            pass

    return LastUrl()


def ttl_topology(t: Topology) -> None:
    clicks = t.input("clicks", schema="user STRING, url STRING")
    t.output("seen", clicks.groupBy("user").transformWithStateInPandas(
        _ttl_processor(), "user STRING, remembered STRING", "Update", "ProcessingTime"),
        output_mode="update")


@pytest.mark.streamtest_requires(Feature.TRANSFORM_WITH_STATE_IN_PANDAS)
def test_state_ttl_expires_by_processing_time(topology_driver):
    driver = topology_driver(ttl_topology, sql_conf=ROCKSDB, trigger_interval=timedelta(seconds=5))
    clicks = driver.create_input_topic("clicks")
    seen = driver.create_output_topic("seen")

    def click(url: str) -> object:
        clicks.pipe_input({"user": "a", "url": url})
        driver.process_all_available()
        return seen.read_values_to_list()[-1]["remembered"]

    # A value written at time w with TTL 5 s is gone in batches at w + 5 s and later.
    assert click("/1") is None  # at T0: nothing yet
    driver.advance_wall_clock(timedelta(milliseconds=4999))
    assert click("/2") == "/1"  # T0 + 4.999 s: still there
    driver.advance_wall_clock(timedelta(seconds=5))
    assert click("/3") is None  # T0 + 9.999 s: /2 (written at T0 + 4.999 s) expired at 9.999


def _list_and_map_processor():
    """Keeps every url a user clicked (list state), a count per url (map state), and a
    processing-time timer a minute after the latest click."""
    import pandas as pd
    from pyspark.sql.streaming.stateful_processor import StatefulProcessor

    class Collector(StatefulProcessor):
        def init(self, handle):
            self.handle = handle
            self.urls = handle.getListState("urls", "url STRING")
            self.counts = handle.getMapState("counts", "url STRING", "n LONG")

        def handleInputRows(self, key, rows, timerValues):  # noqa: N802, N803 (Spark API)
            for frame in rows:
                for url in frame["url"]:
                    self.urls.appendValue((url,))
                    n = self.counts.getValue((url,))[0] if self.counts.containsKey((url,)) else 0
                    self.counts.updateValue((url,), (n + 1,))
            self.handle.registerTimer(timerValues.getCurrentProcessingTimeInMs() + 60_000)
            yield pd.DataFrame({"user": [key[0]]})

        def close(self):
            pass

    return Collector()


def collector_topology(t: Topology) -> None:
    clicks = t.input("clicks", schema="user STRING, url STRING")
    t.output("seen", clicks.groupBy("user").transformWithStateInPandas(
        _list_and_map_processor(), "user STRING", "Update", "ProcessingTime"),
        output_mode="update")


@pytest.mark.streamtest_requires(Feature.TRANSFORM_WITH_STATE_IN_PANDAS)
def test_list_map_and_timer_state_views(topology_driver):
    driver = topology_driver(collector_topology, sql_conf=ROCKSDB)
    driver.create_input_topic("clicks").pipe_value_list([("a", "/"), ("a", "/x"), ("a", "/")])
    driver.process_all_available()
    assert driver.get_state_store("seen", state_var="urls").get_all("a") == [
        {"url": "/"}, {"url": "/x"}, {"url": "/"}]
    counts = driver.get_state_store("seen", state_var="counts").get_all("a")
    assert sorted(counts, key=str) == [
        {"user_map_key": {"url": "/"}, "user_map_value": {"n": 2}},
        {"user_map_key": {"url": "/x"}, "user_map_value": {"n": 1}},
    ]
    t0_ms = int(T0.timestamp() * 1000)
    assert driver.get_state_store("seen", timers=True).to_dict() == {
        "a": {"expiration_timestamp_ms": t0_ms + 60_000}}
