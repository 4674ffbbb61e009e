"""``crash_before_commit`` / ``crash_before_sink``: a batch fails at the chosen point,
and Spark's own recovery (a restart from the checkpoint) runs the same batch again."""

from __future__ import annotations

import pytest
from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from pyspark_streamtest import Topology, UnknownTopicError, format_timeline
from tests.helpers import at


class Calls:
    def __init__(self) -> None:
        self.seen: list[tuple[int, list[str]]] = []

    def __call__(self, batch: DataFrame, batch_id: int) -> None:
        self.seen.append((batch_id, sorted(r["word"] for r in batch.collect())))


def three_sinks(calls: Calls):
    def topology(t: Topology) -> None:
        words = t.input("words", schema="word STRING")
        t.foreach_batch("store", words, calls)
        t.kafka_output("to-kafka", words.select(F.col("word").alias("value")))
        t.output("plain", words)
    return topology


@pytest.mark.parametrize("output", ["store", "to-kafka", "plain"])
def test_a_crash_before_the_commit_runs_the_same_batch_again(topology_driver, output):
    calls = Calls()
    driver = topology_driver(three_sinks(calls))
    words = driver.create_input_topic("words")
    words.pipe_input({"word": "a"})
    driver.process_all_available()

    driver.crash_before_commit(output)
    words.pipe_input({"word": "b"})
    words.pipe_input({"word": "c"})
    ran = driver.process_all_available()

    # Every attempt is in the history: the crashed one marked, then Spark's replay.
    others = [(o, 1, 1, "-") for o in ("plain", "store", "to-kafka") if o != output]
    assert sorted((b.output, b.batch_id, b.attempt, b.crashed or "-") for b in ran) == sorted(
        [*others, (output, 1, 1, "before_commit"), (output, 1, 2, "-")])
    mine = [b for b in driver.batches if b.output == output]
    assert [(b.batch_id, b.attempt, b.crashed) for b in mine] == [
        (0, 1, None), (1, 1, "before_commit"), (1, 2, None)]
    twice = output != "plain"  # Kafka and foreachBatch are at-least-once
    crashed, replayed = mine[1:]
    assert [r.value for r in crashed.input_records] == [r.value for r in replayed.input_records]
    # what the crashed attempt left written, and what the replay wrote
    assert len(crashed.output_records) == (2 if twice else 0)
    assert len(replayed.output_records) == 2 and crashed.state_operators == ()
    assert calls.seen == [(0, ["a"]), (1, ["b", "c"]), *([(1, ["b", "c"])] * (output == "store"))]
    kafka = driver.create_output_topic("to-kafka", value_deserializer="string")
    written = [(r.value, r.offset) for r in kafka.read_records_to_list()]
    if output == "to-kafka":
        assert written == [("a", 0), ("b", 1), ("c", 2), ("b", 3), ("c", 4)]
    else:
        assert written == [("a", 0), ("b", 1), ("c", 2)]
    store = [r.value["word"] for r in driver.create_output_topic("store").read_records_to_list()]
    assert store == (["a", "b", "c", "b", "c"] if output == "store" and twice
                     else ["a", "b", "c"])
    plain = [r.value["word"] for r in driver.create_output_topic("plain").read_records_to_list()]
    assert plain == ["a", "b", "c"]

    # The crash is spent: the next batch runs once.
    words.pipe_input({"word": "d"})
    driver.process_all_available()
    assert calls.seen[-1] == (2, ["d"])
    assert [(b.batch_id, b.attempt) for b in driver.batches if b.output == output] == [
        (0, 1), (1, 1), (1, 2), (2, 1)]
    timeline = format_timeline(driver.batches)
    assert f"{output} (attempt 1, crashed before commit)" in timeline
    assert f"{output} (attempt 2)" in timeline


def test_a_crash_before_the_sink_writes_the_batch_once(topology_driver):
    calls = Calls()
    driver = topology_driver(three_sinks(calls))
    words = driver.create_input_topic("words")
    driver.crash_before_sink("store")
    driver.crash_before_sink("to-kafka")
    words.pipe_input({"word": "a"})
    driver.process_all_available()
    assert calls.seen == [(0, ["a"])]
    kafka = driver.create_output_topic("to-kafka", value_deserializer="string")
    assert kafka.read_values_to_list() == ["a"]
    crashed = [(b.output, b.attempt, len(b.output_records))
               for b in driver.batches if b.crashed == "before_sink"]
    assert sorted(crashed) == [("store", 1, 0), ("to-kafka", 1, 0)]


def test_state_is_not_counted_twice_after_a_crash_before_the_commit(topology_driver):
    def topology(t: Topology) -> None:
        clicks = t.input("clicks", schema="user STRING, ts TIMESTAMP", timestamp_column="ts")
        t.output("counts", clicks.groupBy("user").count(), output_mode="update")

    driver = topology_driver(topology)
    clicks = driver.create_input_topic("clicks")
    clicks.pipe_input({"user": "u"}, timestamp=at(1))
    driver.process_all_available()
    driver.crash_before_commit("counts")
    clicks.pipe_input({"user": "u"}, timestamp=at(2))
    crashed, batch = driver.process_all_available()
    assert (crashed.batch_id, crashed.crashed, crashed.output_records) == (1, "before_commit", ())
    assert (batch.batch_id, batch.attempt, [r.value for r in batch.output_records]) == (
        1, 2, [{"user": "u", "count": 2}])
    assert batch.input_records[0].timestamp == at(2)
    # the crashed attempt's state was never committed: the checks count the replay once
    driver.assert_num_state_rows("counts", total=1, updated=2)


def test_crashing_an_unknown_output_names_the_outputs(topology_driver):
    driver = topology_driver(three_sinks(Calls()))
    with pytest.raises(UnknownTopicError, match="'plain', 'store', 'to-kafka'"):
        driver.crash_before_commit("nope")
