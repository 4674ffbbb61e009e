"""Spark's errors that mean its machinery failed (a Python worker that did not connect
back in time) are told apart from the batch's own failures."""

from __future__ import annotations

import pytest

from pyspark_streamtest import (
    BatchFailedError,
    SparkInfrastructureError,
    StreamingQueryFailedError,
)
from pyspark_streamtest._spark.infrastructure import infrastructure_failure, machine_load

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
