"""The pytest plugin: options, header, fixtures (in a child pytest, no Spark started)."""

from __future__ import annotations

pytest_plugins = ["pytester"]


def test_options_are_in_one_group(pytester):
    result = pytester.runpytest("--help")
    result.stdout.fnmatch_lines([
        "*pyspark-streamtest (Spark streaming tests)*",
        "*--spark-master=SPARK_MASTER*",
        "*--spark-conf=KEY=VALUE*",
    ])


def test_report_header_names_the_versions(pytester):
    pytester.makepyfile("def test_nothing():\n    pass\n")
    result = pytester.runpytest("--spark-master=local[1]")
    result.stdout.fnmatch_lines([
        "pyspark-streamtest *: PySpark *, Java *, Python *, spark master local?1?",
    ])
    result.assert_outcomes(passed=1)


def test_bad_spark_conf_is_a_usage_error(pytester):
    pytester.makepyfile("def test_uses_spark(spark):\n    pass\n")
    result = pytester.runpytest("--spark-conf", "no-equals-sign")
    result.stdout.fnmatch_lines(["*--spark-conf expects KEY=VALUE, got 'no-equals-sign'*"])
    assert result.ret != 0
