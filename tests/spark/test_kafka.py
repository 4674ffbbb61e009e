"""Kafka-shaped topics on real queries: the source's columns, partitions and offsets,
tombstones, the sink's routing, headers, reads, and poison pills."""

from __future__ import annotations

import json
from datetime import timedelta

import pytest
from pyspark.sql import functions as F
from pyspark.sql.types import StringType

from pyspark_streamtest import (
    KeyValue,
    NoSuchRecordError,
    StreamingQueryFailedError,
    TestRecord,
    Topology,
    TopologyError,
    TopologyTestDriver,
    UninitializedTopicError,
    UnknownTopicError,
)
from pyspark_streamtest.kafka import KAFKA_HEADERS_TYPE, KAFKA_SOURCE_SCHEMA, default_partition
from tests.helpers import T0, at


def passthrough(partitions: int = 1, include_headers: bool = False,
                timestamp_type: str = "CreateTime"):
    def topology(t: Topology) -> None:
        events = t.kafka_input("events", partitions=partitions, include_headers=include_headers,
                               timestamp_type=timestamp_type)  # type: ignore[arg-type]
        t.output("seen", events)
    return topology


def test_kafka_input_has_the_kafka_source_schema(spark):
    seen = {}

    def topology(t: Topology) -> None:
        seen["plain"] = t.kafka_input("a").schema
        seen["headers"] = t.kafka_input("b", include_headers=True).schema
        t.output("o", t.kafka_input("c"))

    with TopologyTestDriver(topology, spark=spark):
        pass
    assert seen["plain"] == KAFKA_SOURCE_SCHEMA
    assert [f.name for f in seen["plain"].fields] == [
        "key", "value", "topic", "partition", "offset", "timestamp", "timestampType"]
    assert seen["headers"].fields[-1].name == "headers"
    assert seen["headers"].fields[-1].dataType == KAFKA_HEADERS_TYPE


def test_records_get_kafka_partitions_offsets_and_timestamps(topology_driver):
    driver = topology_driver(passthrough(partitions=3))
    events = driver.create_input_topic("events", key_serializer="string",
                                       value_serializer="json")
    seen = driver.create_output_topic("seen")
    keys = ["21", "foobar", "abc", "21", None, None, None, "abc"]
    for index, key in enumerate(keys):
        events.pipe_input(key, {"n": index}, timestamp=at(index))
    events.pipe_input("21", {"n": 99}, timestamp=at(50), partition=2)  # explicit partition
    driver.process_all_available()

    read = seen.read_values_to_list()
    # Each partition is one input partition of the batch, read partition by partition
    # (as Spark reads a Kafka topic's partitions): the rows come out grouped by it.
    assert [r["partition"] for r in read] == sorted(r["partition"] for r in read)
    rows = sorted(read, key=lambda r: json.loads(r["value"])["n"])  # back to piped order
    expected_partitions = [default_partition(k.encode(), 3) if k else None for k in keys]
    # Null keys go round-robin from partition 0.
    for i, p in zip([4, 5, 6], [0, 1, 2], strict=True):
        expected_partitions[i] = p
    expected_partitions.append(2)
    assert [r["partition"] for r in rows] == expected_partitions
    offsets: dict[int, int] = {}
    for row in rows:
        assert row["offset"] == offsets.get(row["partition"], 0)
        offsets[row["partition"]] = row["offset"] + 1
    assert [r["key"] for r in rows] == [None if k is None else k.encode() for k in keys] + [b"21"]
    assert [json.loads(r["value"]) for r in rows] == [{"n": i} for i in range(8)] + [{"n": 99}]
    assert [r["timestamp"] for r in rows] == [at(i) for i in range(8)] + [at(50)]
    assert {r["timestampType"] for r in rows} == {0}
    assert {r["topic"] for r in rows} == {"events"}
    # The input history keeps the records as piped, with their place.
    piped = driver.batches[0].input_records
    assert (piped[0].key, piped[0].value, piped[0].partition, piped[0].offset) == (
        "21", {"n": 0}, expected_partitions[0], 0)


def test_log_append_time_stamps_the_processing_time_when_piped(topology_driver):
    driver = topology_driver(passthrough(timestamp_type="LogAppendTime"))
    events = driver.create_input_topic("events")
    seen = driver.create_output_topic("seen")
    driver.advance_wall_clock(timedelta(seconds=5))
    events.pipe_input("k", "v", timestamp=at(-100))  # the broker's time replaces it
    driver.advance_wall_clock(timedelta(seconds=2))
    events.pipe_input("k", "w")
    driver.process_all_available()
    assert [(r["timestamp"], r["timestampType"]) for r in seen.read_values_to_list()] == [
        (at(5), 1), (at(7), 1)]


def test_tombstones_reach_spark_as_null_values(topology_driver):
    driver = topology_driver(passthrough())
    events = driver.create_input_topic("events")
    seen = driver.create_output_topic("seen")
    events.pipe_key_value_list([("a", "1"), ("a", None), (None, None)])
    driver.process_all_available()
    assert [(r["key"], r["value"]) for r in seen.read_values_to_list()] == [
        (b"a", b"1"), (b"a", None), (None, None)]


def test_headers_and_test_records_round_trip(topology_driver):
    driver = topology_driver(passthrough(partitions=2, include_headers=True))
    events = driver.create_input_topic("events")
    seen = driver.create_output_topic("seen")
    events.pipe_record_list([
        TestRecord(key="k", value=b"\x00\x01", timestamp=at(3),
                   headers=(("trace", b"t-1"), ("trace", b"t-2"), ("empty", None)), partition=1),
        TestRecord(value="no key"),
    ])
    driver.process_all_available()
    second, first = seen.read_values_to_list()  # partition 0 (round-robin), then 1
    assert first["headers"] == [{"key": "trace", "value": b"t-1"},
                                {"key": "trace", "value": b"t-2"},
                                {"key": "empty", "value": None}]
    assert (first["partition"], first["offset"], first["value"], first["timestamp"]) == (
        1, 0, b"\x00\x01", at(3))
    assert (second["key"], second["value"], second["headers"], second["timestamp"]) == (
        None, b"no key", [], T0)


def test_bad_kafka_input_calls_leave_the_topic_unchanged(topology_driver):
    driver = topology_driver(passthrough(partitions=2))
    events = driver.create_input_topic("events", value_serializer="int")
    with pytest.raises(ValueError, match=r"partition 2 is not in \[0, 2\); the topic has 2"):
        events.pipe_input("k", 1, partition=2)
    with pytest.raises(TypeError, match="key_values\\[1\\]: kafka input 'events': value 'x': "
                                        "the 'int' serializer takes int, got str"):
        events.pipe_key_value_list([("a", 1), ("b", "x")])
    with pytest.raises(TypeError, match="pipe_input takes \\(value\\), \\(key, value\\)"):
        events.pipe_input("a", 1, at(1), 2)  # type: ignore[call-overload]
    with pytest.raises(TypeError, match="timestamp must be a timezone-aware datetime"):
        events.pipe_input("a", 1, 2)  # type: ignore[call-overload]
    events.pipe_input("a", 7, at(9))  # Kafka's pipeInput(key, value, timestamp)
    driver.process_all_available()
    assert [(r.value, r.timestamp) for r in driver.batches[0].input_records] == [(7, at(9))]
    assert driver.batches[0].input_records[0].offset == 0  # failed calls used no offsets


def test_plain_inputs_refuse_kafka_arguments(topology_driver):
    def plain(t: Topology) -> None:
        t.output("o", t.input("x", schema="v STRING"))

    driver = topology_driver(plain)
    with pytest.raises(TypeError, match="input 'x' is not a Kafka input; serializers apply"):
        driver.create_input_topic("x", value_serializer="json")
    x = driver.create_input_topic("x")
    with pytest.raises(TypeError, match="input 'x' is not a Kafka input, so its records have "
                                        "no key, headers or partition"):
        x.pipe_input("key", {"v": "1"})
    with pytest.raises(TypeError, match="not a Kafka input"):
        x.pipe_input({"v": "1"}, partition=0)
    with pytest.raises(TypeError, match="output 'o' is not a Kafka output; its records are rows"):
        driver.create_output_topic("o", value_deserializer="json")
    with pytest.raises(TypeError, match="output 'o' is not a Kafka output: its records have no "
                                        "keys; use read_values_to_list"):
        driver.create_output_topic("o").read_key_values_to_map()
    with pytest.raises(UnknownTopicError, match="unknown output 'other'; this topology's "
                                                "outputs are 'o'"):
        driver.create_output_topic("other")


# --- the Kafka sink ---------------------------------------------------------------------------
def routed_counts(t: Topology) -> None:
    """Counts per key in 10 s windows, written as JSON to a topic per key's first letter,
    with the input's headers dropped and a header of its own."""
    events = t.kafka_input("events", partitions=2)
    parsed = events.select(
        F.col("key").cast("string").alias("user"),
        F.get_json_object(F.col("value").cast("string"), "$.page").alias("page"),
        "timestamp",
    )
    counts = (parsed.withWatermark("timestamp", "5 seconds")
              .groupBy(F.window("timestamp", "10 seconds"), "user").count())
    t.kafka_output(
        "counts",
        counts.select(
            F.col("user").alias("key"),
            F.to_json(F.struct(F.col("window.start").alias("start"), "count")).alias("value"),
            F.concat(F.lit("counts-"), F.substring("user", 1, 1)).alias("topic"),
            F.array(F.struct(F.lit("source").alias("key"),
                             F.lit(b"pipeline").alias("value"))).alias("headers"),
            F.lit("ignored").alias("extra"),
        ),
        partitions=4,
    )


def test_kafka_output_routes_rows_to_topics_by_the_topic_column(topology_driver):
    driver = topology_driver(routed_counts)
    events = driver.create_input_topic("events", value_serializer="json")
    for user, second in [("alice", 1), ("bob", 2), ("alice", 3), ("anna", 4)]:
        events.pipe_input(user, {"page": "/"}, timestamp=at(second))
    driver.process_all_available()
    assert driver.produced_topic_names() == set()
    events.pipe_input("carl", {"page": "/"}, timestamp=at(30))
    driver.process_all_available()  # watermark 25: the [0, 10) windows close

    assert driver.produced_topic_names() == {"counts-a", "counts-b"}
    a_topic = driver.create_output_topic("counts-a", key_deserializer="string",
                                         value_deserializer="json")
    b_topic = driver.create_output_topic("counts-b", key_deserializer="string",
                                         value_deserializer="json")
    start = "2024-01-01T00:00:00.000Z"
    assert a_topic.read_key_values_to_map() == {
        "alice": {"start": start, "count": 2}, "anna": {"start": start, "count": 1}}
    record = b_topic.read_record()
    assert (record.key, record.value, record.topic) == ("bob", {"start": start, "count": 1},
                                                        "counts-b")
    assert record.headers == (("source", b"pipeline"),)
    assert record.partition == default_partition(b"bob", 4)
    assert (record.offset, record.timestamp, record.batch_id) == (0, T0, record.batch_id)
    assert record.timestamp == record.processing_time

    # Reading a written-but-drained topic and a never-written one fail differently.
    with pytest.raises(NoSuchRecordError, match="topic 'counts-b' has no unread record "
                                                "\\(1 records written so far, all read\\)"):
        b_topic.read_record()
    never = driver.create_output_topic("counts-c")
    assert never.is_empty()
    with pytest.raises(UninitializedTopicError, match="nothing was ever written to topic "
                                                      "'counts-c' \\(topics written so far: "
                                                      "'counts-a', 'counts-b'\\)"):
        never.read_value()


def keyed_changes(t: Topology) -> None:
    """Writes every input record as is to the topic 'changes' (value null for tombstones)."""
    events = t.kafka_input("events")
    t.kafka_output("sink", events.select("key", "value"), topic="changes")


def test_read_key_values_to_map_keeps_or_deletes_tombstones(topology_driver):
    driver = topology_driver(keyed_changes)
    events = driver.create_input_topic("events")
    changes = driver.create_output_topic("changes", key_deserializer="string",
                                         value_deserializer="string")
    script = [("a", "1"), ("b", "1"), ("a", "2"), ("b", None), ("c", None)]
    events.pipe_key_value_list(script)
    driver.process_all_available()
    assert changes.read_key_values_to_list() == [KeyValue(k, v) for k, v in script]

    events.pipe_key_value_list(script)
    driver.process_all_available()
    assert changes.read_key_values_to_map() == {"a": "2", "b": None, "c": None}  # Kafka's rule

    events.pipe_key_value_list(script)
    driver.process_all_available()
    assert changes.read_key_values_to_map(tombstones="delete") == {"a": "2"}

    events.pipe_input("no key")
    events.pipe_input("d", "4")
    driver.process_all_available()
    with pytest.raises(ValueError, match=r"unread record with a null key .*read_key_values_to_list"):
        changes.read_key_values_to_map()
    assert changes.queue_size == 2  # nothing was read
    assert changes.read_key_value() == KeyValue(None, "no key")
    assert changes.read_key_value() == KeyValue("d", "4")
    with pytest.raises(UnknownTopicError, match="Kafka outputs write 'changes'"):
        driver.create_output_topic("sink")  # the topic= option renamed it


def partitioned(t: Topology) -> None:
    events = t.kafka_input("events")
    t.kafka_output("out", events.select(
        "value", F.col("value").cast("string").cast("int").alias("partition"),
        F.when(F.col("value").cast("string") == "9", F.lit(None)).otherwise(F.lit("t"))
        .alias("topic"),
    ), partitions=3)


def test_partition_column_and_sink_failures(spark):
    driver = TopologyTestDriver(partitioned, spark=spark)
    events = driver.create_input_topic("events")
    out = driver.create_output_topic("t")
    events.pipe_value_list(["2", "0", "2"])
    driver.process_all_available()
    assert [(r.partition, r.offset) for r in out.read_records_to_list()] == [(2, 0), (0, 0),
                                                                             (2, 1)]
    events.pipe_input("5")  # partition 5 of 3: a producer would fail, so does the query
    with pytest.raises(StreamingQueryFailedError, match="partition 5 is out of range \\[0, 3\\)"):
        driver.process_all_available()
    assert not driver.is_running and spark.streams.active == []
    driver.close()

    with TopologyTestDriver(partitioned, spark=spark) as driver:
        driver.create_input_topic("events").pipe_input("9")
        with pytest.raises(StreamingQueryFailedError, match="a row has a null 'topic'"):
            driver.process_all_available()
        assert spark.streams.active == []


@pytest.mark.parametrize(("select", "message"), [
    (lambda df: df.select("key"), "Spark's Kafka sink needs a 'value' column .* the DataFrame "
                                  "has key"),
    (lambda df: df.select(F.col("offset").alias("value")), "the 'value' column is bigint; "
                                                           "Spark's Kafka sink needs string or "
                                                           "binary"),
    (lambda df: df.select("value", F.col("offset").alias("partition")),
     "the 'partition' column is bigint; Spark's Kafka sink needs int"),
    (lambda df: df.select("value", F.col("partition").alias("topic")),
     "the 'topic' column is int; Spark's Kafka sink needs string"),
    (lambda df: df.select("value", F.array(F.col("key")).alias("headers")),
     "the 'headers' column is array<binary>; Spark's Kafka sink needs array<struct<key: "
     "string, value: binary>>"),
])
def test_kafka_output_checks_columns_as_sparks_sink(spark, select, message):
    def topology(t: Topology) -> None:
        t.kafka_output("out", select(t.kafka_input("events")))

    with pytest.raises(TopologyError, match=message):
        TopologyTestDriver(topology, spark=spark)
    assert spark.streams.active == []


# --- poison pills -----------------------------------------------------------------------------
def amounts(t: Topology) -> None:
    payments = t.kafka_input("payments", partitions=2)
    parse = F.udf(lambda v: int(json.loads(v)["amount"]), "int")
    t.output("amounts", payments.select(
        F.col("value").alias("raw"),
        F.from_json(F.col("value").cast("string"), "amount INT").alias("lenient"),
        parse(F.col("value").cast(StringType())).alias("amount"),
    ))


def test_poison_pill_reaches_the_pipeline_and_the_failure_names_its_offsets(topology_driver,
                                                                            spark):
    driver = topology_driver(amounts)
    payments = driver.create_input_topic("payments", value_serializer="bytes")
    out = driver.create_output_topic("amounts")
    payments.pipe_input(b'{"amount": 5}', partition=0)
    payments.pipe_input(b'{"amount": 6}', partition=1)
    driver.process_all_available()
    assert [v["amount"] for v in out.read_values_to_list()] == [5, 6]

    payments.pipe_input(b'{"amount": 7}', partition=1)
    payments.pipe_input(b"\xff not json", partition=0)  # the poison pill
    payments.pipe_input(b'{"amount": 8}', partition=0)
    with pytest.raises(StreamingQueryFailedError) as caught:
        driver.process_all_available()
    error = caught.value
    assert "it read topic 'payments' partition 0 offsets 1-2, topic 'payments' partition 1 " \
           "offset 1" in str(error)
    assert "JSONDecodeError" in error.cause or "UnicodeDecodeError" in error.cause
    assert [(r.partition, r.offset, r.value) for r in error.records] == [
        (1, 1, b'{"amount": 7}'), (0, 1, b"\xff not json"), (0, 2, b'{"amount": 8}')]
    assert spark.streams.active == []


def lenient_amounts(t: Topology) -> None:
    payments = t.kafka_input("payments")
    t.output("amounts", payments.select(
        F.col("value").alias("raw"),
        F.from_json(F.col("value").cast("string"), "amount INT").alias("parsed"),
    ))


def test_poison_pill_bytes_reach_the_query_unchanged(topology_driver):
    driver = topology_driver(lenient_amounts)
    payments = driver.create_input_topic("payments")
    out = driver.create_output_topic("amounts")
    payments.pipe_value_list([b'{"amount": 5}', b"\xff\xfe garbage"])
    driver.process_all_available()
    assert out.read_values_to_list() == [
        {"raw": b'{"amount": 5}', "parsed": {"amount": 5}},
        {"raw": b"\xff\xfe garbage", "parsed": {"amount": None}},
    ]
