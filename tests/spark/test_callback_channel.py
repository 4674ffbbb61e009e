"""A failure of Py4J's channel between the JVM and this process (issue 49) is the
harness's, never the batch's records: provoked here as a late "forget proxy" from an
earlier run on a warm JVM provoked it, by taking the driver's own Python objects out of
Py4J's pool while its query runs."""

from __future__ import annotations

import pytest

from pyspark_streamtest import (
    CallbackChannelError,
    SparkInfrastructureError,
    StreamingQueryFailedError,
    Topology,
)


def passing(t: Topology) -> None:
    t.output("out", t.input("events", schema="n INT"))


def test_a_proxy_the_jvm_calls_but_this_process_forgot_is_a_channel_error(
        topology_driver, spark):
    pool = spark.sparkContext._gateway.gateway_property.pool
    before = set(pool.dict)
    driver = topology_driver(passing)
    events = driver.create_input_topic("events")
    events.pipe_input({"n": 1})
    driver.process_all_available()
    with pool.lock:  # what Py4J does on the JVM's "forget pN": the driver's clock and sink
        for proxy_id in set(pool.dict) - before:
            del pool.dict[proxy_id]
    events.pipe_input({"n": 2})

    with pytest.raises(CallbackChannelError) as raised:
        driver.process_all_available()

    error = raised.value
    assert isinstance(error, SparkInfrastructureError)
    assert not isinstance(error, StreamingQueryFailedError)
    assert (error.output, error.batch_id) == ("out", 1)
    assert "Object ID unknown" in error.cause
    text = str(error)
    assert text.startswith("the query of output 'out' could not run batch 1: the JVM called a "
                           "Python object this process no longer knows")
    assert "not the batch's data or your code" in text
    assert "{'n': 2}" not in text  # the record is not blamed
    assert "--streamtest-warm-jvm=off" in text
    assert spark.streams.active == []  # the driver stopped its query, as after any failure
