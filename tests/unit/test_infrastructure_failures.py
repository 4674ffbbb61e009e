"""Spark's errors that mean its machinery failed (a Python worker that did not connect
back in time) are told apart from the batch's own failures."""

from __future__ import annotations

import pickle

import pytest

from pyspark_streamtest import (
    BatchFailedError,
    CallbackChannelError,
    SparkInfrastructureError,
    StreamingQueryFailedError,
)
from pyspark_streamtest._spark.runtime.infrastructure import (
    channel_failure,
    infrastructure_failure,
    machine_load,
)

# Spark's own texts, as the failed IoT-job runs printed them (issue 36) and as Spark 4.3's
# PythonWorkerFactory and PySpark's util.py word them.
MACHINERY = [
    "org.apache.spark.SparkException: Python worker failed to connect back.\n"
    "Caused by: java.net.SocketTimeoutException: Timed out while waiting for the Python "
    "worker to connect back",
    "[CANNOT_OPEN_SOCKET] Can not open socket: [\"tried to connect to ('127.0.0.1', "
    "40311), but an error occurred: timed out\"].",
    "java.lang.IllegalStateException: Python daemon failed to launch worker.",
    "org.apache.spark.SparkException: EOFException occurred while reading the port number "
    "from pyspark.daemon's stdout and terminated with code: 1.",
]
THE_BATCH = [
    "PythonException: ValueError: invalid literal for int() with base 10: 'x'",
    "[CAST_INVALID_INPUT] The value 'x' of the type \"STRING\" cannot be cast to \"INT\"",
    "org.apache.spark.SparkException: Python worker exited unexpectedly (crashed)",
]


@pytest.mark.parametrize("cause", MACHINERY)
def test_spark_s_worker_start_failures_are_the_machinery_s(cause):
    assert infrastructure_failure(cause) is not None


@pytest.mark.parametrize("cause", THE_BATCH)
def test_the_batch_s_own_failures_are_not(cause):
    assert infrastructure_failure(cause) is None


def test_the_error_names_the_machine_not_the_data():
    error = SparkInfrastructureError("alerts", 0, MACHINERY[0],
                                     infrastructure_failure(MACHINERY[0]) or "", machine_load())
    text = str(error)
    assert text.startswith("the query of output 'alerts' could not run batch 0: a Python "
                           "worker Spark started did not connect back")
    assert "on " in error.load and "cores" in error.load
    assert "not the batch's data" in text and "it read" not in text
    assert "restart() retries batch 0" in text and text.endswith(MACHINERY[0])
    assert isinstance(error, BatchFailedError)
    assert not isinstance(error, StreamingQueryFailedError)  # raises(...) never passes on it


# Py4J's own texts (0.10.9.9's Java side) for a failed call from the JVM into Python:
# the first as a warm run printed it when an earlier run's proxy was finalized into it
# (issue 49).
CHANNEL = [
    "py4j.Py4JException: An exception was raised by the Python Proxy. Return Message: "
    "Object ID unknown",
    "py4j.Py4JException: Unknown command received: apply",
    "py4j.Py4JException: Error while obtaining a new communication channel\n"
    "Caused by: java.net.ConnectException: Connection refused",
    "py4j.Py4JNetworkException: Error while sending a command: c\np3\ncall",
]
# A foreachBatch function's own exception comes back over a working channel.
OVER_A_WORKING_CHANNEL = [
    "py4j.Py4JException: An exception was raised by the Python Proxy. Return Message: "
    "Traceback (most recent call last):\n  File \"job.py\", line 3, in audit\n"
    "ValueError: cannot store 'p-4'",
    *THE_BATCH,
]


@pytest.mark.parametrize("cause", CHANNEL)
def test_py4j_s_channel_failures_are_the_channel_s(cause):
    assert channel_failure(cause) is not None


@pytest.mark.parametrize("cause", OVER_A_WORKING_CHANNEL)
def test_errors_that_crossed_a_working_channel_are_not(cause):
    assert channel_failure(cause) is None


@pytest.mark.parametrize("pid", [4242, None])
def test_a_channel_failure_names_the_harness_and_how_to_turn_warm_jvms_off(pid):
    error = CallbackChannelError("payment-totals", 1, CHANNEL[0],
                                 channel_failure(CHANNEL[0]) or "", machine_load(),
                                 warm_jvm_pid=pid)
    text = str(error)
    assert text.startswith(
        "the query of output 'payment-totals' could not run batch 1: the JVM called a "
        "Python object this process no longer knows (Py4J: Object ID unknown). This is "
        "the test harness's Py4J channel")
    assert "not the batch's data or your code" in text and "it read" not in text
    assert "STREAMTEST_WARM_JVM=off" in text and "--streamtest-warm-jvm=off" in text
    assert (f"attached to a warm JVM (pid {pid})" in text) == (pid is not None)
    assert "restart() retries batch 1" in text and text.endswith(CHANNEL[0])
    assert isinstance(error, SparkInfrastructureError)
    assert not isinstance(error, StreamingQueryFailedError)
    back = pickle.loads(pickle.dumps(error))
    assert type(back) is CallbackChannelError and str(back) == text
    assert back.warm_jvm_pid == pid
