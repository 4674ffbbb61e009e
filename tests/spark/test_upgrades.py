"""Upgrades from a checkpoint: save_checkpoint, checkpoint=, restart(topology=...), and
which changes Spark allows on restart from the same checkpoint (each row of the docs'
table "Upgrade a job from its checkpoint" has a test here)."""

from __future__ import annotations

import hashlib
import os
from datetime import timedelta

import pyspark
import pytest
from pyspark.sql import functions as F

from pyspark_streamtest import (
    DriverStoppedError,
    IncompatibleCheckpointError,
    InvalidArgumentError,
    InvalidArgumentTypeError,
    StaleTopicError,
    StreamingQueryFailedError,
    TimeWentBackwardsError,
    Topology,
    TopologyError,
)
from tests.helpers import at, clicks_per_user, counts_per_user, window

SECOND = timedelta(seconds=1)
SPARK_3 = pyspark.__version__.startswith("3.")
SCHEMA = "user STRING, url STRING, ts TIMESTAMP"


def _clicks(t: Topology):
    return t.input("clicks", schema=SCHEMA, timestamp_column="ts")


def _values(batches):
    return [(b.batch_id, sorted(map(repr, (r.value for r in b.output_records))))
            for b in batches]


def _tree_digest(path) -> str:
    digest = hashlib.sha256()
    for root, dirs, files in sorted(os.walk(path)):
        dirs.sort()
        for name in sorted(files):
            digest.update(os.path.relpath(os.path.join(root, name), path).encode())
            with open(os.path.join(root, name), "rb") as file:
                digest.update(file.read())
    return digest.hexdigest()


def _run_counts(driver, *users):
    clicks = driver.create_input_topic("clicks")
    for user in users:
        clicks.pipe_input({"user": user, "url": "/"}, timestamp=at(1))
    return driver.advance_wall_clock(SECOND)


# --- save and go on ----------------------------------------------------------------------
def test_a_new_driver_goes_on_from_a_saved_checkpoint(topology_driver, tmp_path):
    saved = tmp_path / "saved"
    first = topology_driver(clicks_per_user)
    clicks = first.create_input_topic("clicks")
    clicks.pipe_input({"user": "a", "url": "/"}, timestamp=at(1))
    clicks.pipe_input({"user": "a", "url": "/"}, timestamp=at(12))
    first.process_all_available()
    first.save_checkpoint(saved)
    digest = _tree_digest(saved)
    # The driver goes on, and a second driver from the same copy gives what it gives.
    clicks.pipe_input({"user": "a", "url": "/"}, timestamp=at(5))
    clicks.pipe_input({"user": "b", "url": "/"}, timestamp=at(40))
    expected = first.process_all_available()
    assert first.watermark("counts") == at(30)

    second = topology_driver(clicks_per_user, checkpoint=saved)
    assert second.current_time == first.current_time - timedelta(0)  # the saved time
    assert second.watermark("counts") == at(2)
    clicks = second.create_input_topic("clicks")
    clicks.pipe_input({"user": "a", "url": "/"}, timestamp=at(5))
    clicks.pipe_input({"user": "b", "url": "/"}, timestamp=at(40))
    ran = second.process_all_available()
    assert [b.batch_id for b in ran] == [b.batch_id for b in expected]
    assert _values(ran) == _values(expected)
    assert second.create_output_topic("counts").read_values_to_list() == [
        {"window": window(0, 10), "user": "a", "count": 2},  # one count from before the save
        {"window": window(10, 20), "user": "a", "count": 1},
    ]
    assert _tree_digest(saved) == digest  # the saved copy is never changed


def test_late_records_after_a_resume_are_dropped_by_the_saved_watermark(
    topology_driver, tmp_path
):
    first = topology_driver(clicks_per_user)
    clicks = first.create_input_topic("clicks")
    clicks.pipe_input({"user": "a", "url": "/"}, timestamp=at(25))
    first.process_all_available()
    first.save_checkpoint(tmp_path / "saved")
    second = topology_driver(clicks_per_user, checkpoint=tmp_path / "saved")
    clicks = second.create_input_topic("clicks")
    clicks.pipe_input({"user": "late", "url": "/"}, timestamp=at(3))  # behind 15 s
    batch = second.process_all_available()[0]
    assert batch.num_rows_dropped_by_watermark == 1
    assert [late.record.value["user"] for late in second.late_records("counts")] == ["late"]


def _filtered_clicks_per_user(t: Topology) -> None:
    clicks = t.input("clicks", schema="user STRING, url STRING, ts TIMESTAMP",
                     timestamp_column="ts")
    t.output("counts", clicks.withWatermark("ts", "10 seconds").filter("user != 'bot'")
             .groupBy(F.window("ts", "10 seconds"), "user").count())


def test_late_records_evaluated_from_the_plan_after_a_resume_use_the_saved_watermark(
    topology_driver, tmp_path
):
    """A filter before the aggregation makes the driver evaluate late records from the
    plan (not from the piped timestamps): the first batch after the resume compares
    with the saved checkpoint's last watermark, as Spark does."""
    first = topology_driver(_filtered_clicks_per_user)
    first.create_input_topic("clicks").pipe_input({"user": "a", "url": "/"}, timestamp=at(25))
    first.process_all_available()
    first.save_checkpoint(tmp_path / "saved")
    second = topology_driver(_filtered_clicks_per_user, checkpoint=tmp_path / "saved")
    clicks = second.create_input_topic("clicks")
    clicks.pipe_input({"user": "late", "url": "/"}, timestamp=at(3))  # behind 15 s
    clicks.pipe_input({"user": "bot", "url": "/"}, timestamp=at(4))  # filtered out
    assert second.process_all_available()[0].num_rows_dropped_by_watermark == 1
    assert [late.record.value["user"] for late in second.late_records("counts")] == ["late"]


def test_kafka_offsets_go_on_in_the_new_driver(topology_driver, tmp_path):
    def kafka(t: Topology) -> None:
        events = t.kafka_input("events", partitions=2)
        t.kafka_output("copied", events.select("key", "value"), topic="out", partitions=2)

    first = topology_driver(kafka)
    topic = first.create_input_topic("events", key_serializer="string",
                                      value_serializer="string")
    topic.pipe_input("k", "1")
    topic.pipe_input("k", "2")
    first.process_all_available()
    first.save_checkpoint(tmp_path / "saved")
    second = topology_driver(kafka, checkpoint=tmp_path / "saved")
    topic = second.create_input_topic("events", key_serializer="string",
                                      value_serializer="string")
    topic.pipe_input("k", "3")
    batch = second.process_all_available()[0]
    assert [(r.partition, r.offset) for r in batch.input_records] == [(
        first.batches[-1].input_records[-1].partition, 2)]
    out = batch.output_records[0]
    assert out.offset == 2 and out.value == b"3"


# --- upgrades in place -------------------------------------------------------------------
def test_restart_with_a_new_projection_keeps_state_and_batch_ids(topology_driver):
    def with_flag(t: Topology) -> None:
        counts = _clicks(t).groupBy("user").count()
        t.output("counts", counts.withColumn("many", F.col("count") > 1), output_mode="update")

    driver = topology_driver(counts_per_user)
    _run_counts(driver, "a")
    driver.restart(topology=with_flag)
    ran = _run_counts(driver, "a")
    assert [b.batch_id for b in ran] == [1]
    assert [r.value for r in ran[0].output_records] == [{"user": "a", "count": 2, "many": True}]
    assert [b.batch_id for b in driver.batches] == [0, 1]


def test_records_piped_while_stopped_reach_the_new_version(topology_driver):
    driver = topology_driver(counts_per_user)
    _run_counts(driver, "a")
    driver.stop()
    driver.create_input_topic("clicks").pipe_input({"user": "a", "url": "/"}, timestamp=at(2))

    def renamed(t: Topology) -> None:
        t.output("counts", _clicks(t).groupBy("user").count()
                 .withColumnRenamed("count", "n"), output_mode="update")

    ran = driver.restart(topology=renamed)
    assert [(b.batch_id, [r.value for r in b.output_records]) for b in ran] == [
        (1, [{"user": "a", "n": 2}])
    ]


def test_fix_and_resume_retries_the_failed_batch_with_the_fixed_version(topology_driver):
    def parse(t: Topology, fixed: bool) -> None:
        clicks = _clicks(t)
        digits = F.col("url").rlike("^[0-9]+$")
        # the bug: a url that is not a number fails the batch
        other = F.lit(None) if fixed else F.raise_error(F.lit("not a number"))
        number = F.when(digits, F.col("url")).otherwise(other)
        t.output("numbers", clicks.select("user", number.alias("n")), output_mode="append")

    driver = topology_driver(lambda t: parse(t, fixed=False))
    clicks = driver.create_input_topic("clicks")
    clicks.pipe_input({"user": "a", "url": "1"}, timestamp=at(1))
    driver.advance_wall_clock(SECOND)
    clicks.pipe_input({"user": "b", "url": "oops"}, timestamp=at(2))
    with pytest.raises(StreamingQueryFailedError) as failed:
        driver.advance_wall_clock(SECOND)
    assert failed.value.batch_id == 1
    with pytest.raises(DriverStoppedError, match="awaits its retry"):
        driver.save_checkpoint("/nonexistent/never-written")
    ran = driver.restart(topology=lambda t: parse(t, fixed=True))
    assert [(b.batch_id, [r.value for r in b.output_records]) for b in ran] == [
        (1, [{"user": "b", "n": None}])
    ]
    assert [r.value["user"] for r in ran[0].input_records] == ["b"]
    assert [r.value for r in driver.batches[0].output_records] == [{"user": "a", "n": "1"}]


def test_an_added_output_starts_fresh_and_a_dropped_one_stops(topology_driver):
    def two(t: Topology) -> None:
        clicks = _clicks(t)
        t.output("users", clicks.select("user"), output_mode="append")

    driver = topology_driver(counts_per_user)
    _run_counts(driver, "a")
    driver.restart(topology=two)
    assert driver.output_names == ("users",)
    ran = _run_counts(driver, "b")
    assert [(b.output, b.batch_id, [r.value for r in b.output_records]) for b in ran] == [
        ("users", 0, [{"user": "b"}])
    ]


def test_topic_handles_of_the_old_version_are_stale(topology_driver):
    driver = topology_driver(counts_per_user)
    clicks = driver.create_input_topic("clicks")
    driver.restart(topology=counts_per_user)
    with pytest.raises(StaleTopicError, match=r"restart\(topology=\.\.\.\)"):
        clicks.pipe_input({"user": "a", "url": "/"}, timestamp=at(1))


# --- what Spark allows and refuses --------------------------------------------------------
def _count_then(driver, version):
    """Run a count, upgrade to ``version``, pipe one more record; the batches run."""
    _run_counts(driver, "a")
    driver.restart(topology=version)
    return _run_counts(driver, "a")


def _operators_refused(driver, version) -> str:
    """Upgrade to ``version``, which Spark refuses for its stateful operators; the
    error's summary of them."""
    with pytest.raises(IncompatibleCheckpointError, match="stateful operator") as refused:
        _count_then(driver, version)
    assert "STREAMING_STATEFUL_OPERATOR_NOT_MATCH_IN_STATE_METADATA" in refused.value.cause
    return refused.value.operator


def test_another_aggregate_is_refused_and_the_old_version_rolls_back(topology_driver):
    def with_sum(t: Topology) -> None:
        counts = _clicks(t).groupBy("user").agg(F.count("*").alias("count"),
                                                F.max("url").alias("last"))
        t.output("counts", counts, output_mode="update")

    driver = topology_driver(counts_per_user)
    with pytest.raises(IncompatibleCheckpointError, match="value schema") as refused:
        _count_then(driver, with_sum)
    assert refused.value.output == "counts" and refused.value.batch_id == 1
    assert "STATE_STORE_VALUE_SCHEMA_NOT_COMPATIBLE" in refused.value.cause or (
        "StateSchemaNotCompatible" in refused.value.cause)
    ran = driver.restart(topology=counts_per_user)  # roll back: the batch is retried
    assert [(b.batch_id, [r.value for r in b.output_records]) for b in ran] == [
        (1, [{"user": "a", "count": 2}])
    ]


def test_grouping_keys_of_another_type_are_refused(topology_driver):
    def by_length(t: Topology) -> None:
        counts = _clicks(t).groupBy(F.length("user").alias("user")).count()
        t.output("counts", counts, output_mode="update")

    driver = topology_driver(counts_per_user)
    with pytest.raises(IncompatibleCheckpointError, match="key"):
        _count_then(driver, by_length)


def test_grouping_by_another_column_of_the_same_type_is_accepted(topology_driver):
    # Spark checks the state's types, not its column names: the old counts are read as
    # the counts of the new key (the docs warn about this one).
    def by_url(t: Topology) -> None:
        counts = _clicks(t).groupBy(F.col("url").alias("user")).count()
        t.output("counts", counts, output_mode="update")

    driver = topology_driver(counts_per_user)
    ran = _count_then(driver, by_url)
    assert [r.value for r in ran[0].output_records] == [{"user": "/", "count": 1}]


def test_another_stateful_operator_is_refused_from_spark_4(topology_driver):
    def deduplicated(t: Topology) -> None:
        t.output("counts", _clicks(t).dropDuplicates(["user"]), output_mode="append")

    driver = topology_driver(counts_per_user)
    if SPARK_3:
        # Spark 3.5 keeps no operator metadata and checks schemas only (a string key
        # either way): the count's state is read as "seen" by dropDuplicates.
        ran = _count_then(driver, deduplicated)
        assert [(b.batch_id, b.num_input_rows, b.output_records) for b in ran] == [(1, 1, ())]
        return
    # both sides named, and what happened to them (not "a -> b", which read as a rename)
    assert _operators_refused(driver, deduplicated) == (
        "the checkpoint's stateful operators are stateStoreSave, the new version's "
        "dedupe: removed stateStoreSave; added dedupe")


@pytest.mark.skipif(SPARK_3, reason="Spark 3.5 keeps no operator metadata to compare")
def test_a_stateful_operator_removed_with_nothing_added_is_said_so(topology_driver):
    """The issue's case: the new version only drops the deduplication before the count;
    the summary says what was removed, not that one operator became the other."""
    def deduplicated_counts(t: Topology) -> None:
        counts = _clicks(t).dropDuplicates(["user", "url"]).groupBy("user").count()
        t.output("counts", counts, output_mode="update")

    driver = topology_driver(deduplicated_counts)
    assert _operators_refused(driver, counts_per_user) == (
        "the checkpoint's stateful operators are stateStoreSave, dedupe, the new version's "
        "stateStoreSave: removed dedupe")


def test_another_input_in_a_query_is_refused(topology_driver):
    def two_inputs(t: Topology) -> None:
        more = t.input("more", schema=SCHEMA, timestamp_column="ts")
        counts = _clicks(t).unionByName(more).groupBy("user").count()
        t.output("counts", counts, output_mode="update")

    driver = topology_driver(counts_per_user)
    with pytest.raises(IncompatibleCheckpointError, match="number of sources"):
        _count_then(driver, two_inputs)


def test_another_watermark_delay_and_output_mode_are_accepted(topology_driver):
    def longer_delay_update(t: Topology) -> None:
        counts = (_clicks(t).withWatermark("ts", "30 seconds")
                  .groupBy(F.window("ts", "10 seconds"), "user").count())
        t.output("counts", counts, output_mode="update")

    driver = topology_driver(clicks_per_user)
    clicks = driver.create_input_topic("clicks")
    clicks.pipe_input({"user": "a", "url": "/"}, timestamp=at(1))
    clicks.pipe_input({"user": "a", "url": "/"}, timestamp=at(15))
    driver.process_all_available()
    assert driver.watermark("counts") == at(5)
    driver.restart(topology=longer_delay_update)
    clicks = driver.create_input_topic("clicks")
    clicks.pipe_input({"user": "a", "url": "/"}, timestamp=at(6))
    ran = driver.process_all_available()
    assert [r.value for r in ran[0].output_records] == [
        {"window": window(0, 10), "user": "a", "count": 2}
    ]
    assert driver.watermark("counts") == at(5)  # never moves back


# --- misuse -------------------------------------------------------------------------------
def test_saving_over_a_folder_or_loading_a_plain_one_is_refused(topology_driver, tmp_path):
    driver = topology_driver(counts_per_user)
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "file").write_text("x")
    with pytest.raises(InvalidArgumentError, match="not an empty folder"):
        driver.save_checkpoint(tmp_path / "full")
    with pytest.raises(InvalidArgumentError, match="not a checkpoint saved by"):
        topology_driver(counts_per_user, checkpoint=tmp_path / "full")
    with pytest.raises(InvalidArgumentTypeError, match="path of a saved checkpoint"):
        topology_driver(counts_per_user, checkpoint=42)
    driver.save_checkpoint(tmp_path / "saved")
    with pytest.raises(TimeWentBackwardsError, match="before the saved checkpoint"):
        topology_driver(counts_per_user, checkpoint=tmp_path / "saved",
                        start_time=at(0) - SECOND)


def test_a_join_resumes_with_each_source_at_its_own_offset(topology_driver, tmp_path):
    # Two sources whose offsets differ: each new stream must be padded to its own.
    def joined(t: Topology) -> None:
        views = t.input("views", schema="ad STRING, vt TIMESTAMP", timestamp_column="vt")
        clicks = t.input("clicks", schema="ad STRING, ct TIMESTAMP", timestamp_column="ct")
        t.output("matched", views.withWatermark("vt", "1 minute").join(
            clicks.withWatermark("ct", "1 minute"), "ad"), output_mode="append")

    rocksdb = {"spark.sql.streaming.stateStore.providerClass":
               "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider"}
    first = topology_driver(joined, sql_conf=rocksdb)
    views = first.create_input_topic("views")
    for second in range(3):
        views.pipe_input({"ad": f"v{second}", "vt": at(second)})
        first.advance_wall_clock(SECOND)
    first.create_input_topic("clicks").pipe_input({"ad": "x", "ct": at(1)})
    first.advance_wall_clock(SECOND)
    first.save_checkpoint(tmp_path / "saved")

    resumed = topology_driver(joined, checkpoint=tmp_path / "saved", sql_conf=rocksdb)
    resumed.create_input_topic("clicks").pipe_input({"ad": "v1", "ct": at(2)})
    resumed.create_input_topic("views").pipe_input({"ad": "x", "vt": at(3)})
    ran = resumed.advance_wall_clock(SECOND)
    assert [b.batch_id for b in ran][:1] == [4]
    assert sorted(r.value["ad"] for b in ran for r in b.output_records) == ["v1", "x"]
    assert ran[0].num_input_rows == 2  # nothing piped before the save is read again


# --- jobs run by from_app ---------------------------------------------------------------------
def _payments_job(with_currency: bool):
    def main(spark) -> None:
        payments = (spark.readStream.format("kafka").option("subscribe", "payments").load()
                    .select(F.col("key").cast("string").alias("account")))
        totals = payments.groupBy("account").count()
        if with_currency:
            totals = totals.withColumn("currency", F.lit("EUR"))
        totals.writeStream.outputMode("update").format("memory").queryName("totals").start()
        spark.streams.awaitAnyTermination()

    return main


def test_a_job_upgrades_to_its_next_version_with_restart_app(topology_driver):
    driver = topology_driver.from_app(_payments_job(with_currency=False))
    driver.create_input_topic("payments", key_serializer="string").pipe_input("acc-1", b"1")
    driver.advance_wall_clock(SECOND)
    driver.restart(app=_payments_job(with_currency=True))
    driver.create_input_topic("payments", key_serializer="string").pipe_input("acc-1", b"2")
    [batch] = driver.advance_wall_clock(SECOND)
    assert [r.value for r in batch.output_records] == [
        {"account": "acc-1", "count": 2, "currency": "EUR"}
    ]
    with pytest.raises(InvalidArgumentError, match="not both"):
        driver.restart(app=_payments_job(True), topology=counts_per_user)
    assert driver.is_running  # nothing was stopped


def _payments_by_length(spark) -> None:
    """An incompatible next version: its state key is an int, not the account."""
    payments = (spark.readStream.format("kafka").option("subscribe", "payments").load()
                .select(F.length(F.col("key").cast("string")).alias("account")))
    (payments.groupBy("account").count()
     .writeStream.outputMode("update").format("memory").queryName("totals").start())


def test_a_job_spark_refuses_to_upgrade_names_restart_app_to_go_on(topology_driver):
    """The refusal of a from_app driver's upgrade says how that driver goes on."""
    driver = topology_driver.from_app(_payments_job(with_currency=False))
    payments = driver.create_input_topic("payments", key_serializer="string")
    payments.pipe_input("acc-1", b"1")
    driver.advance_wall_clock(SECOND)
    driver.restart(app=_payments_by_length)
    driver.create_input_topic("payments", key_serializer="string").pipe_input("acc-1", b"2")
    with pytest.raises(IncompatibleCheckpointError, match="key") as refused:
        driver.advance_wall_clock(SECOND)
    assert refused.value.from_app
    assert "The queries are stopped: restart(app=...) with a compatible version" in str(
        refused.value)
    assert "restart(topology=" not in str(refused.value).split("Spark's error:")[0]
    # roll back: the restart retries the failed batch at once, with the old version
    [batch] = driver.restart(app=_payments_job(with_currency=False))
    assert [r.value for r in batch.output_records] == [{"account": "acc-1", "count": 2}]


def test_restart_app_needs_a_driver_made_by_from_app(topology_driver):
    driver = topology_driver(counts_per_user)
    with pytest.raises(InvalidArgumentError, match="made by from_app"):
        driver.restart(app=_payments_job(True))
    assert driver.is_running


def test_a_new_version_that_fails_to_build_leaves_the_old_one_stopped(topology_driver):
    driver = topology_driver(counts_per_user)
    _run_counts(driver, "a")
    with pytest.raises(TopologyError, match="declared no output"):
        driver.restart(topology=lambda t: None)
    assert not driver.is_running
    driver.start()  # the old version goes on
    assert [r.value for b in _run_counts(driver, "a") for r in b.output_records] == [
        {"user": "a", "count": 2}
    ]
