"""Inputs spread over source partitions: each partition of a step is one input
partition of Spark's batch (one MemoryStream offset per partition)."""

from __future__ import annotations

import pytest
from pyspark.sql import functions as F

from pyspark_streamtest import Feature, Topology, TopologyError
from pyspark_streamtest.kafka import default_partition
from tests.helpers import at


def where_read(partitions: int, key: str | None):
    def topology(t: Topology) -> None:
        clicks = t.input("clicks", schema="user STRING, n INT", partitions=partitions, key=key)
        t.output("read", clicks.withColumn("pid", F.spark_partition_id()))
    return topology


def test_a_keyed_record_is_read_from_the_partition_of_its_key(topology_driver):
    driver = topology_driver(where_read(3, "user"))
    clicks = driver.create_input_topic("clicks")
    users = ["alice", "bob", "carol", "dave", "erin", "frank"]
    clicks.pipe_value_list([{"user": u, "n": i} for i, u in enumerate(users)])
    clicks.pipe_input({"user": None, "n": 9})  # a null key: round-robin, from partition 0
    (batch,) = driver.process_all_available()
    expected = {u: default_partition(u.encode(), 3) for u in users}
    assert len(set(expected.values())) > 1  # the keys do land on several partitions
    read = {r.value["user"]: r.value["pid"] for r in batch.output_records}
    assert read == {**expected, None: 0}
    assert {r.value["user"]: r.partition for r in batch.input_records} == {**expected, None: 0}


def test_without_a_key_records_go_round_robin(topology_driver):
    driver = topology_driver(where_read(2, None))
    clicks = driver.create_input_topic("clicks")
    clicks.pipe_value_list([{"user": str(i), "n": i} for i in range(5)])
    (batch,) = driver.process_all_available()
    assert sorted((r.value["n"], r.value["pid"]) for r in batch.output_records) == [
        (0, 0), (1, 1), (2, 0), (3, 1), (4, 0)]


def counts(partitions: int):
    def topology(t: Topology) -> None:
        clicks = t.input("clicks", schema="user STRING, ts TIMESTAMP", timestamp_column="ts",
                         partitions=partitions, key="user" if partitions > 1 else None)
        t.output("counts", clicks.withWatermark("ts", "5 seconds")
                 .groupBy(F.window("ts", "10 seconds"), "user").count(), output_mode="update")
    return topology


def run(topology_driver, partitions: int):
    driver = topology_driver(counts(partitions),
                             sql_conf={"spark.sql.shuffle.partitions": "2"})
    clicks = driver.create_input_topic("clicks")
    for second, users in ((1, "abcab"), (4, "cdd"), (12, "ae"), (3, "b")):
        for user in users:
            clicks.pipe_input({"user": user}, timestamp=at(second))
        driver.process_all_available()
    batches = [(b.batch_id, b.num_input_rows, b.watermark,
                sorted((r.value["user"], r.value["count"]) for r in b.output_records))
               for b in driver.batches]
    return driver, batches


@pytest.mark.streamtest_requires(Feature.STATE_STORE_READS)
def test_results_and_state_equal_the_one_partition_run(topology_driver):
    one, expected = run(topology_driver, 1)
    three, batches = run(topology_driver, 3)
    assert batches == expected
    state = three.get_state_store("counts")
    assert sorted(state.items()) == sorted(one.get_state_store("counts").items())
    # State lives where the shuffle puts it: two shuffle partitions hold it.
    assert {entry.partition for entry in state.all()} == {0, 1}


def test_partitions_and_key_are_checked(topology_driver):
    def bad(**options):
        def topology(t: Topology) -> None:
            t.output("x", t.input("x", schema="user STRING", **options))
        return topology

    with pytest.raises(TopologyError, match="partitions must be a positive int"):
        topology_driver(bad(partitions=0))
    with pytest.raises(TopologyError, match="give partitions=N > 1 too"):
        topology_driver(bad(key="user"))
    with pytest.raises(TopologyError, match="'nope' is not a column"):
        topology_driver(bad(partitions=2, key="nope"))
