"""The Spark Connect switch (``--streamtest-connect``), without starting Spark: the
header, the usage errors, the process's Connect mode from configure time on (so a test
module's top-level ``F.udf`` is a Connect one) and its undoing when the run ends. The
runs over Connect are the Connect suite's (tox.ini's ``[connect]`` section)."""

from __future__ import annotations

import os

import pytest

from pyspark_streamtest._spark.connect.session import server_settings

pytest_plugins = ["pytester"]

SEES_THE_MODE = """
import os
MODE_AT_IMPORT = os.environ.get("SPARK_CONNECT_MODE_ENABLED")

def test_mode():
    assert MODE_AT_IMPORT == "1"
    assert os.environ.get("SPARK_LOCAL_REMOTE") == "1"
"""


@pytest.fixture
def classic_process(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("SPARK_CONNECT_MODE_ENABLED", "SPARK_LOCAL_REMOTE", "STREAMTEST_CONNECT"):
        monkeypatch.delenv(name, raising=False)


def test_the_header_says_when_a_run_is_over_spark_connect(pytester, classic_process,
                                                          monkeypatch):
    pytester.makepyfile("def test_nothing():\n    pass\n")
    on = pytester.runpytest_inprocess("-p", "no:cacheprovider", "--streamtest-connect")
    on.stdout.fnmatch_lines(["pyspark-streamtest *, spark master local?2?, Spark Connect"])
    assert "warm JVM" not in on.stdout.str()  # a Connect run starts its own JVM
    off = pytester.runpytest_inprocess("-p", "no:cacheprovider")
    assert "Spark Connect" not in off.stdout.str()
    monkeypatch.setenv("STREAMTEST_CONNECT", "1")
    by_env = pytester.runpytest_inprocess("-p", "no:cacheprovider")
    by_env.stdout.fnmatch_lines(["*, Spark Connect"])


def test_a_bad_switch_value_is_a_usage_error(pytester, classic_process, monkeypatch):
    pytester.makepyfile("def test_nothing():\n    pass\n")
    monkeypatch.setenv("STREAMTEST_CONNECT", "maybe")
    result = pytester.runpytest_inprocess("-p", "no:cacheprovider")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*STREAMTEST_CONNECT expects 1 or 0*'maybe'*"])


def test_the_process_is_in_connect_mode_before_test_modules_import_and_after_not(
        pytester, classic_process):
    pytester.makepyfile(test_mode=SEES_THE_MODE)
    result = pytester.runpytest_inprocess("-p", "no:cacheprovider", "--streamtest-connect")
    result.assert_outcomes(passed=1)
    assert "SPARK_CONNECT_MODE_ENABLED" not in os.environ  # undone when the run ended
    assert "SPARK_LOCAL_REMOTE" not in os.environ


def test_the_server_s_plugin_joins_the_user_s_plugins():
    settings = server_settings("t", {"spark.plugins": "com.example.Mine",
                                     "spark.sql.shuffle.partitions": "3"})
    assert settings["spark.plugins"] == (
        "com.example.Mine,org.apache.spark.sql.connect.SparkConnectPlugin")
    assert settings["spark.sql.shuffle.partitions"] == "3"
    assert settings["spark.connect.grpc.binding.port"] == "0"  # never 15002: xdist
    assert settings["spark.connect.authenticate.token"] == "t"
    again = server_settings("t", settings)
    assert again["spark.plugins"] == settings["spark.plugins"]
