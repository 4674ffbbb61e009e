"""The fault suite: Spark's JVM killed, checkpoints deleted or unwritable, a sink, a UDF
or the clock raising. Each gives a typed error, nothing hangs, nothing is silently lost.

The JVM kills run in a child pytest with a Spark of its own (killing this run's JVM
would end the run)."""

from __future__ import annotations

pytest_plugins = ["pytester"]

_TOPOLOGY = """
import os
import signal

import pytest

from pyspark_streamtest import SparkDiedError, TopologyTestDriver


def counts(t):
    clicks = t.input("clicks", schema="user STRING")
    t.output("counts", clicks.groupBy("user").count(), output_mode="update")


def kill_jvm(spark):
    os.kill(spark.sparkContext._gateway.proc.pid, signal.SIGKILL)
"""


def test_the_jvm_killed_while_idle_gives_spark_died_and_later_spark_tests_fail_clearly(
    pytester,
):
    pytester.makepyfile(test_killed=_TOPOLOGY + """

def test_kill(spark):
    driver = TopologyTestDriver(counts, spark=spark)
    clicks = driver.create_input_topic("clicks")
    clicks.pipe_input(("a",))
    driver.process_all_available()
    kill_jvm(spark)
    clicks.pipe_input(("b",))
    with pytest.raises(SparkDiedError, match="the Spark JVM is gone"):
        driver.process_all_available()
    assert driver.closed
    with pytest.raises(SparkDiedError, match="closed itself"):
        driver.process_all_available()
    driver.close()  # closing always works


def test_needs_spark_afterwards(spark):
    raise AssertionError("must not run: the JVM is gone")


def test_without_spark():
    assert 1 + 1 == 2
""")
    result = pytester.runpytest_subprocess("-p", "no:randomly", "-p", "no:cacheprovider",
                                           timeout=300)
    result.assert_outcomes(passed=2, errors=1)
    result.stdout.fnmatch_lines([
        "*SparkDiedError: the Spark JVM of this test run died during "
        "test_killed.py::test_kill; this test needs Spark and cannot run*",
    ])


def test_the_jvm_killed_mid_batch_gives_spark_died_without_hanging(pytester):
    pytester.makepyfile(test_killed_mid_batch=_TOPOLOGY + """

def test_kill_mid_batch(spark, monkeypatch):
    from pyspark_streamtest._spark import sink

    def killing(self, jds, batch_id):  # runs on Spark's stream thread, in the batch
        kill_jvm(spark)
        return None

    driver = TopologyTestDriver(counts, spark=spark)
    monkeypatch.setattr(sink.CollectingSink, "apply", killing)
    driver.create_input_topic("clicks").pipe_input(("a",))
    with pytest.raises(SparkDiedError, match="the Spark JVM is gone"):
        driver.process_all_available()
    assert driver.closed and driver.batches == ()
    driver.close()
""")
    result = pytester.runpytest_subprocess("-p", "no:randomly", "-p", "no:cacheprovider",
                                           timeout=300)
    result.assert_outcomes(passed=1)
