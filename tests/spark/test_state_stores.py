"""State store views and describe(), read through Spark's state data source."""

from __future__ import annotations

import pandas as pd
import pytest
from pyspark.sql import functions as F
from pyspark.sql.streaming.state import GroupStateTimeout

from pyspark_streamtest import Feature, StateStoreError, Topology, supported_features
from pyspark_streamtest.core.features import UnsupportedFeatureError
from pyspark_streamtest.state import Window
from tests.helpers import at, clicks_per_user
from tests.spark.test_stateful_operators import ad_clicks, dedup

needs_state_reads = pytest.mark.streamtest_requires(Feature.STATE_STORE_READS)


def visits(t: Topology) -> None:
    clicks = t.input("clicks", schema="user STRING, url STRING, ts TIMESTAMP",
                     timestamp_column="ts")
    t.output("visits", clicks.groupBy("user", "url").agg(F.count("*").alias("n")),
             output_mode="update")


@needs_state_reads
def test_key_value_store_reads_state_now_and_as_of_earlier_batches(topology_driver):
    driver = topology_driver(visits)
    clicks = driver.create_input_topic("clicks")
    assert len(driver.get_key_value_store("visits")) == 0  # no batch yet: empty
    clicks.pipe_value_list([{"user": "a", "url": "/"}, {"user": "a", "url": "/x"},
                            {"user": "b", "url": "/"}])
    driver.process_all_available()
    clicks.pipe_value_list([{"user": "a", "url": "/"}, {"user": "c", "url": "/y"}])
    driver.process_all_available()

    store = driver.get_key_value_store("visits")
    assert store.batch_id == 1
    # Values are the aggregation's buffer as Spark names it (count), not the alias (n).
    assert store.to_dict() == {("a", "/"): {"count": 2}, ("a", "/x"): {"count": 1},
                               ("b", "/"): {"count": 1}, ("c", "/y"): {"count": 1}}
    assert store.get(("a", "/")) == {"count": 2}
    assert store.get({"user": "c", "url": "/y"}) == {"count": 1}
    assert store.get(("z", "/")) is None and ("z", "/") not in store
    assert [e.key for e in store.prefix("a")] == [("a", "/"), ("a", "/x")]
    assert [e.key for e in store.range(("a", "/x"), ("b", "/"))] == [("a", "/x"), ("b", "/")]
    assert len(store) == 4

    before = driver.get_key_value_store("visits", batch_id=0)
    assert before.to_dict() == {("a", "/"): {"count": 1}, ("a", "/x"): {"count": 1},
                                ("b", "/"): {"count": 1}}

    # Reading state changes nothing: the query goes on from where it was.
    clicks.pipe_input({"user": "a", "url": "/"})
    ran = driver.process_all_available()
    assert ran[0].output_values == [{"user": "a", "url": "/", "n": 3}]


@needs_state_reads
def test_window_store_holds_open_windows_until_the_watermark_evicts_them(topology_driver):
    driver = topology_driver(clicks_per_user)
    clicks = driver.create_input_topic("clicks")
    for second, user in [(1, "a"), (7, "a"), (12, "a"), (3, "b")]:
        clicks.pipe_input({"user": user, "url": "/"}, timestamp=at(second))
    driver.process_all_available()

    windows = driver.get_window_store("counts")
    assert windows.fetch("a") == [(Window(at(0), at(10)), {"count": 2}),
                                  (Window(at(10), at(20)), {"count": 1})]
    assert windows.fetch("a", time_from=at(5)) == [(Window(at(10), at(20)), {"count": 1})]
    assert windows.get_all("b") == [{"count": 1}]
    assert windows.windows() == [Window(at(0), at(10)), Window(at(10), at(20))]
    with pytest.raises(ValueError, match="key 'a' holds 2 entries"):
        windows.get("a")
    with pytest.raises(ValueError, match=r"to_dict\(\) needs one entry per key, but key 'a' "
                                         r"holds 2 .*use all\(\) for every entry"):
        windows.to_dict()

    clicks.pipe_input({"user": "b", "url": "/"}, timestamp=at(25))  # watermark -> 15
    driver.process_all_available()
    after = driver.get_window_store("counts")
    assert [(e.key, e.window) for e in after.all()] == [
        ("a", Window(at(10), at(20))), ("b", Window(at(20), at(30)))]


def sessions(t: Topology) -> None:
    clicks = t.input("clicks", schema="user STRING, ts TIMESTAMP", timestamp_column="ts")
    t.output("sessions", clicks.withWatermark("ts", "10 seconds")
             .groupBy(F.session_window("ts", "5 seconds"), "user").count())


@needs_state_reads
def test_session_store_shows_each_open_session(topology_driver):
    driver = topology_driver(sessions)
    clicks = driver.create_input_topic("clicks")
    clicks.pipe_value_list([{"user": "a"}] * 2, start_timestamp=at(1), advance=at(3) - at(0))
    clicks.pipe_input({"user": "a"}, timestamp=at(20))
    ran = driver.process_all_available()
    # Batch 0 holds both sessions; the no-data batch after it (watermark 20 - 10 = 10 s)
    # emits and evicts the one that ended at 9 s.
    assert [b.batch_id for b in ran] == [0, 1]
    store = driver.get_session_store("sessions", batch_id=0)
    assert store.fetch("a") == [(Window(at(1), at(9)), {"count": 2}),
                                (Window(at(20), at(25)), {"count": 1})]
    assert driver.get_session_store("sessions").fetch("a") == [
        (Window(at(20), at(25)), {"count": 1})]


@needs_state_reads
def test_dedup_and_join_stores(topology_driver):
    driver = topology_driver(dedup)
    events = driver.create_input_topic("events")
    events.pipe_value_list([{"id": "a"}, {"id": "a"}, {"id": "b"}], start_timestamp=at(1))
    driver.process_all_available()
    store = driver.get_key_value_store("unique")
    assert store.items() == [(("a", at(1)), None), (("b", at(1)), None)]

    driver = topology_driver(ad_clicks)
    driver.create_input_topic("impressions").pipe_value_list(
        [{"ad": "x"}, {"ad": "x"}, {"ad": "y"}], start_timestamp=at(1))
    driver.create_input_topic("clicks").pipe_input({"click_ad": "z"}, timestamp=at(2))
    driver.process_all_available()
    left = driver.get_join_store("clicked_ads", "left")
    assert left.get_all("x") == [{"ad": "x", "shown": at(1)}] * 2
    assert left.keys() == ["x", "y"]
    assert driver.get_join_store("clicked_ads", "right").to_dict() == {
        "z": {"click_ad": "z", "clicked": at(2)}}
    with pytest.raises(StateStoreError, match="is a stream-stream join; read one side with "
                                              "get_join_store"):
        driver.get_state_store("clicked_ads")
    # describe() gives each side's schemas, as get_join_store reads its rows
    (join,) = driver.describe().query("clicked_ads").operators
    assert join.kind == "symmetricHashJoin" and (join.key_schema, join.value_schema) == (None, None)
    assert str(driver.describe().query("clicked_ads")).splitlines()[-4:] == [
        "    left key:    struct<field0:string>",
        "    left value:  struct<ad:string,shown:timestamp>",
        "    right key:   struct<field0:string>",
        "    right value: struct<click_ad:string,clicked:timestamp>",
    ]


def _count_with_timeout(key, frames, state):
    total = (state.get[0] if state.exists else 0) + sum(len(f) for f in frames)
    state.update((total,))
    state.setTimeoutTimestamp(state.getCurrentWatermarkMs() + 60_000)
    yield pd.DataFrame({"user": [key[0]], "total": [total]})


def grouped_state(t: Topology) -> None:
    clicks = t.input("clicks", schema="user STRING, ts TIMESTAMP", timestamp_column="ts")
    t.output("totals", clicks.withWatermark("ts", "1 second").groupBy("user")
             .applyInPandasWithState(_count_with_timeout, "user STRING, total LONG",
                                     "total LONG", "Update", GroupStateTimeout.EventTimeTimeout),
             output_mode="update")


@needs_state_reads
def test_apply_in_pandas_with_state_store(topology_driver):
    driver = topology_driver(grouped_state)
    driver.create_input_topic("clicks").pipe_value_list(
        [{"user": "a"}, {"user": "a"}, {"user": "b"}], start_timestamp=at(10))
    driver.process_all_available()
    assert driver.get_key_value_store("totals").to_dict() == {"a": {"total": 2},
                                                              "b": {"total": 1}}
    # The timeout set in batch 0, whose watermark was the epoch, is 0 + 60 s: long past
    # by batch 1 (watermark 10 - 1 = 9 s), so it fires there and the function, called
    # again without data, sets a new one at 9 s + 60 s.
    raw = driver.get_state_store("totals", batch_id=0)
    assert raw.get("a") == {"groupState": {"total": 2}, "timeoutTimestamp": 60_000}
    t9_plus_60 = int(at(69).timestamp() * 1000)
    assert driver.get_state_store("totals").get("a") == {
        "groupState": {"total": 2}, "timeoutTimestamp": t9_plus_60}


@needs_state_reads
def test_state_errors_name_the_problem(topology_driver):
    def stateless(t: Topology) -> None:
        t.output("plain", t.input("x", schema="v STRING"))

    driver = topology_driver(stateless)
    driver.create_input_topic("x").pipe_input({"v": "1"})
    driver.process_all_available()
    with pytest.raises(StateStoreError, match="output 'plain' has no stateful operator: its "
                                              "query is stateless"):
        driver.get_state_store("plain")

    driver = topology_driver(visits)
    driver.create_input_topic("clicks").pipe_input({"user": "a", "url": "/"})
    driver.process_all_available()
    with pytest.raises(StateStoreError, match=r"has no stateful operator 3; its operators are "
                                              r"0 \(stateStoreSave\)"):
        driver.get_state_store("visits", operator_id=3)
    with pytest.raises(StateStoreError, match="has run batches up to 0; there is no state as "
                                              "of batch 5 yet"):
        driver.get_state_store("visits", batch_id=5)
    with pytest.raises(StateStoreError, match="has no time window; use get_state_store"):
        driver.get_window_store("visits")
    with pytest.raises(StateStoreError, match="has no store 'other'; its stores are 'default'"):
        driver.get_state_store("visits", store_name="other")


def test_state_reads_need_the_state_data_source(topology_driver, spark):
    # No skip: on PySpark 3.5 the typed error is the behaviour under test.
    driver = topology_driver(visits)
    driver.create_input_topic("clicks").pipe_input({"user": "a", "url": "/"})
    driver.process_all_available()
    if Feature.STATE_STORE_READS in supported_features(spark):
        assert driver.get_key_value_store("visits").to_dict() == {("a", "/"): {"count": 1}}
    else:
        with pytest.raises(UnsupportedFeatureError, match=r"reading state stores .* needs "
                                                          "PySpark 4.0 or later"):
            driver.get_key_value_store("visits")


def test_describe_lists_watermarks_and_stateful_operators(topology_driver, spark):
    driver = topology_driver(clicks_per_user)
    assert str(driver.describe()) == (
        "Topology\n"
        "Query 'counts' (sink, output mode append)\n"
        "  watermarks: ts delayed by 10 seconds\n"
        "  stateful operators: not known before the first batch (Spark plans them then)"
    )
    driver.create_input_topic("clicks").pipe_input({"user": "a", "url": "/"}, timestamp=at(1))
    driver.process_all_available()
    query = driver.describe().query("counts")
    assert [(op.operator_id, op.kind) for op in query.operators] == [(0, "stateStoreSave")]
    if Feature.STATE_STORE_READS in supported_features(spark):
        assert str(query).splitlines()[2:] == [
            "  operator 0: stateStoreSave (stores: default)",
            "    key:   struct<window:struct<start:timestamp,end:timestamp>,user:string>",
            "    value: struct<count:bigint>",
        ]


@needs_state_reads
def test_windowed_state_reads_through_every_verb(topology_driver):
    """A window in a key reads as a Window (hashable), so generic and key-value reads of
    windowed and session aggregations work with every view method; entries unpack."""
    driver = topology_driver(clicks_per_user)
    clicks = driver.create_input_topic("clicks")
    for second, user in [(1, "a"), (7, "a"), (12, "a"), (3, "b")]:
        clicks.pipe_input({"user": user, "url": "/"}, timestamp=at(second))
    driver.process_all_available()
    expected = {
        (Window(at(0), at(10)), "a"): {"count": 2},
        (Window(at(0), at(10)), "b"): {"count": 1},
        (Window(at(10), at(20)), "a"): {"count": 1},
    }
    for store in (driver.get_state_store("counts"), driver.get_key_value_store("counts")):
        assert store.to_dict() == expected
        assert store.keys() == list(expected)
        assert [(key, value) for key, value in store.all()] == list(expected.items())
        assert store.get((Window(at(0), at(10)), "a")) == {"count": 2}
        assert store.get(({"start": at(0), "end": at(10)}, "a")) == {"count": 2}  # dict works
        assert (Window(at(10), at(20)), "a") in store
        assert store.prefix(Window(at(0), at(10))) == store.all()[:2]
        assert store.range((Window(at(10), at(20)), ""), None) == store.all()[2:]
    window_store = driver.get_window_store("counts")
    assert [(key, value) for key, value in window_store.all()] == [
        ("a", {"count": 2}), ("a", {"count": 1}), ("b", {"count": 1})]

    driver = topology_driver(sessions)
    driver.create_input_topic("clicks").pipe_input({"user": "a"}, timestamp=at(1))
    driver.process_all_available()
    (entry,) = driver.get_state_store("sessions").all()
    key, value = entry
    assert key == ("a", at(1))
    assert value == {"user": "a", "session_window": {"start": at(1), "end": at(6)}, "count": 1}
    assert driver.get_state_store("sessions").to_dict() == {key: value}


def deduplicated(t: Topology) -> None:
    clicks = (t.input("clicks", schema="user STRING, ts TIMESTAMP", timestamp_column="ts")
              .withWatermark("ts", "10 seconds"))
    unique = clicks.dropDuplicatesWithinWatermark(["user", "ts"])
    t.output("sessions", unique.groupBy(F.session_window("ts", "5 seconds"), "user").count())
    t.output("windows", unique.groupBy(F.window("ts", "5 seconds"), "user").count())
    t.output("totals", clicks.dropDuplicates(["user", "ts"]).groupBy("user").count(),
             output_mode="update")


@needs_state_reads
def test_a_read_picks_the_only_operator_of_its_kind(topology_driver):
    driver = topology_driver(deduplicated)
    clicks = driver.create_input_topic("clicks")
    clicks.pipe_input({"user": "a"}, timestamp=at(1))
    clicks.pipe_input({"user": "a"}, timestamp=at(1))  # a duplicate
    driver.process_all_available()
    # A dedup before the session / window aggregation: one operator of each kind.
    assert driver.get_session_store("sessions").fetch("a") == [
        (Window(at(1), at(6)), {"count": 1})]
    assert driver.get_window_store("windows").fetch("a") == [
        (Window(at(0), at(5)), {"count": 1})]
    # Two key-value stores (the aggregation and the dedup): that one is ambiguous.
    with pytest.raises(StateStoreError, match=r"2 stateful operators: 0 \(stateStoreSave\), "
                                              r"1 \(dedupe\); pass operator_id="):
        driver.get_key_value_store("totals")
    assert driver.get_key_value_store("totals", operator_id=0).to_dict() == {"a": {"count": 1}}
