"""``TopologyTestDriver.from_app``: a job's own streaming calls, run as real queries."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pytest
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from pyspark_streamtest import (
    InvalidArgumentError,
    InvalidArgumentTypeError,
    TopologyTestDriver,
    UnknownTopicError,
    UnsupportedAppCallError,
)
from pyspark_streamtest.kafka import KAFKA_SOURCE_SCHEMA
from tests.helpers import T0, at

KAFKA_COLUMNS = [f.name for f in KAFKA_SOURCE_SCHEMA.fields]


def as_text(df: DataFrame, source: str, column: str) -> DataFrame:
    return df.select(F.lit(source).alias("source"), F.col(column).cast("string").alias("v"))


def test_every_source_kind_becomes_an_input_with_the_source_columns(spark, tmp_path):
    spark.range(0).selectExpr("'x' AS account", "0L AS limit_eur").createOrReplaceTempView(
        "accounts_live")
    seen: dict[str, list[str]] = {}

    def job(spark: SparkSession) -> None:
        reads = {
            "kafka": spark.readStream.format("kafka").option("subscribe", "orders, refunds")
            .option("includeHeaders", True).load(),
            "rate": spark.readStream.format("rate").option("rowsPerSecond", 10).load(),
            "socket": spark.readStream.format("socket").option("host", "localhost")
            .option("port", 9999).option("includeTimestamp", "true").load(),
            "json": spark.readStream.schema("id INT, name STRING").json("s3a://in/json-orders/"),
            "csv": spark.readStream.csv("/data/csv-orders", schema="id INT, name STRING"),
            "parquet": spark.readStream.schema("id INT").load("/data/parquet-orders"),
            "text": spark.readStream.text("/data/log-lines"),
            "table": spark.readStream.table("accounts_live"),
            "delta": spark.readStream.format("delta").load("/lake/customers"),
        }
        seen.update({kind: df.columns for kind, df in reads.items()})
        column = {"kafka": "value", "rate": "value", "socket": "value", "json": "name",
                  "csv": "name", "parquet": "id", "text": "value", "table": "account",
                  "delta": "customer"}
        union = None
        for kind, df in reads.items():
            frame = as_text(df, kind, column[kind])
            union = frame if union is None else union.unionByName(frame)
        assert union is not None
        union.writeStream.format("memory").queryName("everything").start()

    with TopologyTestDriver.from_app(
        job, spark=spark, schemas={"/lake/customers": "customer STRING"},
        inputs={"/data/log-lines": "lines"},
    ) as driver:
        assert sorted(driver.input_names) == sorted([
            "orders", "refunds", "rate", "socket", "json-orders", "csv-orders",
            "parquet-orders", "lines", "accounts_live", "customers"])
        assert seen["kafka"] == [*KAFKA_COLUMNS, "headers"]
        assert seen["rate"] == ["timestamp", "value"]
        assert seen["socket"] == ["value", "timestamp"]
        assert seen["text"] == ["value"]
        assert seen["table"] == ["account", "limit_eur"]

        driver.create_input_topic("orders", value_serializer="string").pipe_input("k", "o1")
        driver.create_input_topic("refunds", value_serializer="string").pipe_input("k", "r1")
        driver.create_input_topic("rate").pipe_input({"value": 7}, timestamp=at(0))
        driver.create_input_topic("socket").pipe_input({"value": "line"}, timestamp=at(0))
        driver.create_input_topic("json-orders").pipe_input({"id": 1, "name": "j"})
        driver.create_input_topic("csv-orders").pipe_input({"id": 2, "name": "c"})
        driver.create_input_topic("parquet-orders").pipe_input({"id": 3})
        driver.create_input_topic("lines").pipe_input({"value": "t"})
        driver.create_input_topic("accounts_live").pipe_input({"account": "a", "limit_eur": 1})
        driver.create_input_topic("customers").pipe_input({"customer": "d"})
        driver.process_all_available()
        rows = driver.create_output_topic("everything").read_values_to_list()
        assert sorted((r["source"], r["v"]) for r in rows) == sorted([
            ("kafka", "o1"), ("kafka", "r1"), ("rate", "7"), ("socket", "line"),
            ("json", "j"), ("csv", "c"), ("parquet", "3"), ("text", "t"), ("table", "a"),
            ("delta", "d")])


def test_every_sink_kind_becomes_an_output_and_no_production_path_is_written(spark, tmp_path):
    calls: list[tuple[int, int]] = []
    paths = [tmp_path / name for name in ("out-parquet", "ck")]

    def job(spark: SparkSession) -> None:
        events = (spark.readStream.format("kafka").option("subscribe", "events").load()
                  .select(F.col("key"), F.col("value").cast("string").alias("value")))
        checkpoint = str(tmp_path / "ck")
        events.writeStream.format("kafka").option("topic", "copied") \
            .option("checkpointLocation", f"{checkpoint}/1").start()
        events.withColumn("topic", F.concat(F.lit("to-"), F.col("value"))) \
            .writeStream.format("kafka").queryName("routed").start()
        events.writeStream.format("memory").queryName("in_memory").start()
        events.writeStream.format("console").start()
        events.writeStream.format("noop").start()
        events.writeStream.start(str(tmp_path / "out-parquet"), format="parquet",
                                 checkpointLocation=f"{checkpoint}/2")
        events.writeStream.toTable("events_table")
        events.writeStream.foreachBatch(lambda df, batch_id: calls.append(
            (batch_id, df.count()))).start().awaitTermination()

    with TopologyTestDriver.from_app(job, spark=spark) as driver:
        assert driver.output_names == ("copied", "routed", "in_memory", "console", "noop",
                                       "out-parquet", "events_table", "foreachBatch")
        driver.create_input_topic("events", value_serializer="string").pipe_input("k", "x")
        driver.process_all_available()
        assert driver.produced_topic_names() == {
            "copied", "to-x", "in_memory", "console", "noop", "out-parquet", "events_table",
            "foreachBatch"}
        assert driver.create_output_topic(
            "to-x", value_deserializer="string").read_value() == "x"
        for name in ("in_memory", "console", "noop", "out-parquet", "events_table"):
            assert driver.create_output_topic(name).read_value()["value"] == "x", name
        assert calls == [(0, 1)]
    assert not any(path.exists() for path in paths)
    assert not spark.catalog.tableExists("events_table")


def test_the_queries_run_on_the_jobs_trigger_interval(spark):
    def job(spark: SparkSession) -> None:
        rows = spark.readStream.schema("id INT").json("/in/rows")
        rows.writeStream.format("console").trigger(processingTime="10 seconds").start()
        rows.writeStream.format("memory").queryName("copy") \
            .trigger(processingTime="10 seconds").start()

    with TopologyTestDriver.from_app(job, spark=spark, start_time=T0) as driver:
        driver.create_input_topic("rows").pipe_input({"id": 1})
        assert driver.advance_wall_clock(timedelta(seconds=9)) == []
        ran = driver.advance_wall_clock(timedelta(seconds=1))
        assert {(b.output, b.processing_time) for b in ran} == {
            ("console", at(10)), ("copy", at(10))}
    # The test may choose the interval itself.
    with TopologyTestDriver.from_app(job, spark=spark, start_time=T0,
                                     trigger_interval=timedelta(seconds=1)) as driver:
        driver.create_input_topic("rows").pipe_input({"id": 1})
        assert len(driver.advance_wall_clock(timedelta(seconds=1))) == 2


def test_each_query_runs_on_its_own_interval(spark):
    def job(spark: SparkSession) -> None:
        rows = spark.readStream.schema("id INT").json("/in/rows")
        rows.writeStream.format("console").trigger(processingTime="10 seconds").start()
        rows.writeStream.format("noop").trigger(processingTime="1 minute").start()
        rows.writeStream.format("memory").queryName("fast").start()  # Spark's default

    with TopologyTestDriver.from_app(job, spark=spark, start_time=T0) as driver:
        rows = driver.create_input_topic("rows")
        rows.pipe_input({"id": 1})
        ran = driver.advance_wall_clock(timedelta(seconds=30))
        assert [(b.output, b.processing_time) for b in ran] == [
            ("fast", at(1)), ("console", at(10))]
        rows.pipe_input({"id": 2})
        ran = driver.advance_wall_clock(timedelta(seconds=30))
        assert [(b.output, b.processing_time, b.num_input_rows) for b in ran] == [
            ("fast", at(31), 1), ("console", at(40), 1), ("noop", at(60), 2)]


def test_available_now_and_once_queries_read_their_backlog_and_end(spark):
    def job(spark: SparkSession) -> None:
        rows = spark.readStream.schema("id INT").json("/in/rows")
        rows.writeStream.format("console").trigger(availableNow=True).start()
        rows.writeStream.format("noop").trigger(once=True).start()

    with TopologyTestDriver.from_app(job, spark=spark, start_time=T0) as driver:
        # The job started with nothing to read: both backfills ended at once.
        assert not driver.is_running and driver.batches == ()
        assert driver.ended_outputs == ("console", "noop")
        driver.create_input_topic("rows").pipe_input({"id": 1})
        assert [(b.output, b.num_input_rows) for b in driver.restart()] == [
            ("console", 1), ("noop", 1)]
        assert not driver.is_running


def _is_pyspark_reader(reader: object) -> bool:
    """PySpark's own ``DataStreamReader`` (classic, or Connect's in a Connect run)."""
    return type(reader).__name__ == "DataStreamReader" and type(
        reader).__module__.startswith("pyspark.sql.")


def test_pyspark_is_restored_after_the_job_also_when_it_fails(spark):
    def failing(spark: SparkSession) -> None:
        spark.readStream.format("rate").load()
        raise RuntimeError("the job's own bug")

    before = {name: getattr(type(spark), name) for name in ("stop", "readStream")}
    writer = type(spark.range(1)).writeStream
    with pytest.raises(RuntimeError, match="the job's own bug"):
        TopologyTestDriver.from_app(failing, spark=spark)
    assert {name: getattr(type(spark), name) for name in before} == before
    assert type(spark.range(1)).writeStream is writer
    assert type(spark.streams).awaitAnyTermination.__qualname__.startswith(
        "StreamingQueryManager.")
    assert _is_pyspark_reader(spark.readStream)


def test_waits_and_stops_in_the_job_do_not_block_or_end_the_session(spark):
    partitions = spark.conf.get("spark.sql.shuffle.partitions")
    got: list[SparkSession] = []

    def job() -> None:
        spark = SparkSession.builder.config("spark.sql.shuffle.partitions", "97") \
            .appName("production").getOrCreate()
        got.append(spark)
        query = spark.readStream.format("rate").load().writeStream.format("noop").start()
        assert query.awaitTermination() is None
        assert query.awaitTermination(60) is True
        spark.streams.awaitAnyTermination()
        query.stop()
        spark.stop()

    try:
        session = spark.newSession()  # not the default session: the job still gets it
    except AttributeError:  # PySpark 4.0's Spark Connect session has no newSession
        session = spark
    with TopologyTestDriver.from_app(job, spark=session) as driver:
        assert driver.output_names == ("noop",)
    # (the differential oracle calls the job once more, for its query run by Spark alone)
    assert got and all(s is session for s in got)
    assert spark.range(3).count() == 3  # the test's session is still alive
    assert spark.conf.get("spark.sql.shuffle.partitions") == partitions


@pytest.mark.parametrize(("job", "message"), [
    (lambda s: s.readStream.format("kinesis").load(),
     r"streaming source 'kinesis' is not supported by from_app; supported: kafka, rate"),
    (lambda s: s.readStream.format("rate").load().writeStream.format("kinesis").start(),
     r"streaming sink 'kinesis' is not supported by from_app; supported: kafka"),
    (lambda s: s.readStream.format("rate").load().writeStream.foreach(3).start(),
     r"writeStream.foreach\(int\): the writer must be a function of a row"),
    (lambda s: s.readStream.format("kafka").option("subscribePattern", "orders-.*").load(),
     r"pattern 'orders-\.\*'.*from_app\(\.\.\., topics=\["),
    (lambda s: s.readStream.schema("id INT").option("maxFilesPerTrigger", 2).json("/in/r"),
     r"maxFilesPerTrigger=2.*ignore_options=\{'maxFilesPerTrigger'\}"),
    (lambda s: s.readStream.json("/in/no-schema"),
     r"json path '/in/no-schema' without stating its schema.*schemas="),
    (lambda s: s.readStream.format("rate").load().writeStream.format("memory").start(),
     r"format\('memory'\) needs a queryName"),
    (lambda s: s.readStream.format("rate").load().writeStream
     .trigger(continuous="1 second").start(), r"continuous processing is not supported"),
    (lambda s: s.readStream.format("rate").load().writeStream
     .trigger(processingTime="soon").start(), r"trigger\(processingTime='soon'\)"),
    (lambda s: s.readStream.changes("t"), r"readStream.changes\(\.\.\.\) is not supported"),
], ids=["source", "sink", "foreach", "pattern", "rate-limit", "schema", "memory",
        "continuous", "interval", "verb"])
def test_what_cannot_run_is_refused_naming_the_call(spark, job, message):
    with pytest.raises(UnsupportedAppCallError, match=message):
        TopologyTestDriver.from_app(job, spark=spark)
    assert _is_pyspark_reader(spark.readStream)


def test_a_pattern_matches_the_topics_named_up_front_and_rate_limits_can_be_let_through(spark):
    def job(spark: SparkSession) -> None:
        (spark.readStream.format("kafka").option("subscribePattern", "orders-.*")
         .option("maxOffsetsPerTrigger", 1).load()
         .writeStream.format("memory").queryName("orders").start())

    with TopologyTestDriver.from_app(
        job, spark=spark, topics=["orders-eu", "orders-us", "refunds"],
        ignore_options={"maxOffsetsPerTrigger"},
    ) as driver:
        assert driver.input_names == ("orders-eu", "orders-us")
        driver.create_input_topic("orders-eu", value_serializer="string").pipe_input("1")
        driver.create_input_topic("orders-us", value_serializer="string").pipe_input("2")
        driver.create_input_topic("orders-us", value_serializer="string").pipe_input("3")
        (batch,) = driver.process_all_available()  # one batch: the limit is not honoured
        assert batch.num_input_rows == 3


def test_the_suite_s_ignored_options_reach_every_fixture_made_driver(spark):
    """``--streamtest-ignore-option`` / ini ``streamtest_ignore_option``: what the
    ``topology_driver`` fixture's factory holds, added to each from_app call's own."""
    from pyspark_streamtest.plugin._factory import DriverFactory

    def job(spark: SparkSession) -> None:
        (spark.readStream.schema("n STRING").option("maxFilesPerTrigger", 1)
         .option("maxBytesPerTrigger", "1k").json("/in/orders")
         .writeStream.format("memory").queryName("orders").start())

    made: list[TopologyTestDriver] = []
    plain = DriverFactory(spark, made)
    with pytest.raises(UnsupportedAppCallError, match="maxFilesPerTrigger"):
        plain.from_app(job)
    suite = DriverFactory(spark, made, ignore_options=frozenset({"maxFilesPerTrigger"}))
    with pytest.raises(UnsupportedAppCallError, match="maxBytesPerTrigger"):
        suite.from_app(job)  # the suite's set alone does not cover the job's other limit
    driver = suite.from_app(job, ignore_options={"maxBytesPerTrigger"})  # the two add up
    try:
        driver.create_input_topic("orders").pipe_value_list([{"n": "1"}, {"n": "2"}])
        (batch,) = driver.process_all_available()
        assert batch.num_input_rows == 2
    finally:
        for each in made:
            each.close()


def test_a_missing_production_path_stays_missing(spark, tmp_path):
    production = Path(tmp_path, "prod")

    def job(spark: SparkSession) -> None:
        (spark.readStream.format("rate").load().writeStream.format("parquet")
         .option("checkpointLocation", str(production / "ck"))
         .option("path", str(production / "out")).start())

    with TopologyTestDriver.from_app(job, spark=spark) as driver:
        driver.create_input_topic("rate").pipe_input({"value": 1}, timestamp=at(0))
        driver.process_all_available()
        driver.restart()
        assert driver.create_output_topic("out").read_value()["value"] == 1
    assert not production.exists()


class FileWriter:
    """A ForeachWriter whose side effects the test can see: it runs in Spark's Python
    workers, so it writes files, one per partition and batch."""

    def __init__(self, folder: str, refuse_epoch: int | None = None) -> None:
        self.folder = folder
        self.refuse_epoch = refuse_epoch

    def open(self, partition_id: int, epoch_id: int) -> bool:
        self.path = f"{self.folder}/{epoch_id}-{partition_id}.log"
        self.lines = [f"open {partition_id} {epoch_id}"]
        return epoch_id != self.refuse_epoch

    def process(self, row) -> None:
        self.lines.append(f"process {row['value']}")

    def close(self, error) -> None:
        self.lines.append(f"close {error}")
        Path(self.path).write_text("\n".join(self.lines))


def test_a_foreach_writer_is_opened_fed_and_closed_per_partition_as_spark_does(
        spark, tmp_path):
    def job(spark: SparkSession) -> None:
        (spark.readStream.format("kafka").option("subscribe", "events").load()
         .select(F.col("value").cast("string").alias("value"))
         .writeStream.foreach(FileWriter(str(tmp_path), refuse_epoch=1)).start())

    with TopologyTestDriver.from_app(job, spark=spark) as driver:
        assert driver.output_names == ("FileWriter",)
        events = driver.create_input_topic("events", value_serializer="string")
        events.pipe_input("x")
        events.pipe_input("y")
        driver.process_all_available()
        events.pipe_input("z")  # open() refuses epoch 1: nothing processed, still closed
        driver.process_all_available()
    logs = {p.name: p.read_text().splitlines() for p in sorted(tmp_path.glob("*.log"))}
    assert logs == {
        "0-0.log": ["open 0 0", "process x", "process y", "close None"],
        "1-0.log": ["open 0 1", "close None"],
    }


def test_static_reads_in_the_job_run_normally_so_stream_static_joins_work(spark, tmp_path):
    rates = str(tmp_path / "rates")
    spark.createDataFrame([("EUR", 1.0), ("USD", 0.5)], "currency STRING, to_eur DOUBLE") \
        .write.json(rates)

    def job(spark: SparkSession) -> None:
        static = spark.read.json(rates)
        payments = spark.readStream.schema("id STRING, currency STRING, amount DOUBLE") \
            .json("/in/payments")
        (payments.join(static, "currency")
         .select("id", (F.col("amount") * F.col("to_eur")).alias("eur"))
         .writeStream.format("memory").queryName("eur").start())

    with TopologyTestDriver.from_app(job, spark=spark) as driver:
        driver.create_input_topic("payments").pipe_input(
            {"id": "p1", "currency": "USD", "amount": 10.0})
        driver.process_all_available()
        assert driver.create_output_topic("eur").read_value() == {"id": "p1", "eur": 5.0}


def _three_query_job(spark: SparkSession) -> None:
    """Alerts and averages read the readings topic; a registry count reads the CDC topic."""
    readings = (spark.readStream.format("kafka").option("subscribe", "readings").load()
                .select(F.col("key").cast("string").alias("device"),
                        F.col("value").cast("string").cast("double").alias("reading")))
    readings.where("reading > 50").selectExpr("device AS key", "CAST(reading AS STRING) AS value") \
        .writeStream.format("kafka") \
        .option("topic", "alerts").option("checkpointLocation", "/chk/alerts").start()
    readings.groupBy("device").avg("reading").writeStream.outputMode("complete") \
        .format("memory").queryName("averages").start()
    registry = spark.readStream.format("kafka").option("subscribe", "registry").load()
    registry.groupBy("key").count().writeStream.outputMode("update") \
        .toTable("registry_counts")


def test_outputs_runs_only_the_named_queries_and_what_they_read(spark):
    with TopologyTestDriver.from_app(_three_query_job, spark=spark,
                                     outputs=["alerts"]) as driver:
        assert driver.output_names == ("alerts",)
        readings = driver.create_input_topic("readings", key_serializer="string",
                                             value_serializer="string")
        readings.pipe_input("d1", "72.5")
        readings.pipe_input("d2", "20")
        ran = driver.process_all_available()
        assert [b.output for b in ran] == ["alerts"]  # the other queries never run
        alerts = driver.create_output_topic("alerts", key_deserializer="string",
                                            value_deserializer="string")
        assert alerts.read_key_values_to_list() == [("d1", "72.5")]
        with pytest.raises(UnknownTopicError, match=r"input 'registry' is read only by queries "
                                                    r"from_app\(outputs=\.\.\.\) leaves out "
                                                    r"\('registry_counts'\)"):
            driver.create_input_topic("registry")
        with pytest.raises(UnknownTopicError, match="unknown output 'averages'"):
            driver.create_output_topic("averages").read_value()

    # Two of three: the shared input feeds both; the left-out query's input is refused.
    with TopologyTestDriver.from_app(_three_query_job, spark=spark,
                                     outputs=["averages", "registry_counts"]) as driver:
        assert sorted(driver.output_names) == ["averages", "registry_counts"]
        driver.create_input_topic("readings", key_serializer="string",
                                  value_serializer="string").pipe_input("d1", "10")
        driver.create_input_topic("registry", key_serializer="string",
                                  value_serializer="string").pipe_input("d1", "{}")
        assert sorted(b.output for b in driver.process_all_available()) == [
            "averages", "registry_counts"]


@pytest.mark.parametrize(("outputs", "error", "message"), [
    (["alerts", "nope"], InvalidArgumentError,
     r"from_app\(outputs=\.\.\.\) names 'nope', but the job starts no query of that name; "
     r"its queries are 'alerts', 'averages', 'registry_counts'"),
    ("alerts", InvalidArgumentTypeError, r"takes a list of output names, got 'alerts'"),
    ([], InvalidArgumentError, r"outputs=\[\]\) would run no query"),
])
def test_outputs_that_cannot_be_run_are_refused_before_any_query_starts(
        spark, outputs, error, message):
    active = len(spark.streams.active)
    with pytest.raises(error, match=message):
        TopologyTestDriver.from_app(_three_query_job, spark=spark, outputs=outputs)
    assert len(spark.streams.active) == active
