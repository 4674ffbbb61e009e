"""The run's master (``--streamtest-master``) is the master of every session the
library creates in a pytest run, not only of the ``spark`` fixture's (in a child pytest
with a Spark of its own: this run's session exists already)."""

from __future__ import annotations

pytest_plugins = ["pytester"]


def test_a_driver_made_without_spark_runs_on_the_run_s_master(pytester):
    pytester.makepyfile(test_master="""
from pyspark.sql import SparkSession

from pyspark_streamtest import TopologyTestDriver, test_spark_session


def counts(t):
    clicks = t.input("clicks", schema="user STRING")
    t.output("counts", clicks.groupBy("user").count(), output_mode="update")


def test_driver_first():
    with TopologyTestDriver(counts) as driver:  # no spark=, no session yet
        session = SparkSession.getActiveSession()
        assert session.sparkContext.master == "local[1]"
        clicks = driver.create_input_topic("clicks")
        clicks.pipe_input(("a",))
        driver.process_all_available()
        assert driver.create_output_topic("counts").read_value() == {"user": "a", "count": 1}
    assert test_spark_session() is session


def test_the_fixture_is_that_session(spark):
    assert spark.sparkContext.master == "local[1]"
    assert spark is SparkSession.getActiveSession()
""")
    result = pytester.runpytest_subprocess(
        "--streamtest-master", "local[1]", "-p", "no:randomly", "-p", "no:cacheprovider",
        timeout=300,
    )
    result.stdout.fnmatch_lines(["*spark master local?1?*"])
    result.assert_outcomes(passed=2)
