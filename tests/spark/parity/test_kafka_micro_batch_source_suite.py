"""Admission-control cases ported from Spark's KafkaMicroBatchSourceSuite
(connector/kafka-0-10-sql, org.apache.spark.sql.kafka010): the batches its authors
expect of the Kafka source under ``maxOffsetsPerTrigger``, ``minOffsetsPerTrigger`` with
``maxTriggerDelay``, ``Trigger.Once`` and ``Trigger.AvailableNow``.

The suite sends string values to chosen partitions (``sendMessages(topic, msgs,
Some(p))``) and reads ``CAST(value AS STRING)`` as an int; here the values are piped to
the same partitions of a Kafka-shaped input and read the same way. The suite's
``Trigger.ProcessingTime(100)`` with a ``StreamManualClock`` is the driver's trigger
interval of 100 ms. Where the suite waits for ``maxTriggerDelay`` on the source's own
clock (a real ``Thread.sleep(5000)``, or its mocked system clock advanced by hand), the
driver's processing time is that clock: the port moves it past the delay instead. The
expected rows are the suite's, unchanged.
"""

from __future__ import annotations

from datetime import timedelta

from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from pyspark_streamtest import Topology, TopologyTestDriver
from tests.helpers import T0

MS_100 = timedelta(milliseconds=100)


def send(topic, values, partition: int) -> None:
    """The suite's ``testUtils.sendMessages(topic, values, Some(partition))``."""
    for value in values:
        topic.pipe_input(None, str(value), partition=partition)


def ints(batch) -> list[int]:
    return [int(r.value) for r in batch.input_records]


def kafka_ints(partitions: int, **limits):
    def topology(t: Topology) -> None:
        kafka = t.kafka_input("topic", partitions=partitions, **limits)
        t.output("ints", kafka.select(F.col("value").cast("string").cast("int").alias("v")))
    return topology


def run(driver, steps: int = 1) -> list:
    """The suite's ``AdvanceManualClock(100)`` + ``waitUntilBatchProcessed``, ``steps``
    times."""
    ran = []
    for _ in range(steps):
        ran.extend(driver.advance_wall_clock(MS_100))
    return ran


# KafkaMicroBatchSourceSuite: "maxOffsetsPerTrigger"
def test_max_offsets_per_trigger(topology_driver):
    driver = topology_driver(kafka_ints(3, max_offsets_per_trigger=10),
                             trigger_interval=MS_100, start_time=T0)
    topic = driver.create_input_topic("topic", value_serializer="string")
    send(topic, range(100, 201), 0)
    send(topic, range(10, 21), 1)
    send(topic, ["1"], 2)
    (first,) = run(driver)
    # 1 from smallest, 1 from middle, 8 from biggest
    assert sorted(ints(first)) == [1, 10, 100, 101, 102, 103, 104, 105, 106, 107]
    (second,) = run(driver)
    # smallest now empty, 1 more from middle, 9 more from biggest
    assert sorted(ints(second)) == [11, *range(108, 117)]
    driver.stop()  # StopStream, StartStream: the backlog stays in the topic
    (third,) = driver.start()
    assert sorted(ints(third)) == [12, *range(117, 126)]
    (fourth,) = run(driver)
    assert sorted(ints(fourth)) == [13, *range(126, 135)]


def test_max_offsets_per_trigger_is_ignored_by_trigger_once(spark):
    """The same case's second half: ``Trigger.Once`` reads everything in one batch, and
    a second run on the same checkpoint reads what was added since."""
    def job(spark: SparkSession) -> None:
        (spark.readStream.format("kafka").option("subscribe", "topic")
         .option("maxOffsetsPerTrigger", 10).option("startingOffsets", "earliest").load()
         .select(F.col("value").cast("string").cast("int").alias("v"))
         .writeStream.format("memory").queryName("ints").trigger(once=True).start())

    with TopologyTestDriver.from_app(job, spark=spark, start_time=T0,
                                     partitions={"topic": 3}) as driver:
        topic = driver.create_input_topic("topic", value_serializer="string")
        send(topic, range(100, 201), 0)
        send(topic, range(10, 21), 1)
        send(topic, ["1"], 2)
        (batch,) = driver.restart()
        all_data = [1, *range(10, 21), *range(100, 201)]
        assert sorted(ints(batch)) == sorted(all_data)
        send(topic, range(1000, 1011), 0)  # AddKafkaData(Set(topic), 1000 to 1010)
        (batch,) = driver.restart()
        assert sorted(ints(batch)) == list(range(1000, 1011))
        assert driver.ended_outputs == ("ints",)


# KafkaMicroBatchSourceSuite: "minOffsetsPerTrigger"
def test_min_offsets_per_trigger(topology_driver):
    driver = topology_driver(kafka_ints(3, min_offsets_per_trigger=15,
                                        max_trigger_delay=timedelta(seconds=5)),
                             trigger_interval=MS_100, start_time=T0)
    topic = driver.create_input_topic("topic", value_serializer="string")
    send(topic, range(100, 110), 0)
    send(topic, range(10, 15), 1)
    send(topic, ["1"], 2)
    (first,) = run(driver)
    # First Batch is always processed
    assert sorted(ints(first)) == sorted([1, 10, *range(100, 110), 11, 12, 13, 14])
    # Adding more data but less than minOffsetsPerTrigger
    send(topic, range(15, 21), 1)
    # No data is processed for next batch as data is less than minOffsetsPerTrigger
    # and maxTriggerDelay is not expired
    assert run(driver) == []
    send(topic, range(110, 121), 0)
    send(topic, ["2"], 2)
    # Running batch now as number of records is greater than minOffsetsPerTrigger
    (second,) = run(driver)
    assert sorted(ints(second)) == sorted([*range(15, 21), *range(110, 121), 2])
    # Testing maxTriggerDelay: adding more data but less than minOffsetsPerTrigger
    send(topic, range(121, 126), 0)
    send(topic, range(21, 26), 1)
    # No data is processed for next batch till maxTriggerDelay is expired
    assert run(driver) == []
    # (the suite sleeps 5 s of the source's clock; here that clock is processing time:
    # the batch runs at the first trigger 5 s after the last one that ran, at 0.3 s)
    waited = run(driver, 49)
    assert [b.processing_time - T0 for b in waited] == [timedelta(milliseconds=5300)]
    assert sorted(ints(waited[0])) == sorted([*range(121, 126), *range(21, 26)])


# KafkaMicroBatchSourceSuite: "compositeReadLimit"
def test_composite_read_limit(topology_driver):
    driver = topology_driver(kafka_ints(3, min_offsets_per_trigger=15,
                                        max_offsets_per_trigger=20,
                                        max_trigger_delay=timedelta(seconds=5)),
                             trigger_interval=MS_100, start_time=T0)
    topic = driver.create_input_topic("topic", value_serializer="string")
    send(topic, range(100, 121), 0)
    send(topic, range(10, 21), 1)
    send(topic, ["1"], 2)
    (first,) = run(driver)
    # First Batch is always processed but it will process only 20 (19: 12 + 6 + 1)
    assert sorted(ints(first)) == sorted([1, *range(10, 16), *range(100, 112)])
    # Pending data is less than minOffsetsPerTrigger: nothing runs
    assert run(driver) == []
    send(topic, range(121, 129), 0)
    send(topic, range(21, 31), 1)
    send(topic, ["2"], 2)
    # Running batch now as number of new records is greater than minOffsetsPerTrigger
    # but reading limited data as per maxOffsetsPerTrigger
    (second,) = run(driver)
    assert sorted(ints(second)) == sorted([*range(112, 122), *range(16, 25), 2])
    # Testing maxTriggerDelay: no data is processed for next batch till it is expired
    assert run(driver) == []
    # (the suite advances its mocked source clock by 5 s; here it is processing time: the
    # first trigger 5 s after the batch at 0.3 s)
    waited = run(driver, 49)
    assert [b.processing_time - T0 for b in waited] == [timedelta(milliseconds=5300)]
    assert sorted(ints(waited[0])) == sorted([*range(122, 129), *range(25, 31)])


# KafkaMicroBatchSourceSuite: "Trigger.AvailableNow"
def test_trigger_available_now(spark):
    batches: list[int] = []

    def job(spark: SparkSession) -> None:
        (spark.readStream.format("kafka").option("subscribe", "topic")
         .option("maxOffsetsPerTrigger", 5).option("startingOffsets", "earliest").load()
         .writeStream.foreachBatch(lambda df, batch_id: batches.append(batch_id))
         .trigger(availableNow=True).start())

    with TopologyTestDriver.from_app(job, spark=spark, start_time=T0,
                                     partitions={"topic": 5}) as driver:
        topic = driver.create_input_topic("topic", value_serializer="string")
        send(topic, [f"foo-{x}" for x in range(15)], 0)
        batches.clear()
        driver.restart()
        # should have 3 batches now i.e. 15 / 5 = 3
        assert batches == [0, 1, 2]
        assert not driver.is_running


# KafkaMicroBatchSourceSuite: "SPARK-22956: currentPartitionOffsets should be set when no
# new data comes in"
def test_two_sources_each_with_its_limit(topology_driver):
    def topology(t: Topology) -> None:
        def ints_of(name: str):
            return t.kafka_input(name, max_offsets_per_trigger=5).select(
                F.col("value").cast("string").cast("int").alias("v"))
        t.output("ints", ints_of("small").union(ints_of("big")))

    driver = topology_driver(topology, trigger_interval=MS_100, start_time=T0)
    send(driver.create_input_topic("small", value_serializer="string"), range(0, 10), 0)
    send(driver.create_input_topic("big", value_serializer="string"), range(100, 200), 0)
    ran = run(driver, 3)
    # 5 from smaller topic, 5 from bigger one; then the smaller one is empty
    assert [sorted(ints(b)) for b in ran] == [
        [*range(0, 5), *range(100, 105)], [*range(5, 10), *range(105, 110)],
        list(range(110, 115))]
    driver.stop()
    (after,) = driver.start()
    assert sorted(ints(after)) == list(range(115, 120))
    (last,) = run(driver)
    assert sorted(ints(last)) == list(range(120, 125))


# KafkaMicroBatchSourceSuite: "test custom metrics - with rate limit" (its answer; the batch
# count, 5, follows from the rule: a share below 1 rounds up, one record a partition)
def test_a_limit_below_the_partition_count_takes_one_record_from_each(topology_driver):
    driver = topology_driver(kafka_ints(2, max_offsets_per_trigger=1), start_time=T0)
    topic = driver.create_input_topic("topic", value_serializer="string")
    send(topic, range(1, 6), 0)
    send(topic, range(6, 11), 1)
    ran = driver.process_all_available()
    assert [sorted(ints(b)) for b in ran] == [[1, 6], [2, 7], [3, 8], [4, 9], [5, 10]]
