"""The fault suite: Spark's JVM killed, checkpoints deleted or unwritable, a sink, a UDF
or the clock raising. Each gives a typed error, nothing hangs, nothing is silently lost.

The JVM kills run in a child pytest with a Spark of its own (killing this run's JVM
would end the run)."""

from __future__ import annotations

import importlib
import shutil
from datetime import timedelta

import pytest

from pyspark_streamtest import TopologyTestDriver

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


@pytest.fixture(autouse=True)
def _a_jvm_of_the_child_s_own(monkeypatch):
    """The child runs kill the JVM their session started, by PySpark's handle on its
    process (``gateway.proc``), which a JVM attached to has not: no warm JVM here."""
    monkeypatch.setenv("STREAMTEST_WARM_JVM", "off")


def _run_child(pytester):
    """The child pytest with its Spark session (a JVM the test may kill)."""
    return pytester.runpytest_subprocess("-p", "no:randomly", "-p", "no:cacheprovider",
                                         timeout=300)


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
    result = _run_child(pytester)
    result.assert_outcomes(passed=2, errors=1)
    result.stdout.fnmatch_lines([
        "*SparkDiedError: the Spark JVM of this test run died during "
        "test_killed.py::test_kill; this test needs Spark and cannot run*",
    ])


def test_the_jvm_killed_mid_batch_gives_spark_died_without_hanging(pytester):
    pytester.makepyfile(test_killed_mid_batch=_TOPOLOGY + """

def test_kill_mid_batch(spark, monkeypatch):
    from pyspark_streamtest._spark.query import sink

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
    result = _run_child(pytester)
    result.assert_outcomes(passed=1)


def test_the_jvm_killed_between_tests_gives_typed_errors_never_a_connection_error(pytester):
    # conftest: the JVM dies after test_first has ended (torn down, its driver closed),
    # before the next test starts, as the OOM killer would while the run is idle.
    pytester.makeconftest("""
import os
import signal

from pyspark.sql import SparkSession


def pytest_runtest_logfinish(nodeid, location):
    if nodeid.endswith("::test_first"):
        proc = SparkSession.getActiveSession().sparkContext._gateway.proc
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=60)
""")
    pytester.makepyfile(test_between=_TOPOLOGY + """

def test_first(topology_driver):
    driver = topology_driver(counts)
    driver.create_input_topic("clicks").pipe_input(("a",))
    driver.process_all_available()


def test_next(topology_driver):
    raise AssertionError("must not run: the JVM died before it")


def test_without_spark():
    assert 1 + 1 == 2
""")
    result = _run_child(pytester)
    result.assert_outcomes(passed=2, errors=1)
    result.stdout.fnmatch_lines([
        "*ERROR at setup of test_next*",
        "*SparkDiedError: the Spark JVM of this test run died between tests, before "
        "test_between.py::test_next; this test needs Spark and cannot run*",
    ])
    result.stdout.no_fnmatch_line("*ConnectionRefusedError*")


def test_the_jvm_killed_while_a_test_s_driver_is_idle_fails_its_teardown_typed(pytester):
    pytester.makepyfile(test_idle=_TOPOLOGY + """

def test_kill_while_idle(spark, topology_driver):
    driver = topology_driver(counts)
    driver.create_input_topic("clicks").pipe_input(("a",))
    driver.process_all_available()
    kill_jvm(spark)
    spark.sparkContext._gateway.proc.wait(timeout=60)
    with pytest.raises(SparkDiedError, match="the Spark JVM of this session is gone"):
        topology_driver(counts)  # not a TopologyError about a refused connection
    # the test ends without touching Spark again: its teardown reports the death


def test_needs_spark_afterwards(spark):
    raise AssertionError("must not run: the JVM is gone")
""")
    result = _run_child(pytester)
    result.assert_outcomes(passed=1, errors=2)
    result.stdout.fnmatch_lines([
        "*ERROR at teardown of test_kill_while_idle*",
        "*SparkDiedError: the Spark JVM died during test_idle.py::test_kill_while_idle*",
        "*ERROR at setup of test_needs_spark_afterwards*",
        "*SparkDiedError: the Spark JVM of this test run died during "
        "test_idle.py::test_kill_while_idle; this test needs Spark*",
    ])
    result.stdout.no_fnmatch_line("*ConnectionRefusedError*")


# --- faults in this run's JVM: each is a typed error, and nothing is left running ---------
def _counts(t):
    clicks = t.input("clicks", schema="user STRING")
    t.output("counts", clicks.groupBy("user").count(), output_mode="update")


def _corrupt_offset_log(driver, folder) -> None:
    (offsets,) = folder.glob("*/*/offsets")
    (offsets / "0").write_text("not an offset log entry\n")


def _checkpoint_not_writable(driver, folder) -> None:
    (offsets,) = folder.glob("*/*/offsets")
    shutil.rmtree(offsets)
    offsets.write_text("a file where Spark needs a directory: writes fail, like a full disk")


def _raise_in(cls_path: str, method: str):
    def inject(driver, folder) -> None:
        module, cls = cls_path.rsplit(".", 1)
        owner = getattr(importlib.import_module(module), cls)
        original = getattr(owner, method)

        def failing(self, *args):
            setattr(owner, method, original)  # once
            raise OSError(f"injected failure in {cls}.{method}")

        setattr(owner, method, failing)
    return inject


@pytest.mark.parametrize(("fault", "then", "error"), [
    (_corrupt_offset_log, "restart", "StreamTestError"),
    (_checkpoint_not_writable, "advance", "StreamingQueryFailedError"),
    (_raise_in("pyspark_streamtest._spark.query.sink.CollectingSink", "apply"), "advance",
     "StreamingQueryFailedError"),
], ids=["corrupt-offset-log", "checkpoint-not-writable", "sink-raises"])
def test_a_fault_is_a_typed_error_and_leaves_nothing_running(spark, tmp_path, fault, then,
                                                             error):
    import pyspark_streamtest as pst

    driver = TopologyTestDriver(_counts, spark=spark, checkpoint_root=tmp_path)
    try:
        clicks = driver.create_input_topic("clicks")
        clicks.pipe_input(("a",))
        driver.process_all_available()
        fault(driver, tmp_path)
        clicks.pipe_input(("b",))
        with pytest.raises(getattr(pst, error)) as caught:
            if then == "restart":
                driver.restart()
            else:
                driver.advance_wall_clock(timedelta(seconds=1))
        assert "Traceback" not in str(caught.value).splitlines()[0]
        assert spark.streams.active == []
    finally:
        driver.close()  # closing always works
    assert spark.streams.active == [] and list(tmp_path.iterdir()) == []


def _fails_on_poison(value):  # no type hints: PySpark would read them as a pandas UDF
    if value == "poison":
        raise ValueError("poison")
    return value


def _checked_counts(t):
    from pyspark.sql import functions as F
    from pyspark.sql.types import StringType

    clicks = t.input("clicks", schema="user STRING")
    checked = clicks.select(F.udf(_fails_on_poison, StringType())("user").alias("user"))
    t.output("counts", checked.groupBy("user").count(), output_mode="update")


def test_a_batch_failing_in_a_udf_ends_its_query_through_spark_s_own_failure_path(spark):
    """Spark looks for a Java interruption in a Python callback's error text with a
    recursive regex; the whole text of a failed job (its Java stack trace inside the
    Python traceback) can overflow the stream thread's stack, which then dies of
    StackOverflowError before Spark has recorded the failure (every failed lifecycle of
    test_lifecycle.py did, under pytest). The sink hands Spark one line instead, so the
    query ends as Spark ends a failed query: with its exception set, naming the batch."""
    from pyspark_streamtest import StreamingQueryFailedError

    with TopologyTestDriver(_checked_counts, spark=spark) as driver:
        clicks = driver.create_input_topic("clicks")
        clicks.pipe_input(("a",))
        driver.process_all_available()
        jquery = driver._queries.runners[0]._jquery
        clicks.pipe_input(("poison",))
        with pytest.raises(StreamingQueryFailedError, match="poison"):
            driver.process_all_available()
    failure = jquery.exception()
    assert failure.isDefined()
    message = str(failure.get().getMessage())
    assert "batch 1 failed in the pyspark-streamtest driver's sink" in message
    assert len(message) < 2000, message
