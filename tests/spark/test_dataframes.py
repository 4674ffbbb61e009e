"""DataFrame interop: outputs, Kafka topics and state stores as Spark DataFrames, compared
with chispa and with pyspark.testing.assertDataFrameEqual."""

from __future__ import annotations

import pytest
from chispa import assert_df_equality
from chispa.dataframe_comparer import DataFramesNotEqualError
from pyspark.sql import functions as F
from pyspark.testing import assertDataFrameEqual

from pyspark_streamtest import (
    DriverClosedError,
    Feature,
    StateStoreError,
    Topology,
    TopologyTestDriver,
    UninitializedTopicError,
)
from tests.helpers import at, clicks_per_user, counts_per_user

needs_state_reads = pytest.mark.streamtest_requires(Feature.STATE_STORE_READS)


def keyed_changes(t: Topology) -> None:
    events = t.kafka_input("events")
    t.kafka_output("sink", events.select("key", "value"), topic="changes")


def test_to_dataframe_has_every_row_written_with_the_output_schema(spark, topology_driver):
    driver = topology_driver(counts_per_user)
    clicks = driver.create_input_topic("clicks")
    counts = driver.create_output_topic("counts")
    clicks.pipe_value_list([{"user": "a", "url": "/"}, {"user": "b", "url": "/"}])
    driver.process_all_available()
    clicks.pipe_input({"user": "a", "url": "/x"})
    driver.process_all_available()

    expected = spark.createDataFrame([("a", 1), ("b", 1), ("a", 2)], "user STRING, count BIGINT")
    actual = counts.to_dataframe()
    assert actual.schema.simpleString() == "struct<user:string,count:bigint>"
    assert_df_equality(actual, expected, ignore_row_order=True, ignore_nullable=True)
    assertDataFrameEqual(actual, expected)
    assert counts.queue_size == 3  # to_dataframe reads nothing


def test_read_dataframe_consumes_the_unread_rows(spark, topology_driver):
    driver = topology_driver(counts_per_user)
    clicks = driver.create_input_topic("clicks")
    counts = driver.create_output_topic("counts")
    clicks.pipe_input({"user": "a", "url": "/"})
    driver.process_all_available()
    assert counts.read_value() == {"user": "a", "count": 1}
    clicks.pipe_value_list([{"user": "a", "url": "/"}, {"user": "c", "url": "/"}])
    driver.process_all_available()

    assertDataFrameEqual(
        counts.read_dataframe(),
        spark.createDataFrame([("a", 2), ("c", 1)], "user STRING, count BIGINT"),
    )
    assert counts.is_empty()
    empty = counts.read_dataframe()
    assert empty.count() == 0
    assert empty.schema.simpleString() == "struct<user:string,count:bigint>"
    assert counts.to_dataframe().count() == 3  # the history keeps every row


def test_a_wrong_expectation_fails_in_both_libraries(spark, topology_driver):
    driver = topology_driver(counts_per_user)
    clicks = driver.create_input_topic("clicks")
    counts = driver.create_output_topic("counts")
    clicks.pipe_input({"user": "a", "url": "/"})
    driver.process_all_available()
    wrong = spark.createDataFrame([("a", 2)], "user STRING, count BIGINT")
    with pytest.raises(DataFramesNotEqualError):
        assert_df_equality(counts.to_dataframe(), wrong, ignore_nullable=True)
    with pytest.raises(AssertionError):
        assertDataFrameEqual(counts.to_dataframe(), wrong)


def test_windowed_rows_keep_their_struct_and_timestamp_columns(spark, topology_driver):
    driver = topology_driver(clicks_per_user)
    clicks = driver.create_input_topic("clicks")
    counts = driver.create_output_topic("counts")
    clicks.pipe_input({"user": "a", "url": "/"}, timestamp=at(1))
    clicks.pipe_input({"user": "a", "url": "/"}, timestamp=at(25))
    driver.process_all_available()

    actual = counts.to_dataframe()
    expected = spark.createDataFrame(
        [((at(0), at(10)), "a", 1)],
        "window STRUCT<start: TIMESTAMP, end: TIMESTAMP>, user STRING, count BIGINT",
    )
    assertDataFrameEqual(actual, expected)
    assert actual.select(F.col("window.end").cast("long")).first()[0] == at(10).timestamp()


def test_kafka_topic_reads_back_as_the_kafka_source_shape(spark, topology_driver):
    driver = topology_driver(keyed_changes)
    events = driver.create_input_topic("events", key_serializer="string",
                                       value_serializer="string")
    changes = driver.create_output_topic("changes", key_deserializer="string",
                                         value_deserializer="string")
    with pytest.raises(UninitializedTopicError):
        changes.read_value()
    assert changes.to_dataframe().count() == 0  # never written: no rows, the Kafka columns
    events.pipe_input("k1", "v1")
    events.pipe_input("k2", None)  # a tombstone
    driver.process_all_available()

    frame = changes.to_dataframe()
    assert frame.columns == ["key", "value", "topic", "partition", "offset", "timestamp",
                             "timestampType", "headers"]
    rows = frame.select("key", "value", "topic", "partition", "offset").collect()
    assert [tuple(r) for r in rows] == [
        (b"k1", b"v1", "changes", 0, 0),
        (b"k2", None, "changes", 0, 1),
    ]
    decoded = frame.select(F.col("key").cast("string").alias("key"),
                           F.col("value").cast("string").alias("value"))
    assertDataFrameEqual(decoded, spark.createDataFrame([("k1", "v1"), ("k2", None)],
                                                        "key STRING, value STRING"))
    assert changes.read_key_value() == ("k1", "v1")  # to_dataframe consumed nothing


@needs_state_reads
def test_state_store_view_as_a_dataframe(spark, topology_driver):
    driver = topology_driver(counts_per_user)
    clicks = driver.create_input_topic("clicks")
    with pytest.raises(StateStoreError, match="run a batch first"):
        driver.get_key_value_store("counts").to_dataframe()
    clicks.pipe_value_list([{"user": "a", "url": "/"}, {"user": "a", "url": "/x"},
                            {"user": "b", "url": "/"}])
    driver.process_all_available()

    state = driver.get_key_value_store("counts").to_dataframe()
    assert state.columns == ["key", "value"]
    expected = spark.createDataFrame(
        [(("a",), (2,)), (("b",), (1,))],
        "key STRUCT<user: STRING>, value STRUCT<count: BIGINT>",
    )
    assertDataFrameEqual(state, expected)
    assert_df_equality(state, expected, ignore_row_order=True, ignore_nullable=True)


def test_to_dataframe_after_close_is_refused(spark):
    with TopologyTestDriver(counts_per_user, spark=spark) as driver:
        counts = driver.create_output_topic("counts")
    with pytest.raises(DriverClosedError):
        counts.to_dataframe()
