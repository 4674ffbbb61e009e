"""Every duplicate a deduplication drops is visible (issue 50, item 3): each batch's state
metrics carry Spark's ``numDroppedDuplicateRows`` per operator, and
``driver.duplicate_records(output)`` names the records, checked against that count."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest
from pyspark.sql import functions as F

from pyspark_streamtest import DuplicateRecord, Feature, InvalidArgumentError, Topology

pytestmark = pytest.mark.streamtest_requires(Feature.STATE_STORE_READS)

T0 = datetime(2026, 1, 1, tzinfo=timezone.utc)


def by_id(t: Topology) -> None:
    events = t.input("events", schema="id STRING, n INT")
    t.output("unique", events.dropDuplicates(["id"]))


def test_a_key_met_earlier_in_the_batch_or_held_in_state_is_a_duplicate(topology_driver):
    driver = topology_driver(by_id)
    events = driver.create_input_topic("events")
    unique = driver.create_output_topic("unique")
    events.pipe_value_list([{"id": "a", "n": 1}, {"id": "b", "n": 2}, {"id": "a", "n": 3}])
    driver.process_all_available()
    events.pipe_value_list([{"id": "b", "n": 4}, {"id": "c", "n": 5}])
    driver.process_all_available()
    assert unique.read_values_to_list() == [{"id": "a", "n": 1}, {"id": "b", "n": 2},
                                            {"id": "c", "n": 5}]
    first, second = driver.batches
    assert [m.rows_dropped_as_duplicates for m in first.state_metrics] == [1]
    assert [m.rows_dropped_as_duplicates for m in second.state_metrics] == [1]
    dropped = driver.duplicate_records("unique")
    assert [(d.batch_id, d.record.value, d.key, d.earlier.value) for d in dropped] == [
        (0, {"id": "a", "n": 3}, {"id": "a"}, {"id": "a", "n": 1}),
        (1, {"id": "b", "n": 4}, {"id": "b"}, {"id": "b", "n": 2}),
    ]
    assert all(isinstance(d, DuplicateRecord) and d.operator_id == 0 for d in dropped)
    assert {d.operator for d in dropped} == {first.state_operators[0]["operatorName"]}


def test_without_drops_there_is_nothing_to_name(topology_driver):
    driver = topology_driver(by_id)
    driver.create_input_topic("events").pipe_value_list([{"id": "a", "n": 1}])
    driver.process_all_available()
    assert driver.batches[0].state_metrics[0].rows_dropped_as_duplicates == 0
    assert driver.duplicate_records("unique") == []


def within_watermark(t: Topology) -> None:
    """Clicks from a Kafka topic, the id and time parsed from the value, deduplicated
    within a 10-second watermark (the issue-50 job's shape)."""
    clicks = t.kafka_input("clicks").select(F.from_json(
        F.col("value").cast("string"), "id STRING, ts TIMESTAMP").alias("c")).select("c.*")
    t.output("clicks", clicks.withWatermark("ts", "10 seconds")
             .dropDuplicatesWithinWatermark(["id"]))


def test_within_the_watermark_a_key_is_a_duplicate_until_its_state_expires(topology_driver):
    """Spark keeps a key until the watermark passes its time plus the delay: the same id
    after that is new again, and a record behind the watermark is late, not a duplicate."""
    driver = topology_driver(within_watermark)
    clicks = driver.create_input_topic("clicks", value_serializer="json")

    def pipe(click_id, seconds):
        clicks.pipe_input({"id": click_id, "ts": (T0 + timedelta(seconds=seconds)).isoformat()})

    pipe("x", 0)
    pipe("x", 5)                      # within the same batch: a duplicate
    driver.process_all_available()
    pipe("x", 8)                      # state holds x until the watermark passes 0 + 10 s
    pipe("y", 30)                     # moves the watermark to 20 s
    driver.process_all_available()
    pipe("x", 25)                     # x expired (10 s <= 20 s): kept again
    pipe("y", 2)                      # behind the watermark: late, not a duplicate
    driver.process_all_available()
    dropped = driver.duplicate_records("clicks")
    assert [(d.batch_id, d.record.offset, d.key, d.earlier.offset) for d in dropped] == [
        (0, 1, {"id": "x"}, 0), (2, 2, {"id": "x"}, 1),  # 1 and 3: no-data batches
    ]
    metrics = [b.state_metrics[0] for b in driver.batches if b.is_data_batch]
    assert [m.rows_dropped_as_duplicates for m in metrics] == [1, 1, 0]
    assert [m.rows_dropped_by_watermark for m in metrics] == [0, 0, 1]
    assert [late.record.offset for late in driver.late_records("clicks")] == [5]


def test_a_key_held_within_the_watermark_reads_with_its_expiry_as_a_time(topology_driver):
    """Spark's dropDuplicatesWithinWatermark keeps ``expiresAtMicros`` per key: the view
    gives it as an instant (event time + delay), and the key until the watermark passes it."""
    driver = topology_driver(within_watermark)
    clicks = driver.create_input_topic("clicks", value_serializer="json")
    clicks.pipe_input({"id": "x", "ts": T0.isoformat()})
    driver.process_all_available()
    (entry,) = driver.get_state_store("clicks").all()
    assert (entry.key, entry.value, entry.expires_at) == ("x", None, T0 + timedelta(seconds=10))
    assert entry.ttl_expiration is None
    clicks.pipe_input({"id": "y", "ts": (T0 + timedelta(seconds=30)).isoformat()})
    driver.process_all_available()  # the watermark moves to 20 s: x is evicted
    assert [e.key for e in driver.get_state_store("clicks").all()] == ["y"]


def by_id_and_time(t: Topology) -> None:
    events = t.input("events", schema="id STRING, ts TIMESTAMP", timestamp_column="ts")
    t.output("unique", events.withWatermark("ts", "5 seconds").dropDuplicates(["id", "ts"]))


def test_a_timestamp_key_matches_the_state_s_key(topology_driver):
    """The event time among the keys: the replay's value and the store's are the same
    instant, so a repeat in a later batch is named."""
    driver = topology_driver(by_id_and_time)
    events = driver.create_input_topic("events")
    events.pipe_input({"id": "a", "ts": T0}, timestamp=T0)
    driver.process_all_available()
    events.pipe_input({"id": "a", "ts": T0}, timestamp=T0)
    events.pipe_input({"id": "a", "ts": T0 + timedelta(seconds=1)},
                      timestamp=T0 + timedelta(seconds=1))
    driver.process_all_available()
    (dropped,) = driver.duplicate_records("unique")
    assert (dropped.batch_id, dropped.key) == (2, {"id": "a", "ts": T0})  # 1: no data


def two_partitions(t: Topology) -> None:
    events = t.input("events", schema="id STRING, n INT", partitions=2, key="n")
    t.output("unique", events.dropDuplicates(["id"]))


def test_one_key_from_two_partitions_in_one_batch_is_not_guessed(topology_driver):
    """Spark keeps whichever row its task reads first: the driver says it cannot tell,
    and the count stays Spark's."""
    driver = topology_driver(two_partitions)
    events = driver.create_input_topic("events")
    events.pipe_value_list([{"id": "a", "n": 0}, {"id": "a", "n": 1}])
    driver.process_all_available()
    assert driver.batches[0].state_metrics[0].rows_dropped_as_duplicates == 1
    partitions = {r.partition for r in driver.batches[0].input_records}
    if len(partitions) < 2:
        pytest.fail(f"the two records should sit in two partitions: {partitions}")
    with pytest.raises(InvalidArgumentError, match="Spark keeps whichever its task reads first"):
        driver.duplicate_records("unique")


def clicks_beside_landed_files(t: Topology) -> None:
    impressions = t.file_input("impressions", format="json", schema="imp_id STRING")
    clicks = t.input("clicks", schema="click_id STRING, imp_id STRING")
    t.output("attributed", clicks.dropDuplicates(["click_id"]).join(impressions, "imp_id"))


def test_a_dedup_of_piped_records_is_named_beside_a_file_input(topology_driver):
    """A query that also reads landed files: the dedup reads only the piped input, so
    its drops are named (only an operator below a file source cannot be replayed)."""
    driver = topology_driver(clicks_beside_landed_files)
    driver.create_input_topic("impressions").land_lines(['{"imp_id": "i1"}'])
    clicks = driver.create_input_topic("clicks")
    clicks.pipe_value_list([{"click_id": "c1", "imp_id": "i1"},
                            {"click_id": "c1", "imp_id": "i1"}])
    driver.process_all_available()
    assert driver.create_output_topic("attributed").read_values_to_list() == [
        {"imp_id": "i1", "click_id": "c1"}]
    (dropped,) = driver.duplicate_records("attributed")
    assert (dropped.batch_id, dropped.record.value, dropped.key) == (
        0, {"click_id": "c1", "imp_id": "i1"}, {"click_id": "c1"})
