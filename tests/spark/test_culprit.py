"""A batch that fails on one record names that record: the batch's records are replayed
through the query's row-wise plan, one half at a time, until one raises the same error
(each input of a stream-stream join on its own); when none is named, the message says
why."""

from __future__ import annotations

import pickle

import pytest
from pyspark.sql import functions as F
from pyspark.sql.types import StringType

from pyspark_streamtest import StreamingQueryFailedError, Topology


def parse(value):  # the user's UDF: a poison pill makes it raise
    if value == "poison":
        raise ValueError(f"cannot parse {value!r}")
    return value.upper()


def plain_users(t: Topology) -> None:
    clicks = t.input("clicks", schema="user STRING, url STRING")
    t.output("users", clicks.select(F.udf(parse, StringType())("user").alias("user"), "url"))


def kafka_counts(t: Topology) -> None:
    """The UDF sits below a stateful operator: the replay stops at the aggregation."""
    values = t.kafka_input("clicks").select(
        F.from_json(F.col("value").cast("string"), "user STRING").alias("v"))
    users = values.select(F.udf(parse, StringType())("v.user").alias("user"))
    t.output("counts", users.groupBy("user").count(), output_mode="update")


def attributed(t: Topology) -> None:
    """Impressions LEFT OUTER joined with the clicks on them within 30 minutes, each
    input's time parsed from text (the issue-50 job's shape)."""
    impressions = (t.input("impressions", schema="imp_id STRING, ts STRING")
                   .select("imp_id", F.col("ts").cast("timestamp").alias("imp_time"))
                   .withWatermark("imp_time", "10 minutes"))
    clicks = (t.input("clicks", schema="click_imp STRING, ts STRING")
              .select("click_imp", F.col("ts").cast("timestamp").alias("click_time"))
              .withWatermark("click_time", "10 minutes"))
    t.output("attributed", impressions.join(clicks, F.expr(
        "imp_id = click_imp AND click_time BETWEEN imp_time AND imp_time + interval 30 minutes"
    ), "leftOuter"))


def test_the_record_that_raised_is_named_among_many(topology_driver):
    driver = topology_driver(plain_users)
    clicks = driver.create_input_topic("clicks")
    users = ["ann", "bob", "cid", "poison", "dan", "eve", "fay"]
    clicks.pipe_value_list([{"user": u, "url": f"/{i}"} for i, u in enumerate(users)])
    with pytest.raises(StreamingQueryFailedError) as failed:
        driver.process_all_available()
    error = failed.value
    assert error.culprit is not None and error.culprit.value == {"user": "poison", "url": "/3"}
    assert len(error.records) == 7
    text = str(error)
    assert ("the record that raised it (the batch's records replayed one half at a time):\n"
            "  clicks  {'user': 'poison', 'url': '/3'}\n") in text
    assert "'ann'" not in text.split("Spark's error:")[0]  # only the culprit is listed
    again = pickle.loads(pickle.dumps(error))  # pytest-xdist carries it
    assert again.culprit == error.culprit and str(again) == text


def test_an_error_only_records_together_raise_says_so(topology_driver):
    """A UDF that raises only when two records meet in one task: the replay halves the
    records, no half raises, and the message says so (the error class alone is known)."""
    def together(t: Topology) -> None:
        clicks = t.input("clicks", schema="user STRING")
        counted = clicks.groupBy().agg(F.count("*").alias("n"))
        t.output("users", counted.select(
            F.udf(lambda n: 1 // (n - 4) if n < 5 else n, "int")("n").alias("n")),
            output_mode="complete")

    driver = topology_driver(together)
    driver.create_input_topic("clicks").pipe_value_list([{"user": u} for u in "abcd"])
    with pytest.raises(StreamingQueryFailedError) as failed:
        driver.process_all_available()
    assert "ZeroDivisionError" in failed.value.cause and failed.value.culprit is None
    assert failed.value.culprit_note.startswith("replayed one half at a time through the "
                                                "query's row-wise plan")


def test_a_kafka_record_is_named_with_its_offset(topology_driver):
    driver = topology_driver(kafka_counts)
    clicks = driver.create_input_topic("clicks", key_serializer="string", value_serializer="json")
    for user in ("ann", "bob", "poison", "dan"):
        clicks.pipe_input(user, {"user": user})
    with pytest.raises(StreamingQueryFailedError) as failed:
        driver.process_all_available()
    assert (failed.value.culprit.key, failed.value.culprit.offset) == ("poison", 2)
    assert "  clicks p0@2  'poison': {'user': 'poison'}\n" in str(failed.value)


@pytest.mark.parametrize("bad", ["clicks", "impressions"])
def test_a_joined_query_names_the_record_of_either_input(topology_driver, bad):
    """Replayed as one batch join, a half holding one input's records only would join
    nothing (Spark's optimizer does not even parse the other input): each input of the
    stream-stream join is replayed on its own."""
    driver = topology_driver(attributed)
    impressions = driver.create_input_topic("impressions")
    clicks = driver.create_input_topic("clicks")
    imp_ts = ["2026-01-01 00:00:00"] * 3
    click_ts = ["2026-01-01 00:01:00", "2026-01-01 00:02:00", "2026-01-01 00:03:00"]
    (imp_ts if bad == "impressions" else click_ts)[1] = "yesterday"
    impressions.pipe_value_list([{"imp_id": f"i{i}", "ts": ts} for i, ts in enumerate(imp_ts)])
    clicks.pipe_value_list([{"click_imp": f"i{i}", "ts": ts} for i, ts in enumerate(click_ts)])
    with pytest.raises(StreamingQueryFailedError) as failed:
        driver.process_all_available()
    error = failed.value
    assert "[CAST_INVALID_INPUT]" in error.cause and len(error.records) == 6
    assert error.culprit is not None and error.culprit.topic == bad
    assert error.culprit.value["ts"] == "yesterday" and error.culprit_note is None
    assert f"the record that raised it (the batch's records replayed one half at a time):\n  {bad}" in str(error)


def test_an_error_no_single_record_raises_names_none(topology_driver):
    """A foreachBatch function that fails on the batch as a whole: no replay can raise
    it, so every record stays listed and the message says why none is named."""
    def failing(batch, batch_id):
        if batch.count() > 2:
            raise ValueError("too many rows in one batch")

    def topology(t: Topology) -> None:
        t.foreach_batch("sink", t.input("clicks", schema="user STRING"), failing)

    driver = topology_driver(topology)
    driver.create_input_topic("clicks").pipe_value_list([{"user": u} for u in "abc"])
    with pytest.raises(StreamingQueryFailedError) as failed:
        driver.process_all_available()
    assert failed.value.culprit is None
    assert ("no record named as the one that raised it: the error (no Python traceback of "
            "a UDF, no Spark error class) is not one that replaying records through the "
            "query's plan can raise: it comes from a foreachBatch function, a sink or the "
            "batch as a whole\n  clicks  {'user': 'a'}\n  clicks  {'user': 'b'}\n"
            ) in str(failed.value)
    again = pickle.loads(pickle.dumps(failed.value))
    assert again.culprit_note == failed.value.culprit_note and str(again) == str(failed.value)


def _fails_on_two(key, frames, state):
    for frame in frames:
        if (frame["n"] > 1).any():
            raise ValueError("n above 1")
        yield frame


def test_an_error_raised_in_a_stateful_function_is_said_to_come_from_it(topology_driver):
    """Issue 58: the note named 'no Python traceback of a UDF' or 'a stateful operator,
    a foreachBatch function or a sink' while the traceback shown was the user's
    applyInPandasWithState function; it now says so, and why no record is named."""
    from pyspark.sql.streaming.state import GroupStateTimeout

    def topology(t: Topology) -> None:
        events = t.input("events", schema="k STRING, n INT")
        t.output("out", events.groupBy("k").applyInPandasWithState(
            _fails_on_two, "k STRING, n INT", "c INT", "append", GroupStateTimeout.NoTimeout))

    driver = topology_driver(topology)
    driver.create_input_topic("events").pipe_value_list([{"k": "a", "n": 1}, {"k": "b", "n": 2}])
    with pytest.raises(StreamingQueryFailedError) as failed:
        driver.process_all_available()
    assert "ValueError: n above 1" in failed.value.cause
    assert failed.value.culprit is None
    assert failed.value.culprit_note is not None
    assert failed.value.culprit_note.startswith(
        "the Python traceback above is the query's stateful function's")
