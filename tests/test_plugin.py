"""The pytest plugin: options, header, fixtures (in a child pytest, no Spark started)."""

from __future__ import annotations

import pytest

pytest_plugins = ["pytester"]


def test_options_are_in_one_group(pytester):
    result = pytester.runpytest("--help")
    result.stdout.fnmatch_lines([
        "*pyspark-streamtest (Spark streaming tests)*",
        "*--streamtest-master=URL*",
        "*--streamtest-conf=KEY=VALUE*",
    ])


def test_report_header_names_the_versions(pytester):
    from pyspark_streamtest.plugin._session import _java_version

    pytester.makepyfile("def test_nothing():\n    pass\n")
    result = pytester.runpytest("--streamtest-master=local[1]")
    result.stdout.fnmatch_lines([
        f"pyspark-streamtest *: PySpark *, Java {_java_version()}, Python *, "
        "spark master local?1?*",
    ])
    result.assert_outcomes(passed=1)


def test_the_header_s_java_is_java_home_s_read_from_its_release_file(tmp_path, monkeypatch):
    from pyspark_streamtest.plugin._session import _java_version

    (tmp_path / "release").write_text('IMPLEMENTOR="Test"\nJAVA_VERSION="21.0.4"\n')
    monkeypatch.setenv("JAVA_HOME", str(tmp_path))
    assert _java_version() == "21.0.4"
    (tmp_path / "release").unlink()
    assert _java_version() == "unknown"  # not a guess, and no java -version run


def test_the_header_s_java_is_found_through_the_path_s_java_link(tmp_path, monkeypatch):
    """Without JAVA_HOME, the ``java`` on the PATH, followed to its installation (Debian
    links /usr/bin/java through /etc/alternatives), as Spark's launcher runs it."""
    from pyspark_streamtest.plugin._session import _java_version

    home = tmp_path / "jdk"
    (home / "bin").mkdir(parents=True)
    (home / "bin" / "java").write_text("#!/bin/sh\nexit 1\n")  # never run
    (home / "bin" / "java").chmod(0o755)
    (home / "release").write_text('JAVA_VERSION="17.0.99"\n')
    (tmp_path / "links").mkdir()
    (tmp_path / "links" / "java").symlink_to(home / "bin" / "java")
    monkeypatch.delenv("JAVA_HOME", raising=False)
    monkeypatch.setenv("PATH", str(tmp_path / "links"))
    assert _java_version() == "17.0.99"
    monkeypatch.setenv("PATH", str(tmp_path / "nowhere"))
    assert _java_version() == "not found"


def test_bad_spark_conf_is_a_usage_error_before_spark_starts(pytester):
    pytester.makepyfile("def test_uses_spark(spark):\n    pass\n")
    result = pytester.runpytest("--streamtest-conf", "no-equals-sign")
    result.stderr.fnmatch_lines(["*--streamtest-conf* expects KEY=VALUE, got "
                                 "'no-equals-sign'*"])
    assert result.ret == pytest.ExitCode.USAGE_ERROR  # at start: no test ran, no Spark


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
        "-XX:+UseSerialGC*"
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
    from pyspark_streamtest.plugin._session import _spark_master, _xdist_workers

    config = pytester.parseconfig()
    assert _xdist_workers(config) == 1
    assert _spark_master(config, 1) == f"local[{min(2, _cores())}]"
    worker = pytester.parseconfig()
    worker.workerinput = {"workerid": "gw0", "workercount": 2 * _cores()}  # as xdist sets it
    assert _xdist_workers(worker) == 2 * _cores()
    assert _spark_master(config, 2 * _cores()) == "local[1]"
    assert _spark_master(pytester.parseconfig("--streamtest-master=local[3]"), 4) == "local[3]"


def test_a_cluster_master_comes_from_the_option_or_the_environment(pytester, monkeypatch):
    from pyspark_streamtest.plugin._session import _spark_master

    monkeypatch.setenv("STREAMTEST_MASTER", "spark://127.0.0.1:7000")
    assert _spark_master(pytester.parseconfig(), 2) == "spark://127.0.0.1:7000"
    option = pytester.parseconfig("--streamtest-master", "local-cluster[2,1,1024]")
    assert _spark_master(option, 2) == "local-cluster[2,1,1024]"


def test_shared_cores_jvm_options_only_under_xdist_and_an_explicit_setting_wins(pytester):
    from pyspark_streamtest.core.session import SHARED_CORES_JVM_OPTIONS
    from pyspark_streamtest.plugin._session import _jvm_options

    assert _jvm_options(pytester.parseconfig(), 1) == ""
    assert _jvm_options(pytester.parseconfig(), 2) == SHARED_CORES_JVM_OPTIONS
    own = pytester.parseconfig("--streamtest-conf", "spark.driver.extraJavaOptions=-Xss4m")
    assert _jvm_options(own, 2) == ""


def test_a_crashed_xdist_worker_stops_the_mutation_run_at_once_not_at_its_bound(pytester):
    """Under ``--streamtest-mutate`` each worker waits for every worker's part of the
    agreement on the sample; the controller writes a crashed worker's (its tests did not
    pass), so the other ends now and says so, instead of waiting out its hour."""
    pytester.makepyfile(
        "import os\nimport pytest\n\n"
        "@pytest.mark.parametrize('n', range(8))\n"
        "def test_dies_on_one_worker(n):\n"
        "    if os.environ['PYTEST_XDIST_WORKER'] == 'gw1':\n"
        "        os._exit(3)\n")
    result = pytester.runpytest_subprocess(
        "-p", "xdist", "-n", "2", "--max-worker-restart=0", "--streamtest-mutate",
        timeout=240)
    result.stdout.fnmatch_lines([
        "*streamtest mutation*",
        "no mutant was run: the tests must pass first; failed: *xdist worker gw1 crashed*",
    ])
    assert result.ret != 0


def test_the_mutation_run_works_without_xdist(pytester):
    """``pytest-xdist`` is optional: ``--streamtest-mutate`` under ``-p no:xdist`` runs
    the tests and says what it found (here nothing: no topology was built)."""
    pytester.makepyfile("def test_nothing():\n    pass\n")
    result = pytester.runpytest_subprocess("-p", "no:xdist", "--streamtest-mutate",
                                           timeout=120)
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["*streamtest mutation*", "overall: 0 mutants*"])
    assert "INTERNALERROR" not in result.stdout.str() + result.stderr.str()
