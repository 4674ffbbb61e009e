"""Bad input: typed errors that name the problem and the fix, and a driver that survives."""

from __future__ import annotations

from datetime import datetime, timedelta

import pytest
from pyspark.sql import functions as F
from pyspark.sql.types import StringType

from pyspark_streamtest import (
    DriverClosedError,
    NaiveDatetimeError,
    NoSuchRecordError,
    SchemaMismatchError,
    SparkConnectNotSupportedError,
    StreamingQueryFailedError,
    TimeWentBackwardsError,
    Topology,
    TopologyError,
    TopologyTestDriver,
    UnknownTopicError,
    UnsupportedSchemaError,
)
from tests.helpers import at, clicks_per_user

NAIVE = datetime(2024, 1, 1)


@pytest.mark.parametrize(
    ("value", "kwargs", "error", "message"),
    [
        ({"usr": "a", "url": "/"}, {}, SchemaMismatchError, r"'usr' is not in the schema.*did you mean 'user'"),
        ({"user": 1, "url": "/"}, {}, SchemaMismatchError, r"input 'clicks': field 'user' expects STRING .*got int 1"),
        (("a",), {}, SchemaMismatchError, r"1 positional fields, the schema has 3"),
        ("a", {}, SchemaMismatchError, r"must be a dict, a Row or a tuple"),
        ({"user": "a", "url": "/"}, {"timestamp": NAIVE}, NaiveDatetimeError, r"naive datetime.*tzinfo"),
        ({"user": "a", "url": "/", "ts": NAIVE}, {}, NaiveDatetimeError, r"'ts' is a naive datetime"),
        ({"user": "a", "ts": at(1)}, {"timestamp": at(2)}, ValueError, r"disagree; give the event time once"),
    ],
    ids=["unknown-field", "wrong-type", "short-tuple", "not-a-record", "naive-timestamp",
         "naive-field", "two-event-times"],
)
def test_bad_values_are_rejected_and_the_driver_goes_on(topology_driver, value, kwargs, error,
                                                       message):
    driver = topology_driver(clicks_per_user)
    clicks = driver.create_input_topic("clicks")
    with pytest.raises(error, match=message):
        clicks.pipe_input(value, **kwargs)
    clicks.pipe_input({"user": "a", "url": "/"}, timestamp=at(1))
    ran = driver.process_all_available()
    assert ran[0].num_input_rows == 1  # the bad value never reached Spark


def test_a_bad_value_in_a_list_pipes_none_of_it(topology_driver):
    driver = topology_driver(clicks_per_user)
    clicks = driver.create_input_topic("clicks")
    with pytest.raises(SchemaMismatchError, match=r"values\[1\]: input 'clicks': field 'url'"):
        clicks.pipe_value_list([("a", "/", at(1)), ("b", 2, at(2))])
    assert driver.process_all_available() == []


@pytest.mark.parametrize(
    ("action", "error", "message"),
    [
        (lambda d: d.create_input_topic("clickz"), UnknownTopicError, r"unknown input 'clickz'; .* 'clicks'"),
        (lambda d: d.create_output_topic("count"), UnknownTopicError, r"unknown output 'count'; .* 'counts'"),
        (lambda d: d.watermark("nope"), UnknownTopicError, r"unknown output 'nope'"),
        (lambda d: d.advance_wall_clock(timedelta(seconds=-1)), TimeWentBackwardsError, r"negative.*only moves forward"),
        (lambda d: d.advance_wall_clock(1000), TypeError, r"must be a datetime.timedelta"),
        (lambda d: d.create_input_topic("clicks").advance_time(timedelta(milliseconds=-5)), TimeWentBackwardsError, r"negative"),
        (lambda d: d.create_input_topic("clicks", start_timestamp=NAIVE), NaiveDatetimeError, r"start_timestamp"),
        (lambda d: d.create_output_topic("counts").read_value(), NoSuchRecordError, r"output 'counts' has no unread record \(nothing written yet\)"),
    ],
    ids=["unknown-input", "unknown-output", "unknown-watermark-output", "clock-backwards",
         "clock-not-timedelta", "record-time-backwards", "naive-start", "read-empty"],
)
def test_bad_calls(topology_driver, action, error, message):
    driver = topology_driver(clicks_per_user)
    with pytest.raises(error, match=message):
        action(driver)
    assert not driver.closed
    assert driver.advance_wall_clock(timedelta(seconds=1)) == []


def test_use_after_close(spark):
    driver = TopologyTestDriver(clicks_per_user, spark=spark)
    clicks = driver.create_input_topic("clicks")
    counts = driver.create_output_topic("counts")
    driver.close()
    driver.close()  # idempotent
    for call in (
        lambda: clicks.pipe_input({"user": "a", "url": "/"}),
        lambda: counts.read_values_to_list(),
        driver.process_all_available,
        lambda: driver.advance_wall_clock(timedelta(seconds=1)),
        driver.restart,
        lambda: driver.create_input_topic("clicks"),
    ):
        with pytest.raises(DriverClosedError, match="closed; create a new driver"):
            call()
    assert driver.batches == ()


def _no_output(t: Topology) -> None:
    t.input("x", schema="a INT")


def _static_output(t: Topology) -> None:
    t.input("x", schema="a INT")
    t.output("out", t.spark.range(3))


def _foreign_source(t: Topology) -> None:
    t.input("x", schema="a INT")
    t.output("out", t.spark.readStream.format("rate").load())


def _bad_mode(t: Topology) -> None:
    t.output("out", t.input("x", schema="a INT"), output_mode="upsert")


def _bad_schema(t: Topology) -> None:
    t.input("x", schema="a INT,, b")


def _int_map(t: Topology) -> None:
    t.input("x", schema="m MAP<INT, STRING>")


def _bad_timestamp_column(t: Topology) -> None:
    t.input("x", schema="a INT, ts STRING", timestamp_column="ts")


@pytest.mark.parametrize(
    ("topology", "error", "message"),
    [
        (_no_output, TopologyError, r"declared no output"),
        (_static_output, TopologyError, r"'out' is not a streaming DataFrame"),
        (_foreign_source, TopologyError, r"streaming source the driver does not control"),
        (_bad_mode, TopologyError, r"output_mode 'upsert' is not one of append, update, complete"),
        (_bad_schema, TopologyError, r"cannot parse schema"),
        (_int_map, UnsupportedSchemaError, r"STRING keys only"),
        (_bad_timestamp_column, TopologyError, r"timestamp_column 'ts' is string; it must be TIMESTAMP"),
        ("not a function", TypeError, r"must be a function taking a Topology"),
    ],
    ids=["no-output", "static", "foreign-source", "mode", "schema", "int-map-keys",
         "timestamp-column-type", "not-callable"],
)
def test_bad_topologies(spark, topology, error, message):
    with pytest.raises(error, match=message):
        TopologyTestDriver(topology, spark=spark)
    assert spark.streams.active == []


def test_naive_start_time_and_bad_interval(spark):
    with pytest.raises(NaiveDatetimeError, match="start_time"):
        TopologyTestDriver(clicks_per_user, spark=spark, start_time=NAIVE)
    with pytest.raises(ValueError, match="trigger_interval must be positive"):
        TopologyTestDriver(clicks_per_user, spark=spark, trigger_interval=timedelta(0))


@pytest.mark.parametrize(("conf", "message"), [
    (["a=b"], "sql_conf must be a mapping"),
    ({1: "x"}, "sql_conf keys must be Spark setting names"),
    ({"spark.sql.shuffle.partitions": None}, r"sql_conf\['spark.sql.shuffle.partitions'\] must be a str"),
])
def test_bad_sql_conf(spark, conf, message):
    with pytest.raises(TypeError, match=message):
        TopologyTestDriver(clicks_per_user, spark=spark, sql_conf=conf)
    assert spark.streams.active == []


def test_sql_conf_applies_to_the_driver_queries_only(spark):
    key = "spark.sql.shuffle.partitions"
    before = spark.conf.get(key)
    with TopologyTestDriver(clicks_per_user, spark=spark, sql_conf={key: 3}) as driver:
        assert spark.conf.get(key) == before
        driver.create_input_topic("clicks").pipe_input({"user": "a", "url": "/"})
        driver.process_all_available()
        # the aggregation's state lives in one store per shuffle partition: 3 of them
        assert driver.batches[0].state_operators[0]["numShufflePartitions"] == 3


def test_a_connect_session_the_driver_cannot_reach_is_refused(spark):
    """A real Connect client of a remote server, in a classic run: the driver runs its
    queries in the JVM of the server it is given, so it refuses one it cannot reach, before
    any request (3.5: its JVM has no Connect server at all). Connect sessions of this
    process's own server run: tests/spark/test_connect.py, in the Connect suite."""
    from pyspark.sql.connect.session import SparkSession as ConnectSession

    # (the client itself, not its builder: 3.5's builder sends its options at once)
    elsewhere = ConnectSession(connection="sc://spark.example.com:15002")
    with pytest.raises(SparkConnectNotSupportedError,
                       match=r"spark\.example\.com:15002|use PySpark 4\.0\+"):
        TopologyTestDriver(clicks_per_user, spark=elsewhere)


def _boom(value):  # no type hints: PySpark would read them as a pandas UDF
    if value == "poison":
        raise ValueError("cannot handle poison")
    return value


def failing(t: Topology) -> None:
    udf = F.udf(_boom, StringType())
    t.output("out", t.input("x", schema="v STRING").select(udf("v").alias("v")))


def test_failure_in_the_query_surfaces_with_batch_id_and_stops_the_queries(topology_driver,
                                                                          spark):
    driver = topology_driver(failing)
    x = driver.create_input_topic("x")
    x.pipe_input({"v": "fine"})
    driver.process_all_available()
    x.pipe_input({"v": "poison"})
    with pytest.raises(StreamingQueryFailedError) as info:
        driver.process_all_available()
    assert info.value.output == "out"
    assert info.value.batch_id == 1
    assert "ValueError: cannot handle poison" in info.value.cause
    assert "restart() retries batch 1" in str(info.value)
    assert not driver.closed and not driver.is_running
    assert spark.streams.active == []
    assert [b.batch_id for b in driver.batches] == [0]
