"""What a failing test shows: the user's frames, the error in a few lines, no JVM noise.

Each test runs a small test file in an inner pytest (in this process, on this Spark
session) and reads its report as a user would see it.
"""

from __future__ import annotations

import contextlib
import importlib.util

import pytest

from pyspark_streamtest import Feature, StreamingQueryFailedError

# Loaded here, before the inner runs: pytester takes modules an inner run imported out
# of sys.modules after it, and numpy (imported by PySpark's UDF code) cannot load twice,
# nor PySpark 4's classic Column (a second copy is "not a Column"). Run alone, this file
# would otherwise load them first in an inner run.
with contextlib.suppress(ImportError):
    import numpy  # noqa: F401
    import pyspark.sql.pandas.map_ops
with contextlib.suppress(ImportError):  # PySpark 4 (3.5 has no classic package)
    import pyspark.sql.classic.column
    import pyspark.sql.classic.dataframe  # noqa: F401
import pyspark_streamtest.driver.driver
import pyspark_streamtest.reporting.timeline  # noqa: F401 (the plugin's, on a failure)

pytest_plugins = ["pytester"]

_TOPOLOGY = """
    import sys

    from pyspark import cloudpickle
    from pyspark.sql import functions as F
    from pyspark.sql.types import StringType
    from pyspark_streamtest import TopologyTestDriver

    # Spark's Python workers cannot import this temporary test module: ship the UDF.
    cloudpickle.register_pickle_by_value(sys.modules[__name__])

    def parse(value):  # the user's UDF: a poison pill makes it raise
        if value == "poison":
            raise ValueError(f"cannot parse {value!r}")
        return value

    def clicks(t):
        udf = F.udf(parse, StringType())
        c = t.input("clicks", schema="user STRING, url STRING")
        t.output("users", c.select(udf("user").alias("user"), "url"))
"""


def _failure_section(result: pytest.RunResult) -> list[str]:
    lines = result.stdout.lines
    start = next(i for i, line in enumerate(lines) if "FAILURES" in line)
    end = next(i for i, line in enumerate(lines) if "short test summary" in line)
    return lines[start:end]


def test_a_failing_udf_is_reported_in_a_few_lines_without_jvm_traces(pytester):
    pytester.makepyfile(test_poison=_TOPOLOGY + """
    def test_poison_pill(spark):
        with TopologyTestDriver(clicks, spark=spark) as driver:
            driver.create_input_topic("clicks").pipe_input(("poison", "/home"))
            driver.process_all_available()
    """)
    result = pytester.runpytest_inprocess("-p", "no:randomly", "-p", "no:cacheprovider")
    result.assert_outcomes(failed=1)
    report = _failure_section(result)
    text = "\n".join(report)
    assert "StreamingQueryFailedError: the query of output 'users' failed in batch 0" in text
    assert "  clicks  {'user': 'poison', 'url': '/home'}" in text  # the record it read
    assert "raise ValueError(f\"cannot parse {value!r}\")" in text  # the user's frame
    assert "ValueError: cannot parse 'poison'" in text
    assert "\tat org.apache" not in text and "at org.apache.spark" not in text  # no JVM stack
    assert "Python Proxy" not in text  # Py4J's log record of the same error is dropped
    assert "src/pyspark_streamtest" not in text and "pyspark_streamtest/driver" not in text
    assert len(report) < 30, text


def test_a_failed_assert_values_shows_the_test_line_and_a_wrapped_diff(pytester):
    pytester.makepyfile(test_diff=_TOPOLOGY + """
    def test_wide_rows(topology_driver):
        driver = topology_driver(clicks)
        driver.create_input_topic("clicks").pipe_input(("a", "/" + "x" * 150))
        driver.process_all_available()
        driver.create_output_topic("users").assert_values(
            [{"user": "a", "url": "/" + "y" * 150}])
    """)
    result = pytester.runpytest_inprocess("-p", "no:randomly", "-p", "no:cacheprovider")
    result.assert_outcomes(failed=1)
    report = _failure_section(result)
    text = "\n".join(report)
    assert "pyspark_streamtest" not in text.replace("pyspark_streamtest.OutputMismatchError", "")
    errors = [line for line in report if line.startswith("E ")]
    assert errors[0] == ("E       pyspark_streamtest.OutputMismatchError: output 'users': "
                         "1 values expected, 1 read; 1 differ (wide values: a field per line)")
    # Below the line naming the error, no line is wider than 100 (and pytest's "E   ").
    assert max(len(line) for line in errors[1:]) <= 112, text
    assert sum(line.startswith("test_diff.py:") for line in report) == 1  # the test's line
    # The batch timeline of the failed test shows what each batch emitted, wrapped.
    timeline = report[next(i for i, line in enumerate(report) if "streamtest timeline" in line):]
    first = next(i for i, line in enumerate(timeline) if line.startswith('      -> {"url":"/xxxx'))
    assert timeline[first + 1].endswith('xxx","user":"a"}'), text


def test_a_bug_of_ours_keeps_our_frames(pytester):
    """Only failures the package reports hide its frames: anything else (here a Python
    error from inside the package) keeps them, so a bug can be found."""
    from pyspark_streamtest.errors import DriverClosedError, hide_our_frames

    for error, hidden in ((DriverClosedError("closed"), True), (AssertionError("x"), True),
                          (KeyError("k"), False)):
        try:
            raise error
        except BaseException:
            assert hide_our_frames(pytest.ExceptionInfo.from_current()) is hidden
    assert hide_our_frames(None) is False


_CAST = """
    from pyspark.sql import functions as F

    def casts(t):  # ANSI mode (Spark 4's default): "abc" cannot be cast, the batch fails
        rows = t.input("rows", schema="s STRING")
        t.output("ints", rows.select(F.col("s").cast("int").alias("i")))

    def test_cast_fails(topology_driver):
        driver = topology_driver(casts, sql_conf={"spark.sql.ansi.enabled": "true"})
        driver.create_input_topic("rows").pipe_input(("abc",))
        driver.process_all_available()
"""


def test_a_failing_ansi_cast_is_reported_without_pyspark_s_json_logs(pytester):
    """PySpark 4 logs each captured error with a DataFrame context as a JSON line with
    the JVM stack (about 10 KB); the driver's report says it all, so quiet logs drop it.
    A child pytest: a process where PySpark makes its loggers during the test, as in a
    user's run (the failing test's report shows its captured stderr)."""
    pytester.makepyfile(test_cast=_CAST)
    result = pytester.runpytest_subprocess("-p", "no:randomly", "-p", "no:cacheprovider",
                                           timeout=240)
    result.assert_outcomes(failed=1)
    text = "\n".join(result.stdout.lines + result.stderr.lines)
    assert "StreamingQueryFailedError: the query of output 'ints' failed in batch 0" in text
    assert "[CAST_INVALID_INPUT] The value 'abc'" in text
    assert "DataFrameQueryContextLogger" not in text
    assert max(len(line) for line in result.stdout.lines + result.stderr.lines) < 1000


def test_jvm_logs_bring_back_spark_s_own_reports_with_stack_traces(pytester):
    """``--streamtest-jvm-logs`` (a session of its own: a child pytest with its own JVM)
    logs the task's exception with its JVM stack trace, for debugging, and on PySpark 4
    PySpark's JSON log of an error's DataFrame context."""
    pytester.makepyfile(test_poison=_TOPOLOGY + """
    def test_poison_pill(spark):
        with TopologyTestDriver(clicks, spark=spark) as driver:
            driver.create_input_topic("clicks").pipe_input(("poison", "/home"))
            driver.process_all_available()
    """, test_cast=_CAST)
    result = pytester.runpytest_subprocess("-p", "no:randomly", "-p", "no:cacheprovider",
                                           "--streamtest-jvm-logs", timeout=240)
    result.assert_outcomes(failed=2)
    text = "\n".join(result.stdout.lines)
    assert "ERROR Executor: Exception in task" in text
    assert "at org.apache.spark." in text
    if importlib.util.find_spec("pyspark.logger") is not None:  # PySpark 4.0+
        assert '"logger": "DataFrameQueryContextLogger"' in text


def test_a_failing_test_of_a_job_shows_its_timeline_and_refusals_read_well(pytester):
    pytester.makepyfile(test_job="""
    from pyspark.sql import functions as F

    def main(spark):
        (spark.readStream.format("kafka").option("subscribe", "clicks").load()
         .select(F.col("value").cast("string").alias("v"))
         .writeStream.format("memory").queryName("copy").start())

    def test_copy(topology_driver):
        driver = topology_driver.from_app(main)
        driver.create_input_topic("clicks", value_serializer="string").pipe_input("a")
        driver.process_all_available()
        assert driver.create_output_topic("copy").read_value() == {"v": "b"}

    def test_unsupported(topology_driver):
        topology_driver.from_app(lambda spark: spark.readStream.format("kinesis").load())
    """)
    result = pytester.runpytest_inprocess("-p", "no:randomly", "-p", "no:cacheprovider")
    result.assert_outcomes(failed=2)
    text = result.stdout.str()
    assert "- streamtest timeline -" in text and '-> {"v":"a"}' in text
    assert "UnsupportedAppCallError: streaming source 'kinesis' is not supported" in text
    assert "pyspark_streamtest/app" not in text and "pyspark_streamtest/driver" not in text


def _raising_processor_topology(t):
    import pandas as pd
    from pyspark.sql.streaming.stateful_processor import StatefulProcessor

    class RefusesNegatives(StatefulProcessor):
        def init(self, handle):
            pass

        def handleInputRows(self, key, rows, timerValues):  # noqa: N802, N803 (Spark API)
            for frame in rows:
                if (frame["reading"] < 0).any():
                    raise ValueError(f"negative reading for {key[0]}")
            yield pd.DataFrame({"device": [key[0]]})

        def close(self):
            pass

    readings = t.input("readings", schema="device STRING, reading INT")
    t.output("checked", readings.groupBy("device").transformWithStateInPandas(
        RefusesNegatives(), "device STRING", "Update", "None"), output_mode="update")


@pytest.mark.streamtest_requires(Feature.TRANSFORM_WITH_STATE_IN_PANDAS)
def test_a_processor_s_exception_shows_the_user_s_frame_without_pyspark_s(topology_driver):
    driver = topology_driver(_raising_processor_topology, sql_conf={
        "spark.sql.streaming.stateStore.providerClass":
            "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider"})
    driver.create_input_topic("readings").pipe_input({"device": "d1", "reading": -1})
    with pytest.raises(StreamingQueryFailedError) as failed:
        driver.process_all_available()
    cause = failed.value.cause
    assert "in handleInputRows" in cause and "test_failure_reports.py" in cause
    assert "ValueError: negative reading for d1" in cause
    assert "worker.py" not in cause and "serializers.py" not in cause


def test_the_timeline_shows_kafka_records_decoded_with_the_tests_deserializers(pytester):
    pytester.makepyfile(test_kafka_timeline="""
    from pyspark.sql import functions as F

    def alerts(t):
        readings = t.kafka_input("readings")
        t.kafka_output("alerts", readings.select(
            "key", F.to_json(F.struct(F.lit("offline").alias("alert"),
                                      F.col("value").cast("string").alias("device_id")))
            .alias("value")))

    def test_alert(topology_driver):
        driver = topology_driver(alerts)
        driver.create_input_topic("readings", key_serializer="string",
                                  value_serializer="string").pipe_input("d1", "d1")
        driver.process_all_available()
        out = driver.create_output_topic("alerts", key_deserializer="string",
                                         value_deserializer="json")
        assert out.read_value() == {"alert": "online"}
    """)
    result = pytester.runpytest_inprocess("-p", "no:randomly", "-p", "no:cacheprovider")
    result.assert_outcomes(failed=1)
    text = "\n".join(_failure_section(result))
    # the key and value as the test's handle reads them, not {"utf8": "..."} cut short
    assert '      -> "d1": {"alert":"offline","device_id":"d1"}' in text, text
    assert "utf8" not in text
