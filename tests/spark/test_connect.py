"""Spark Connect (issue 40): the driver runs Connect code, and what it hands back is
Connect's. Connect mode is a whole process's, so this module runs in the Connect suite
(``pytest --streamtest-connect``, the files of tox.ini's ``[connect]`` section, which run
the same tests as classic mode besides these); a classic process skips it. The
semantics themselves (batches, state, late records, restarts) are the parity suite's and
the examples', run in both modes."""

from __future__ import annotations

import sys
from datetime import timedelta

import pytest
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from pyspark_streamtest import (
    Feature,
    SparkConnectNotSupportedError,
    Topology,
    TopologyTestDriver,
    UnsupportedFeatureError,
    require_feature,
    supported_features,
)
from tests.helpers import T0, at


@pytest.fixture(autouse=True)
def _connect_mode_only(request: pytest.FixtureRequest) -> None:
    if not request.config.getoption("streamtest_connect"):
        pytest.skip("Connect mode is a whole process's: this module runs in the Connect "
                    "suite (pytest --streamtest-connect, tox.ini's [connect] section)")


def _is_connect(thing: object) -> bool:
    return type(thing).__module__.startswith("pyspark.sql.connect")


def counts(t: Topology) -> None:
    clicks = t.input("clicks", schema="user STRING, ts TIMESTAMP", timestamp_column="ts")
    t.output("counts", clicks.withWatermark("ts", "10 seconds")
             .groupBy(F.window("ts", "10 seconds"), "user").count())


def test_the_topology_gets_connect_objects_and_its_queries_are_the_session_s(spark):
    seen: dict[str, bool] = {}

    def topology(t: Topology) -> None:
        seen["session"] = _is_connect(t.spark) and t.spark is spark
        clicks = t.input("clicks", schema="user STRING, ts TIMESTAMP", timestamp_column="ts")
        seen["input"] = _is_connect(clicks) and clicks.isStreaming
        seen["column"] = _is_connect(F.col("user"))
        t.output("users", clicks.select(F.upper("user").alias("u")))

    with TopologyTestDriver(topology, spark=spark, start_time=T0) as driver:
        assert seen == {"session": True, "input": True, "column": True}
        driver.create_input_topic("clicks").pipe_input({"user": "ann"}, timestamp=at(1))
        driver.advance_wall_clock(timedelta(seconds=1))
        assert driver.create_output_topic("users").read_values_to_list() == [{"u": "ANN"}]
        # The driver's query runs in the client's own server-side session.
        assert len(spark.streams.active) == 1
    assert spark.streams.active == []


def test_foreach_batch_gets_each_batch_as_a_connect_dataframe_for_the_call_only(spark):
    calls: list[tuple[int, bool, list[str], int]] = []
    kept: list[DataFrame] = []

    def store(batch: DataFrame, batch_id: int) -> None:
        batch.createOrReplaceTempView("batch")
        in_sql = batch.sparkSession.sql("SELECT count(*) AS n FROM batch").first()
        users = sorted(r.user for r in batch.filter(F.col("user") != "x").collect())
        calls.append((batch_id, _is_connect(batch), users, in_sql.n if in_sql else -1))
        kept.append(batch)

    def topology(t: Topology) -> None:
        clicks = t.input("clicks", schema="user STRING, ts TIMESTAMP", timestamp_column="ts")
        t.foreach_batch("store", clicks, store)

    with TopologyTestDriver(topology, spark=spark, start_time=T0) as driver:
        clicks = driver.create_input_topic("clicks")
        clicks.pipe_input({"user": "b"}, timestamp=at(1))
        clicks.pipe_input({"user": "a"}, timestamp=at(2))
        clicks.pipe_input({"user": "x"}, timestamp=at(3))
        driver.advance_wall_clock(timedelta(seconds=1))
        assert calls == [(0, True, ["a", "b"], 3)]
        # As Connect's foreachBatch, the batch's relation is removed after the call.
        with pytest.raises(Exception, match=r"(?i)cache|not found|relation"):
            kept[0].collect()


def test_outputs_and_state_read_back_as_connect_dataframes(spark):
    with TopologyTestDriver(counts, spark=spark, start_time=T0) as driver:
        clicks = driver.create_input_topic("clicks")
        clicks.pipe_input({"user": "a"}, timestamp=at(1))
        clicks.pipe_input({"user": "a"}, timestamp=at(7))
        driver.advance_wall_clock(timedelta(seconds=1))
        clicks.pipe_input({"user": "b"}, timestamp=at(21))
        driver.advance_wall_clock(timedelta(seconds=2))
        out = driver.create_output_topic("counts").read_dataframe()
        assert _is_connect(out)
        assert [(r.user, r["count"]) for r in out.filter(F.col("count") > 1).collect()] == [
            ("a", 2)]
        if Feature.STATE_STORE_READS in supported_features(spark):
            state = driver.get_window_store("counts").to_dataframe()
            assert _is_connect(state)
            assert state.select("key.user").collect()[0].user == "b"


def job() -> None:
    """A job written for Connect: its session comes from a remote builder."""
    spark = SparkSession.builder.remote("sc://spark.example.com:15002").getOrCreate()
    clicks = (spark.readStream.format("kafka").option("subscribe", "clicks").load()
              .select(F.col("value").cast("string").alias("user")))
    clicks.groupBy("user").count().writeStream.outputMode("complete") \
        .format("memory").queryName("per_user").start()
    spark.streams.awaitAnyTermination()


def test_a_job_written_for_connect_runs_unchanged_under_from_app(spark):
    with TopologyTestDriver.from_app(job, spark=spark, start_time=T0) as driver:
        clicks = driver.create_input_topic("clicks", value_serializer="string")
        clicks.pipe_input("k1", "ann")
        clicks.pipe_input("k2", "ann")
        driver.advance_wall_clock(timedelta(seconds=1))
        assert sorted(driver.create_output_topic("per_user").read_values_to_list(),
                      key=str) == [{"user": "ann", "count": 2}]


@pytest.mark.parametrize("local_server", [True, False], ids=["with-our-server", "in-any-order"])
def test_a_session_of_another_connect_server_is_refused_before_any_request(request,
                                                                             local_server):
    from pyspark.sql.connect.session import SparkSession as ConnectSession

    if local_server:  # this process's own server runs (a worker's first test may not)
        request.getfixturevalue("spark")
    elsewhere = ConnectSession.builder.remote("sc://spark.example.com:15002").create()
    with pytest.raises(SparkConnectNotSupportedError, match=r"spark\.example\.com:15002"):
        TopologyTestDriver(counts, spark=elsewhere)


def test_transform_with_state_over_connect_needs_pyspark_4_1(spark):
    import pyspark

    if tuple(int(p) for p in pyspark.__version__.split(".")[:2]) >= (4, 1):
        require_feature(spark, Feature.TRANSFORM_WITH_STATE_IN_PANDAS)
        require_feature(spark, Feature.TRANSFORM_WITH_STATE)
        return
    with pytest.raises(UnsupportedFeatureError, match=r"over Spark Connect needs PySpark 4\.1"
                       ) as raised:
        require_feature(spark, Feature.TRANSFORM_WITH_STATE_IN_PANDAS)
    assert raised.value.over_connect and raised.value.added_in == "4.1"


def test_the_whole_process_is_in_connect_mode(spark):
    from pyspark.sql.utils import is_remote

    from pyspark_streamtest import test_spark_session

    assert is_remote() and _is_connect(spark)
    assert test_spark_session() is spark
    assert SparkSession.builder.getOrCreate() is spark
    assert "pyspark.sql.connect" in sys.modules


def test_the_client_s_temp_views_and_registered_udfs_reach_the_driver_s_queries(spark):
    spark.createDataFrame([("ann", "gold")], "user STRING, tier STRING") \
        .createOrReplaceTempView("tiers")
    spark.udf.register("shout", lambda s: s.upper(), "string")

    def topology(t: Topology) -> None:
        clicks = t.input("clicks", schema="user STRING, ts TIMESTAMP", timestamp_column="ts")
        t.output("tiered", clicks.join(t.spark.table("tiers"), "user")
                 .select(F.expr("shout(user)").alias("user"), "tier"))

    try:
        with TopologyTestDriver(topology, spark=spark, start_time=T0) as driver:
            driver.create_input_topic("clicks").pipe_input({"user": "ann"}, timestamp=at(1))
            driver.advance_wall_clock(timedelta(seconds=1))
            assert driver.create_output_topic("tiered").read_values_to_list() == [
                {"user": "ANN", "tier": "gold"}]
    finally:
        spark.catalog.dropTempView("tiers")


def test_a_session_with_artifacts_is_refused_naming_them(spark, tmp_path):
    """Files added with addArtifacts would not reach the driver's queries' tasks: a
    typed error says so (a session of its own: artifacts cannot be taken back)."""
    from pyspark.sql.connect.session import SparkSession as ConnectSession

    builder = spark.client._builder
    other = ConnectSession.builder.remote(
        f"sc://localhost:{builder.endpoint.rsplit(':', 1)[1]}/;token={builder.token}").create()
    helper = tmp_path / "shout_helpers.py"
    helper.write_text("def shout(s):\n    return s.upper()\n")
    other.addArtifacts(str(helper), pyfile=True)
    with pytest.raises(SparkConnectNotSupportedError, match=r"has 1 artifact added"):
        TopologyTestDriver(counts, spark=other)


def test_a_batch_is_bound_to_the_session_this_pyspark_s_connect_binds_it_to(spark):
    """PySpark 4.3's Connect binds a foreachBatch batch to the query's own session (a
    clone, also the active session during the call), as classic foreachBatch does;
    4.0-4.2 bind it to the client's session."""
    import pyspark
    from pyspark.sql.connect.session import SparkSession as ConnectSession

    seen: list[tuple[bool, bool, bool]] = []

    def store(batch: DataFrame, batch_id: int) -> None:
        own = batch.sparkSession
        batch.createOrReplaceTempView("this_batch")
        seen.append((own.session_id == spark.session_id,
                     ConnectSession.getActiveSession() is own,
                     own.sql("SELECT count(*) AS n FROM this_batch").first().n == 2))

    def topology(t: Topology) -> None:
        t.foreach_batch("store", t.input("clicks", schema="user STRING"), store)

    with TopologyTestDriver(topology, spark=spark, start_time=T0) as driver:
        driver.create_input_topic("clicks").pipe_value_list([{"user": "a"}, {"user": "b"}])
        driver.process_all_available()
        clones = tuple(int(p) for p in pyspark.__version__.split(".")[:2]) >= (4, 3)
        assert seen == [(not clones, True, True)]
        # the view was made in the batch's session: the client's only where that is it
        assert spark.catalog.tableExists("this_batch") is not clones
    if not clones:
        spark.catalog.dropTempView("this_batch")
