"""The misuse suite: wrong names, types, values, times, state reads, topologies and
lifecycle calls, each refused with a typed ``StreamTestError`` subclass whose message
names the problem, and the driver still usable afterwards where it should be."""

from __future__ import annotations

from datetime import date, datetime, timedelta, timezone
from decimal import Decimal

import pytest
from pyspark.sql import functions as F

import pyspark_streamtest.errors as errors
from pyspark_streamtest import StreamTestError, Topology, TopologyTestDriver
from pyspark_streamtest.core.features import Feature
from tests.helpers import T0

NAIVE = datetime(2024, 1, 1)
TYPED = ("i INT, l BIGINT, d DOUBLE, s STRING, b BOOLEAN, ts TIMESTAMP, dt DATE, "
         "arr ARRAY<INT>, st STRUCT<x: INT>, m MAP<STRING, INT>, dec DECIMAL(5, 2)")


def everything(t: Topology) -> None:
    typed = t.input("typed", schema=TYPED)
    t.output("echo", typed)
    clicks = t.input("clicks", schema="user STRING, at TIMESTAMP", timestamp_column="at")
    t.output("counts", clicks.withWatermark("at", "10 seconds")
             .groupBy(F.window("at", "10 seconds"), "user").count(), output_mode="update")
    events = t.kafka_input("events", partitions=2)
    t.kafka_output("out", events.select("key", "value"), topic="out")


@pytest.fixture(scope="module")
def driver(spark):
    with TopologyTestDriver(everything, spark=spark) as made:
        made.create_input_topic("clicks").pipe_input({"user": "a", "at": T0})
        made.process_all_available()  # the aggregation has state to read
        yield made


def _typed(**fields):
    row = {"i": 1, "l": 1, "d": 1.0, "s": "x", "b": True, "ts": T0, "dt": date(2024, 1, 1),
           "arr": [1], "st": {"x": 1}, "m": {"a": 1}, "dec": Decimal("1.50")}
    row.update(fields)
    return row


# (id, call(driver), error class name, words the message must have)
CASES = [
    # --- data types: every column refuses what does not fit, naming the field ----------
    *[(f"{column}={value!r}"[:40], lambda d, c=column, v=value:
       d.create_input_topic("typed").pipe_input(_typed(**{c: v})),
       "SchemaMismatchError", column)
      for column, value in [
          ("i", "1"), ("i", 1.5), ("i", 2**31), ("i", [1]), ("i", {"x": 1}),
          ("l", 2**63), ("l", "x"), ("l", 1.5),
          ("d", "1.0"), ("d", [1.0]), ("d", {"x": 1.0}),
          ("s", 1), ("s", b"x"), ("s", ["x"]), ("s", 1.5),
          ("b", "true"), ("b", 1.5), ("b", [True]),
          ("ts", "2024-01-01"), ("ts", 1), ("ts", date(2024, 1, 1)),
          ("dt", "2024-01-01"), ("dt", 1),
          ("arr", 1), ("arr", ["a"]), ("arr", "abc"), ("arr", {"x": 1}),
          ("st", {"y": 1}), ("st", 1), ("st", {"x": "a"}), ("st", [1, 2, 3]),
          ("m", {1: 1}), ("m", {"a": "b"}), ("m", [1]), ("m", "a"),
          ("dec", Decimal("1234.5")), ("dec", Decimal("1.234")), ("dec", "1.5"),
      ]],
    ("naive-timestamp-value", lambda d: d.create_input_topic("typed").pipe_input(
        _typed(ts=NAIVE)), "NaiveDatetimeError", "naive"),
    ("unknown-field", lambda d: d.create_input_topic("typed").pipe_input(_typed(zz=1)),
     "SchemaMismatchError", "zz"),
    ("tuple-too-short", lambda d: d.create_input_topic("typed").pipe_input((1, 2)),
     "SchemaMismatchError", "typed"),
    ("value-not-a-row", lambda d: d.create_input_topic("typed").pipe_input(42),
     "SchemaMismatchError", "typed"),
    # --- topics -------------------------------------------------------------------------
    ("unknown-input", lambda d: d.create_input_topic("nope"), "UnknownTopicError", "nope"),
    ("unknown-output", lambda d: d.create_output_topic("nope"), "UnknownTopicError", "nope"),
    ("output-as-input", lambda d: d.create_input_topic("echo"), "UnknownTopicError", "echo"),
    ("input-as-output", lambda d: d.create_output_topic("typed"), "UnknownTopicError",
     "typed"),
    ("empty-topic-name", lambda d: d.create_input_topic(""), "UnknownTopicError", "''"),
    ("serializer-on-plain-input", lambda d: d.create_input_topic(
        "typed", value_serializer="json"), "StreamTestError", "serializer"),
    ("unknown-serializer", lambda d: d.create_input_topic("events", value_serializer="x"),
     "InvalidArgumentError", "serializer"),
    ("unknown-deserializer", lambda d: d.create_output_topic("out", value_deserializer="x"),
     "InvalidArgumentError", "deserializer"),
    ("naive-record-timestamp", lambda d: d.create_input_topic("clicks").pipe_input(
        {"user": "a"}, timestamp=NAIVE), "NaiveDatetimeError", "time zone"),
    ("naive-start-timestamp", lambda d: d.create_input_topic(
        "clicks", start_timestamp=NAIVE), "NaiveDatetimeError", "time zone"),
    ("negative-auto-advance", lambda d: d.create_input_topic(
        "clicks", start_timestamp=T0, auto_advance=timedelta(seconds=-1)),
     "StreamTestError", "auto_advance"),
    ("record-time-past-9999", lambda d: d.create_input_topic(
        "clicks", start_timestamp=T0).advance_time(timedelta(days=365 * 8000)),
     "TimeOutOfRangeError", "9999"),
    ("auto-advance-past-9999", lambda d: d.create_input_topic(
        "clicks", start_timestamp=datetime(9999, 12, 31, 23, 59, tzinfo=timezone.utc),
        auto_advance=timedelta(days=1)).pipe_value_list([{"user": "a"}, {"user": "b"}]),
     "TimeOutOfRangeError", "9999"),
    ("header-value-surrogate", lambda d: d.create_input_topic("events").pipe_input(
        "v", headers=[("h", "a\ud800")]), "SchemaMismatchError", "surrogate"),
    ("header-key-surrogate", lambda d: d.create_input_topic("events").pipe_input(
        "v", headers=[("k\ud800", b"x")]), "SchemaMismatchError", "surrogate"),
    ("negative-partition", lambda d: d.create_input_topic("events").pipe_input(
        "v", partition=-1), "StreamTestError", "partition"),
    ("partition-out-of-range", lambda d: d.create_input_topic("events").pipe_input(
        "v", partition=2), "StreamTestError", "partition"),
    ("headers-not-pairs", lambda d: d.create_input_topic("events").pipe_input(
        "v", headers=[1]), "InvalidArgumentTypeError", "header"),
    ("header-key-not-str", lambda d: d.create_input_topic("events").pipe_input(
        "v", headers=[(1, b"x")]), "InvalidArgumentTypeError", "header"),
    ("key-values-not-pairs", lambda d: d.create_input_topic("events").pipe_key_value_list(
        [1]), "InvalidArgumentTypeError", "pair"),
    ("records-not-test-records", lambda d: d.create_input_topic("events").pipe_record_list(
        [1]), "InvalidArgumentTypeError", "TestRecord"),
    ("read-from-nothing", lambda d: d.create_output_topic("echo").read_record(),
     "NoSuchRecordError", "echo"),
    ("read-value-from-nothing", lambda d: d.create_output_topic("out").read_value(),
     "NoSuchRecordError", "out"),
    ("tombstones-policy", lambda d: d.create_output_topic("out").read_key_values_to_map(
        tombstones="x"), "InvalidArgumentError", "tombstones"),
    ("handle-made-directly", lambda d: errors and __import__(
        "pyspark_streamtest").TestInputTopic(), "InvalidArgumentTypeError",
     "create_input_topic"),
    ("output-handle-made-directly", lambda d: __import__(
        "pyspark_streamtest").TestOutputTopic(), "InvalidArgumentTypeError",
     "create_output_topic"),
    # --- time ---------------------------------------------------------------------------
    ("clock-backwards", lambda d: d.advance_wall_clock(timedelta(seconds=-1)),
     "TimeWentBackwardsError", "only moves forward"),
    ("jump-backwards", lambda d: d.jump_wall_clock(timedelta(seconds=-1)),
     "TimeWentBackwardsError", "only moves forward"),
    ("clock-sub-millisecond", lambda d: d.advance_wall_clock(timedelta(microseconds=1)),
     "InvalidDurationError", "millisecond"),
    ("clock-not-a-duration", lambda d: d.advance_wall_clock(5), "InvalidArgumentTypeError",
     "delta"),
    ("clock-past-9999", lambda d: d.advance_wall_clock(timedelta(days=365 * 8000)),
     "TimeOutOfRangeError", "9999"),
    ("clock-timedelta-max", lambda d: d.advance_wall_clock(timedelta.max),
     "TimeOutOfRangeError", "9999"),
    ("watermark-naive", lambda d: d.advance_watermark_to(NAIVE), "NaiveDatetimeError",
     "time zone"),
    ("watermark-backwards", lambda d: d.advance_watermark_to(
        datetime(1969, 12, 31, tzinfo=timezone.utc)),
     "TimeWentBackwardsError", "back"),
    ("watermark-unknown-output", lambda d: d.advance_watermark_to(T0, output="nope"),
     "UnknownTopicError", "nope"),
    ("watermark-on-output-without-one", lambda d: d.advance_watermark_to(T0, output="echo"),
     "InvalidArgumentError", "watermark"),
    ("watermark-of-unknown-output", lambda d: d.watermark("nope"), "UnknownTopicError",
     "nope"),
    # --- state --------------------------------------------------------------------------
    ("state-of-unknown-output", lambda d: d.get_state_store("nope"), "UnknownTopicError",
     "nope"),
    ("late-records-of-unknown-output", lambda d: d.late_records("nope"),
     "UnknownTopicError", "nope"),
    ("late-records-without-a-rule", lambda d: d.late_records("echo"),
     "InvalidArgumentError", "late"),
    ("state-of-stateless-output", lambda d: d.get_state_store("echo"), "StateStoreError",
     "echo"),
    ("state-unknown-operator", lambda d: d.get_state_store("counts", operator_id=7),
     "StateStoreError", "7"),
    ("state-negative-batch", lambda d: d.get_state_store("counts", batch_id=-1),
     "InvalidArgumentError", "batch_id"),
    ("join-store-of-aggregation", lambda d: d.get_join_store("counts", "left"),
     "StateStoreError", "join"),
    ("join-side", lambda d: d.get_join_store("counts", "middle"), "InvalidArgumentError",
     "side"),
    ("session-store-of-window-count", lambda d: d.get_session_store("counts"),
     "StateStoreError", "session"),
    ("state-var-on-aggregation", lambda d: d.get_state_store("counts", state_var="x"),
     "StateStoreError", "state_var"),
    ("num-state-rows-unknown-output", lambda d: d.assert_num_state_rows("nope", total=1),
     "UnknownTopicError", "nope"),
]

NEEDS_STATE_READS = {"state-of-stateless-output", "state-unknown-operator",
                     "join-store-of-aggregation", "session-store-of-window-count",
                     "state-var-on-aggregation", "state-negative-batch"}


@pytest.mark.parametrize(("call", "error", "words"),
                         [pytest.param(*case[1:], id=case[0]) for case in CASES])
def test_misuse_is_a_typed_error_and_the_driver_carries_on(driver, spark, request, call,
                                                            error, words):
    if request.node.callspec.id in NEEDS_STATE_READS:
        from pyspark_streamtest.core.features import supported_features

        if Feature.STATE_STORE_READS not in supported_features(spark):
            pytest.skip("state reads need PySpark 4.0+")
    expected = getattr(errors, error)
    with pytest.raises(StreamTestError) as caught:
        call(driver)
    assert isinstance(caught.value, expected), f"{type(caught.value).__name__}: {caught.value}"
    assert words in str(caught.value)
    assert driver.is_running and not driver.closed
    echo = driver.create_output_topic("echo")
    echo.read_records_to_list()
    driver.create_input_topic("typed").pipe_input(_typed(s="still works"))
    driver.process_all_available()
    assert [v["s"] for v in echo.read_values_to_list()] == ["still works"]


# --- topology and constructor misuse: refused before any query starts --------------------
def _no_outputs(t: Topology) -> None:
    t.input("x", schema="v INT")


def _static_output(t: Topology) -> None:
    t.output("o", t.spark.range(3))


def _bad_mode(t: Topology) -> None:
    t.output("o", t.input("x", schema="v INT"), output_mode="sometimes")


def _twice(t: Topology) -> None:
    t.input("x", schema="v INT")
    t.input("x", schema="v INT")


def _bad_schema(t: Topology) -> None:
    t.output("o", t.input("x", schema="v NOT_A_TYPE"))


def _kafka_without_value(t: Topology) -> None:
    t.kafka_output("o", t.input("x", schema="v INT"), topic="o")


def _bad_timestamp_column(t: Topology) -> None:
    t.output("o", t.input("x", schema="v INT", timestamp_column="v"))


def _unknown_timestamp_column(t: Topology) -> None:
    t.output("o", t.input("x", schema="v INT", timestamp_column="at"))


def _append_aggregation_without_watermark(t: Topology) -> None:
    t.output("o", t.input("x", schema="v INT").groupBy("v").count(), output_mode="append")


def _ok(t: Topology) -> None:
    t.output("o", t.input("x", schema="v INT"))


TOPOLOGY_CASES = [
    ("not-callable", 42, {}, "InvalidArgumentTypeError", "topology"),
    ("no-outputs", _no_outputs, {}, "TopologyError", "output"),
    ("static-output", _static_output, {}, "TopologyError", "o"),
    ("bad-output-mode", _bad_mode, {}, "TopologyError", "sometimes"),
    ("input-twice", _twice, {}, "TopologyError", "x"),
    ("bad-schema", _bad_schema, {}, "TopologyError", "x"),
    ("kafka-output-without-value", _kafka_without_value, {}, "TopologyError", "value"),
    ("timestamp-column-not-timestamp", _bad_timestamp_column, {}, "TopologyError", "v"),
    ("timestamp-column-unknown", _unknown_timestamp_column, {}, "TopologyError", "at"),
    ("append-aggregation-no-watermark", _append_aggregation_without_watermark, {},
     "TopologyError", "o"),
    ("naive-start-time", _ok, {"start_time": NAIVE}, "NaiveDatetimeError", "start_time"),
    ("zero-trigger-interval", _ok, {"trigger_interval": timedelta(0)},
     "InvalidDurationError", "trigger_interval"),
    ("negative-timeout", _ok, {"timeout": timedelta(seconds=-1)}, "StreamTestError",
     "timeout"),
    ("sql-conf-not-a-mapping", _ok, {"sql_conf": [("a", "b")]}, "InvalidArgumentTypeError",
     "sql_conf"),
    ("sql-conf-key-not-str", _ok, {"sql_conf": {1: "b"}}, "InvalidArgumentTypeError",
     "sql_conf"),
    ("sql-conf-value-a-list", _ok, {"sql_conf": {"a": [1]}}, "InvalidArgumentTypeError",
     "sql_conf"),
    ("spark-not-a-session", _ok, {"spark": "local[2]"}, "NotASparkSessionError", "spark="),
]


@pytest.mark.parametrize(("topology", "options", "error", "words"),
                         [pytest.param(*case[1:], id=case[0]) for case in TOPOLOGY_CASES])
def test_topology_and_constructor_misuse_is_refused_before_anything_runs(
    spark, topology, options, error, words
):
    options = {"spark": spark, **options}
    running = len(spark.streams.active)  # the module's driver runs beside
    with pytest.raises(StreamTestError) as caught:
        TopologyTestDriver(topology, **options).close()
    assert isinstance(caught.value, getattr(errors, error)), (
        f"{type(caught.value).__name__}: {caught.value}")
    assert words in str(caught.value)
    assert len(spark.streams.active) == running


# --- lifecycle: a closed or stopped driver refuses what it cannot do ----------------------
CLOSED_CALLS = {
    "advance": lambda d: d.advance_wall_clock(timedelta(seconds=1)),
    "jump": lambda d: d.jump_wall_clock(timedelta(seconds=1)),
    "process": lambda d: d.process_all_available(),
    "watermark": lambda d: d.advance_watermark_to(T0),
    "restart": lambda d: d.restart(),
    "stop": lambda d: d.stop(),
    "start": lambda d: d.start(),
    "input-topic": lambda d: d.create_input_topic("x"),
    "output-topic": lambda d: d.create_output_topic("o"),
    "state": lambda d: d.get_state_store("o"),
    "describe": lambda d: d.describe(),
    "enter": lambda d: d.__enter__(),
}


@pytest.mark.parametrize("call", CLOSED_CALLS.values(), ids=CLOSED_CALLS.keys())
def test_a_closed_driver_refuses_every_verb(spark, call):
    driver = TopologyTestDriver(_ok, spark=spark)
    handle = driver.create_input_topic("x")
    driver.close()
    with pytest.raises(errors.DriverClosedError, match="closed; create a new driver"):
        call(driver)
    with pytest.raises(errors.DriverClosedError):
        handle.pipe_input((1,))
    driver.close()  # still fine


@pytest.mark.parametrize("verb", ["process_all_available", "advance_watermark_to"])
def test_a_stopped_driver_refuses_what_needs_running_queries(topology_driver, verb):
    driver = topology_driver(_ok)
    driver.stop()
    with pytest.raises(errors.DriverStoppedError, match=r"driver\.start\(\)"):
        getattr(driver, verb)(*([T0] if verb == "advance_watermark_to" else []))
    driver.create_input_topic("x").pipe_input((1,))  # queued while stopped
    (batch,) = driver.start()
    assert batch.output_values == [{"v": 1}]

