"""What describe() and the state reads show of a transformWithState(InPandas) operator:
its time mode, timers and state variables (kind, schemas, TTL), TTL'd entries read as
their value with a ``ttl_expiration``, and reads by variable name without
``operator_id``. Real queries only; Spark's own state metadata is the source."""

from __future__ import annotations

from datetime import timedelta

import pytest

from pyspark_streamtest import Feature, InvalidArgumentError, StateStoreError, Topology
from pyspark_streamtest.state import StateEntry, StateVariableDescription
from tests.helpers import T0, at

ROCKSDB = {
    "spark.sql.streaming.stateStore.providerClass":
        "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider",
}
needs_pandas_tws = pytest.mark.streamtest_requires(Feature.TRANSFORM_WITH_STATE_IN_PANDAS)
needs_row_tws = pytest.mark.streamtest_requires(Feature.TRANSFORM_WITH_STATE)


def _keeper(row_based: bool, *, ttl: bool, timers: bool):
    """Per user: the last url (value state ``last``, TTL 5 s when ``ttl``), every url
    (list state ``urls``, TTL 6 s), a count per url (map state ``counts``, TTL 7 s), a
    click count without TTL (value state ``clicks``); a timer 60 s after the latest
    click when ``timers`` (processing time or event time, by the query's time mode)."""
    import pandas as pd
    from pyspark.sql import Row
    from pyspark.sql.streaming.stateful_processor import StatefulProcessor

    def ttl_ms(ms):
        return (ms,) if ttl else ()

    class Keeper(StatefulProcessor):
        def init(self, handle):
            self.handle = handle
            self.last = handle.getValueState("last", "url STRING", *ttl_ms(5000))
            self.urls = handle.getListState("urls", "url STRING", *ttl_ms(6000))
            self.counts = handle.getMapState("counts", "url STRING", "n LONG", *ttl_ms(7000))
            self.clicks = handle.getValueState("clicks", "n LONG")

        def handleInputRows(self, key, rows, timerValues):  # noqa: N802, N803 (Spark API)
            urls = ([r.url for r in rows] if row_based
                    else [u for frame in rows for u in frame["url"]])
            for url in urls:
                self.urls.appendValue((url,))
                n = self.counts.getValue((url,))[0] if self.counts.containsKey((url,)) else 0
                self.counts.updateValue((url,), (n + 1,))
            self.last.update((urls[-1],))
            self.clicks.update(((self.clicks.get()[0] if self.clicks.exists() else 0)
                                + len(urls),))
            if timers:
                now = timerValues.getCurrentProcessingTimeInMs()
                self.handle.registerTimer(now + 60_000)
            if row_based:
                yield Row(user=key[0])
            else:
                yield pd.DataFrame({"user": [key[0]]})

        def close(self):
            pass

    return Keeper()


def keeper_topology(method: str, *, ttl: bool = True, time_mode: str = "ProcessingTime"):
    def topology(t: Topology) -> None:
        clicks = t.input("clicks", schema="user STRING, url STRING")
        kept = getattr(clicks.groupBy("user"), method)(
            _keeper(method == "transformWithState", ttl=ttl, timers=time_mode != "None"),
            "user STRING", "Update", time_mode)
        t.output("seen", kept, output_mode="update")

    return topology


USER_KEY = "struct<user:string>"
URL = "struct<url:string>"


def _check_described(driver, kind_prefix: str, *, ttl: bool, timers: str | None) -> None:
    (operator,) = driver.describe().query("seen").operators
    assert operator.kind.startswith(kind_prefix)
    assert operator.timers == timers
    assert operator.note is None
    assert operator.state_variables == (
        StateVariableDescription("clicks", "value", USER_KEY, "struct<n:bigint>"),
        StateVariableDescription("counts", "map", USER_KEY, "struct<n:bigint>",
                                 user_key_schema=URL, ttl=ttl),
        StateVariableDescription("last", "value", USER_KEY, URL, ttl=ttl),
        StateVariableDescription("urls", "list", USER_KEY, URL, ttl=ttl),
    )
    assert operator.state_variable("urls").kind == "list"
    with pytest.raises(KeyError, match=r"no state variable 'nope'; its variables are "
                                       r"\['clicks', 'counts', 'last', 'urls'\]"):
        operator.state_variable("nope")


@needs_pandas_tws
def test_describe_shows_variables_ttl_and_timers_and_ttl_reads_have_one_shape(
        topology_driver):
    driver = topology_driver(keeper_topology("transformWithStateInPandas"), sql_conf=ROCKSDB,
                             trigger_interval=timedelta(seconds=1))
    # Before the first batch Spark has planned nothing: describe() says so.
    query = driver.describe().query("seen")
    assert (query.planned, query.operators) == (False, ())
    assert str(query).splitlines()[2] == (
        "  stateful operators: not known before the first batch (Spark plans them then)")

    clicks = driver.create_input_topic("clicks")
    clicks.pipe_value_list([("a", "/"), ("a", "/x"), ("a", "/")])
    driver.process_all_available()
    _check_described(driver, "transformWithState", ttl=True, timers="processing time")
    (operator,) = driver.describe().query("seen").operators
    assert operator.time_mode == "ProcessingTime"
    assert str(driver.describe().query("seen")).splitlines()[2:] == [
        f"  operator 0: {operator.kind} (stores: default)",
        "    time mode: ProcessingTime; timers: processing time "
        "(read: get_state_store('seen', timers=True))",
        "    state variable 'clicks': value state",
        "      key:      struct<user:string>",
        "      value:    struct<n:bigint>",
        "    state variable 'counts': map state with TTL",
        "      key:      struct<user:string>",
        "      map key:  struct<url:string>",
        "      value:    struct<n:bigint>",
        "    state variable 'last': value state with TTL",
        "      key:      struct<user:string>",
        "      value:    struct<url:string>",
        "    state variable 'urls': list state with TTL",
        "      key:      struct<user:string>",
        "      value:    struct<url:string>",
    ]

    # TTL'd entries: the value itself, with the instant it expires (written at T0).
    def expiring(seconds):
        return T0 + timedelta(seconds=seconds)

    last = driver.get_state_store("seen", state_var="last")
    assert last.to_dict() == {"a": {"url": "/"}}
    assert last.entries("a") == [StateEntry("a", {"url": "/"}, ttl_expiration=expiring(5))]
    urls = driver.get_state_store("seen", state_var="urls")
    assert urls.get_all("a") == [{"url": "/"}, {"url": "/x"}, {"url": "/"}]
    assert {e.ttl_expiration for e in urls.all()} == {expiring(6)}
    counts = driver.get_state_store("seen", state_var="counts")
    assert sorted((e.value["user_map_key"]["url"], e.value["user_map_value"]["n"],
                   e.ttl_expiration) for e in counts.all()) == [
        ("/", 2, expiring(7)), ("/x", 1, expiring(7))]
    # A variable without TTL reads as before; to_dataframe() keeps Spark's own shape.
    assert driver.get_state_store("seen", state_var="clicks").all() == [
        StateEntry("a", {"n": 3})]
    assert last.to_dataframe().schema.simpleString() == (
        "struct<key:struct<user:string>,value:struct<value:struct<url:string>,"
        "ttlExpirationMs:bigint>>")
    assert driver.get_state_store("seen", timers=True).to_dict() == {
        "a": {"expiration_timestamp_ms": int(T0.timestamp() * 1000) + 60_000}}

    # A batch whose processing time reaches an entry's expiration removes it.
    driver.advance_wall_clock(timedelta(seconds=6))
    clicks.pipe_input({"user": "b", "url": "/b"})
    driver.process_all_available()
    assert "a" not in driver.get_state_store("seen", state_var="last")
    assert "a" not in driver.get_state_store("seen", state_var="urls")
    assert driver.get_state_store("seen", state_var="last").entries("b") == [
        StateEntry("b", {"url": "/b"}, ttl_expiration=expiring(6 + 5))]
    assert driver.get_state_store("seen", state_var="clicks").get("a") == {"n": 3}


@needs_row_tws
def test_row_based_transform_with_state_is_described_alike(topology_driver):
    driver = topology_driver(keeper_topology("transformWithState", ttl=False, time_mode="None"),
                             sql_conf=ROCKSDB)
    driver.create_input_topic("clicks").pipe_value_list([("a", "/"), ("b", "/x")])
    driver.process_all_available()
    _check_described(driver, "transformWithState", ttl=False, timers=None)
    (operator,) = driver.describe().query("seen").operators
    assert operator.time_mode == "NoTime"  # Spark's name of the "None" time mode
    assert "    time mode: NoTime; timers: none" in str(driver.describe()).splitlines()
    last = driver.get_state_store("seen", state_var="last")
    assert last.to_dict() == {"a": {"url": "/"}, "b": {"url": "/x"}}
    assert [e.ttl_expiration for e in last.all()] == [None, None]
    with pytest.raises(StateStoreError, match=r"output 'seen' has no timers; the state "
                                              r"variables are: operator 0: 'clicks', "
                                              r"'counts', 'last', 'urls'"):
        driver.get_state_store("seen", timers=True)


def _event_time_keeper():
    """Row-based: the latest event time per user (value state ``latest``; Spark allows a
    TTL in the ProcessingTime mode only) and an event-time timer 10 s after it."""
    from pyspark.sql import Row
    from pyspark.sql.streaming.stateful_processor import StatefulProcessor

    class Latest(StatefulProcessor):
        def init(self, handle):
            self.handle = handle
            self.latest = handle.getValueState("latest", "ms LONG")

        def handleInputRows(self, key, rows, timerValues):  # noqa: N802, N803 (Spark API)
            newest = max(int(r.ts.timestamp() * 1000) for r in rows)
            self.latest.update((newest,))
            self.handle.registerTimer(newest + 10_000)
            yield Row(user=key[0])

        def close(self):
            pass

    return Latest()


@needs_row_tws
def test_event_time_timers_are_described(topology_driver):
    def topology(t: Topology) -> None:
        clicks = t.input("clicks", schema="user STRING, ts TIMESTAMP", timestamp_column="ts")
        t.output("seen", clicks.withWatermark("ts", "5 seconds").groupBy("user")
                 .transformWithState(_event_time_keeper(), "user STRING", "Update",
                                     "EventTime"), output_mode="update")

    driver = topology_driver(topology, sql_conf=ROCKSDB)
    driver.create_input_topic("clicks").pipe_input({"user": "a"}, timestamp=at(3))
    driver.process_all_available()
    (operator,) = driver.describe().query("seen").operators
    assert (operator.time_mode, operator.timers) == ("EventTime", "event time")
    assert operator.state_variables == (
        StateVariableDescription("latest", "value", USER_KEY, "struct<ms:bigint>"),)
    assert driver.get_state_store("seen", timers=True).to_dict() == {
        "a": {"expiration_timestamp_ms": int(at(13).timestamp() * 1000)}}
    assert driver.get_state_store("seen", state_var="latest").all() == [
        StateEntry("a", {"ms": int(at(3).timestamp() * 1000)})]


def _counter(variable: str):
    """Counts rows per user in value state ``variable``; processing-time timers only for
    the ``total`` counter."""
    import pandas as pd
    from pyspark.sql.streaming.stateful_processor import StatefulProcessor

    class Counter(StatefulProcessor):
        def init(self, handle):
            self.handle = handle
            self.count = handle.getValueState(variable, "n LONG")

        def handleInputRows(self, key, rows, timerValues):  # noqa: N802, N803 (Spark API)
            seen = sum(len(frame) for frame in rows)
            self.count.update(((self.count.get()[0] if self.count.exists() else 0) + seen,))
            if variable == "total":
                self.handle.registerTimer(timerValues.getCurrentProcessingTimeInMs() + 1000)
            yield pd.DataFrame({"user": [key[0]], "n": [self.count.get()[0]]})

        def close(self):
            pass

    return Counter()


@needs_pandas_tws
def test_reads_by_variable_name_find_the_operator_or_say_why_not(topology_driver):
    def topology(t: Topology) -> None:
        clicks = t.input("clicks", schema="user STRING, url STRING")
        by_user = clicks.groupBy("user")
        t.output("both", by_user.transformWithStateInPandas(
            _counter("total"), "user STRING, n LONG", "Update", "ProcessingTime").union(
            by_user.transformWithStateInPandas(
                _counter("visits"), "user STRING, n LONG", "Update", "None")),
            output_mode="update")
        t.output("twice", by_user.transformWithStateInPandas(
            _counter("total"), "user STRING, n LONG", "Update", "ProcessingTime").union(
            by_user.transformWithStateInPandas(
                _counter("total"), "user STRING, n LONG", "Update", "ProcessingTime")),
            output_mode="update")

    driver = topology_driver(topology, sql_conf=ROCKSDB)
    driver.create_input_topic("clicks").pipe_value_list([("a", "/"), ("a", "/x")])
    driver.process_all_available()
    operators = driver.describe().query("both").operators
    assert [(op.operator_id, [v.name for v in op.state_variables], op.timers)
            for op in operators] == [(0, ["total"], "processing time"), (1, ["visits"], None)]

    # Exactly one operator holds the variable (or keeps timers): no operator_id needed.
    assert driver.get_state_store("both", state_var="visits").to_dict() == {"a": {"n": 2}}
    assert driver.get_state_store("both", state_var="total").operator_id == 0
    assert driver.get_state_store("both", timers=True).operator_id == 0
    with pytest.raises(StateStoreError, match=r"output 'both' has no state variable 'nope'; "
                                              r"the state variables are: operator 0: "
                                              r"'total'; operator 1: 'visits'"):
        driver.get_state_store("both", state_var="nope")
    with pytest.raises(StateStoreError, match=r"operator 1 has no state variable 'total' "
                                              r"\(time mode NoTime\); its state variables "
                                              r"are 'visits'"):
        driver.get_state_store("both", state_var="total", operator_id=1)
    with pytest.raises(StateStoreError, match=r"operator 1 has no timers"):
        driver.get_state_store("both", timers=True, operator_id=1)

    # Several hold it: a typed error naming them, and operator_id= settles it.
    with pytest.raises(InvalidArgumentError,
                       match=r"output 'twice': 2 operators hold state variable 'total': "
                             r"0 \(transformWithState\w*\), 1 \(transformWithState\w*\); "
                             r"pass operator_id= to say which"):
        driver.get_state_store("twice", state_var="total")
    with pytest.raises(InvalidArgumentError, match=r"2 operators hold timers"):
        driver.get_state_store("twice", timers=True)
    assert driver.get_state_store("twice", state_var="total", operator_id=1).to_dict() == {
        "a": {"n": 2}}
