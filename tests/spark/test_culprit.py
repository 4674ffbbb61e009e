"""A batch that fails on one record names that record: the batch's records are replayed
through the query's row-wise plan, one half at a time, until one raises the same error."""

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


def test_a_kafka_record_is_named_with_its_offset(topology_driver):
    driver = topology_driver(kafka_counts)
    clicks = driver.create_input_topic("clicks", key_serializer="string", value_serializer="json")
    for user in ("ann", "bob", "poison", "dan"):
        clicks.pipe_input(user, {"user": user})
    with pytest.raises(StreamingQueryFailedError) as failed:
        driver.process_all_available()
    assert (failed.value.culprit.key, failed.value.culprit.offset) == ("poison", 2)
    assert "  clicks p0@2  'poison': {'user': 'poison'}\n" in str(failed.value)


def test_an_error_no_single_record_raises_names_none(topology_driver):
    """A foreachBatch function that fails on the batch as a whole: replaying the plan
    raises nothing, so every record stays listed."""
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
    assert "  clicks  {'user': 'a'}\n  clicks  {'user': 'b'}\n" in str(failed.value)
