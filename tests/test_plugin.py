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


def _cores() -> int:
    import os

    return len(os.sched_getaffinity(0))


def test_under_xdist_each_worker_gets_a_task_thread_per_core_it_has(pytester):
    """Two workers on two cores: ``local[1]`` each, not four task threads on two cores."""
    pytester.makepyfile("def test_nothing():\n    pass\n")
    result = pytester.runpytest("-p", "xdist", "-n", "2")
    per_worker = min(2, max(1, _cores() // 2))
    result.stdout.fnmatch_lines([
        f"*spark master local?{per_worker}? per xdist worker, JVM -XX:TieredStopAtLevel=1 "
        "-XX:+UseSerialGC"
    ])
    result.assert_outcomes(passed=1)


def test_durations_cross_from_xdist_workers_to_the_controller(pytester):
    """Each worker measures its tests; the controller prints them, once each."""
    pytester.makepyfile("def test_one():\n    pass\n\ndef test_two():\n    pass\n")
    result = pytester.runpytest("-p", "xdist", "-n", "2", "--streamtest-durations=0")
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines(["*streamtest durations (all)*", "*total*batches*test"])
    text = result.stdout.str()
    assert text.count("::test_one") == 1 and text.count("::test_two") == 1
    assert "all 2 tests" in text


def test_the_master_follows_the_worker_count_and_an_explicit_option_wins(pytester):
    from pyspark_streamtest._plugin_session import _spark_master, _xdist_workers

    config = pytester.parseconfig()
    assert _xdist_workers(config) == 1
    assert _spark_master(config, 1) == f"local[{min(2, _cores())}]"
    worker = pytester.parseconfig()
    worker.workerinput = {"workerid": "gw0", "workercount": 2 * _cores()}  # as xdist sets it
    assert _xdist_workers(worker) == 2 * _cores()
    assert _spark_master(config, 2 * _cores()) == "local[1]"
    assert _spark_master(pytester.parseconfig("--spark-master=local[3]"), 4) == "local[3]"


def test_a_cluster_master_comes_from_the_option_or_the_environment(pytester, monkeypatch):
    from pyspark_streamtest._plugin_session import _spark_master

    monkeypatch.setenv("STREAMTEST_MASTER", "spark://127.0.0.1:7000")
    assert _spark_master(pytester.parseconfig(), 2) == "spark://127.0.0.1:7000"
    option = pytester.parseconfig("--streamtest-master", "local-cluster[2,1,1024]")
    assert _spark_master(option, 2) == "local-cluster[2,1,1024]"


def test_shared_cores_jvm_options_only_under_xdist_and_an_explicit_setting_wins(pytester):
    from pyspark_streamtest._plugin_session import _jvm_options
    from pyspark_streamtest.core.session import SHARED_CORES_JVM_OPTIONS

    assert _jvm_options(pytester.parseconfig(), 1) == ""
    assert _jvm_options(pytester.parseconfig(), 2) == SHARED_CORES_JVM_OPTIONS
    own = pytester.parseconfig("--spark-conf", "spark.driver.extraJavaOptions=-Xss4m")
    assert _jvm_options(own, 2) == ""
