"""``--streamtest-durations``: each test's time split into Spark's work and the rest.

An inner pytest (in this process, on this Spark session) runs tests whose Spark work is
known by construction, and its summary section is read as a user would read it.
"""

from __future__ import annotations

import contextlib
import re

import pytest

with contextlib.suppress(ImportError):  # see test_failure_reports: numpy cannot load twice
    import numpy  # noqa: F401

pytest_plugins = ["pytester"]

_TESTS = """
    from datetime import datetime, timezone

    from pyspark.sql import functions as F
    from pyspark_streamtest import TopologyTestDriver

    T0 = datetime(2024, 1, 1, tzinfo=timezone.utc)

    def windowed(t):
        events = t.input("events", schema="k STRING, ts TIMESTAMP", timestamp_column="ts")
        t.output("counts", events.where(F.col("k") != "x").withWatermark("ts", "5 seconds")
                 .groupBy(F.window("ts", "10 seconds"), "k").count())

    def test_windows_and_state(spark):
        with TopologyTestDriver(windowed, spark=spark) as driver:
            events = driver.create_input_topic("events")
            events.pipe_input(("a", T0))
            driver.process_all_available()  # a data batch, then the no-data batch
            events.pipe_input(("a", T0))
            driver.process_all_available()  # a data batch only: the watermark stays
            assert len(driver.batches) == 3
            # The filter before the aggregation makes this a replay of the plan: a state
            # read that every PySpark line can do.
            assert driver.late_records("counts") == []

    def test_without_spark():
        assert sum(range(10)) == 45
"""

_LINE = re.compile(
    r"^\s*(?P<total>[\d.]+)s\s+(?P<batches>[\d.]+)s\s+(?P<queries>[\d.]+)s\s+"
    r"(?P<reads>[\d.]+)s\s+(?P<rest>[\d.]+)s\s+(?P<count>\d+)\s+(?P<label>.+)$"
)


def _section(result: pytest.RunResult) -> dict[str, dict[str, str]]:
    lines = result.stdout.lines
    start = next(i for i, line in enumerate(lines) if "streamtest durations (all)" in line)
    rows = {}
    for line in lines[start + 2:]:
        match = _LINE.match(line)
        if match is None:
            break
        rows[match["label"].split("::")[-1]] = match.groupdict()
    return rows


def test_each_test_s_spark_work_is_counted_apart_from_the_rest(pytester, spark):
    pytester.makepyfile(test_inner=_TESTS)
    result = pytester.runpytest_inprocess(
        "-p", "no:randomly", "-p", "no:cacheprovider", "--streamtest-durations=0")
    result.assert_outcomes(passed=2)
    rows = _section(result)
    assert set(rows) == {"test_windows_and_state", "test_without_spark", "all 2 tests"}
    stateful, plain = rows["test_windows_and_state"], rows["test_without_spark"]
    assert stateful["count"] == "3"  # the three micro-batches the driver recorded
    assert float(stateful["batches"]) > 0 and float(stateful["queries"]) > 0
    assert float(stateful["reads"]) > 0  # the late records' evaluation
    parts = sum(float(stateful[key]) for key in ("batches", "queries", "reads", "rest"))
    assert abs(parts - float(stateful["total"])) <= 0.03  # 5 figures rounded to 0.01
    assert plain["count"] == "0"
    assert plain["batches"] == plain["queries"] == plain["reads"] == "0.00"
    assert rows["all 2 tests"]["count"] == "3"
    assert "share of all tests' time: batches" in result.stdout.str()


def test_the_slowest_n_are_listed_first(pytester, spark):
    pytester.makepyfile(test_inner=_TESTS)
    result = pytester.runpytest_inprocess(
        "-p", "no:randomly", "-p", "no:cacheprovider", "--streamtest-durations=1")
    result.assert_outcomes(passed=2)
    text = result.stdout.str()
    assert "streamtest durations (slowest 1)" in text
    section = text[text.index("streamtest durations"):]
    assert "test_windows_and_state" in section and "::test_without_spark" not in section
    assert "all 2 tests" in section


def test_without_the_option_there_is_no_section(pytester, spark):
    pytester.makepyfile(test_inner="def test_nothing():\n    pass\n")
    result = pytester.runpytest_inprocess("-p", "no:randomly", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=1)
    assert "streamtest durations" not in result.stdout.str()
