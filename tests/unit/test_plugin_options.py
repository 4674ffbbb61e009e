"""The plugin's options: every one spelt ``--streamtest-...`` (the 0.1 spellings kept as
aliases), every one an ini option too; the command line wins over the environment,
which wins over the ini file (in a child pytest, no Spark started)."""

from __future__ import annotations

import json
import textwrap

import pytest

from pyspark_streamtest.plugin._options import OPTIONS

pytest_plugins = ["pytester"]

NAMES = [option.name for option in OPTIONS]

# A test that writes down what the run resolved, as pytestconfig.getoption gives it.
SHOW = textwrap.dedent(f"""
    import json

    def test_show(pytestconfig):
        values = {{name: pytestconfig.getoption(name) for name in {NAMES!r}}}
        (pytestconfig.rootpath / "resolved.json").write_text(json.dumps(values))
""")

PYTEST_INI = """
[pytest]
streamtest_master = spark://ini-host:7077
streamtest_conf =
    spark.a=from ini
    spark.b=from ini
streamtest_jvm_logs = true
streamtest_cpu_load = 2
streamtest_timeline_dir = pictures
streamtest_durations = 5
streamtest_update_golden = true
streamtest_oracle = true
streamtest_oracle_min_tests = 0
streamtest_warm_jvm = off
streamtest_connect = true
streamtest_mutate = false
streamtest_mutate_min_score = 80
streamtest_mutate_max = 5
streamtest_mutate_seed = 7
streamtest_mutate_json = mutants.json
streamtest_mutate_junit = mutants.xml
"""

PYPROJECT = """
[tool.pytest.ini_options]
streamtest_master = "spark://toml-host:7077"
streamtest_conf = ["spark.a=from toml"]
streamtest_jvm_logs = true
streamtest_cpu_load = 3
streamtest_timeline_dir = "svg"
streamtest_durations = 0
streamtest_update_golden = true
streamtest_oracle = true
streamtest_oracle_min_tests = 0
streamtest_warm_jvm = "on"
streamtest_connect = true
streamtest_mutate = false
streamtest_mutate_min_score = "90"
streamtest_mutate_max = 6
streamtest_mutate_seed = 8
streamtest_mutate_json = "m.json"
streamtest_mutate_junit = "m.xml"
"""

DEFAULTS = {
    "streamtest_master": None,
    "streamtest_conf": [],
    "streamtest_ignore_option": [],
    "streamtest_jvm_logs": False,
    "streamtest_cpu_load": 0,
    "streamtest_timeline_dir": None,
    "streamtest_durations": None,
    "streamtest_update_golden": False,
    "streamtest_oracle": False,
    "streamtest_oracle_min_tests": 0,
    "streamtest_warm_jvm": "auto",
    "streamtest_connect": False,
    "streamtest_mutate": False,
    "streamtest_mutate_min_score": None,
    "streamtest_mutate_max": None,
    "streamtest_mutate_seed": 0,
    "streamtest_mutate_json": None,
    "streamtest_mutate_junit": None,
}


@pytest.fixture(autouse=True)
def _clean_environment(monkeypatch):
    """No master from the environment; the oracle option sets STREAMTEST_ORACLE for
    its run, in this process: monkeypatch puts back what was there."""
    monkeypatch.delenv("STREAMTEST_MASTER", raising=False)
    monkeypatch.delenv("STREAMTEST_WARM_JVM", raising=False)
    monkeypatch.delenv("STREAMTEST_CONNECT", raising=False)
    monkeypatch.setenv("STREAMTEST_ORACLE", "0")


def resolved(pytester, *args) -> dict:
    pytester.makepyfile(test_show=SHOW)
    result = pytester.runpytest_inprocess("-p", "no:cacheprovider", *args)
    result.assert_outcomes(passed=1)
    return json.loads((pytester.path / "resolved.json").read_text())


def test_every_option_has_the_prefix_and_an_ini_option():
    assert {option.flag for option in OPTIONS} == {
        "--streamtest-master", "--streamtest-conf", "--streamtest-jvm-logs",
        "--streamtest-ignore-option",
        "--streamtest-cpu-load", "--streamtest-timeline-dir", "--streamtest-durations",
        "--streamtest-update-golden", "--streamtest-oracle", "--streamtest-oracle-min-tests",
        "--streamtest-warm-jvm", "--streamtest-connect", "--streamtest-mutate",
        "--streamtest-mutate-min-score", "--streamtest-mutate-max", "--streamtest-mutate-seed",
        "--streamtest-mutate-json", "--streamtest-mutate-junit",
    }
    assert set(NAMES) == set(DEFAULTS)


def test_help_lists_each_option_with_its_ini_name_and_no_other_spelling(pytester):
    result = pytester.runpytest_inprocess("--help")
    text = result.stdout.str()
    result.stdout.fnmatch_lines([
        "*pyspark-streamtest (Spark streaming tests)*",
        "*--streamtest-master=URL*",
        "*--streamtest-conf=KEY=VALUE*",
    ])
    assert "--spark-master" not in text and "--spark-conf" not in text
    for option in OPTIONS:
        assert f"  {option.flag}" in text, option.flag
        assert f"  {option.name} (" in text, option.name  # the ini section: name (type)


def test_without_any_setting_the_defaults_hold(pytester):
    assert resolved(pytester) == DEFAULTS


def test_every_option_is_read_from_pytest_ini(pytester):
    pytester.makefile(".ini", pytest=PYTEST_INI)
    values = resolved(pytester)
    assert values == {
        "streamtest_master": "spark://ini-host:7077",
        "streamtest_conf": ["spark.a=from ini", "spark.b=from ini"],
        "streamtest_ignore_option": [],
        "streamtest_jvm_logs": True,
        "streamtest_cpu_load": 2,
        "streamtest_timeline_dir": str(pytester.path / "pictures"),
        "streamtest_durations": 5,
        "streamtest_update_golden": True,
        "streamtest_oracle": True,
        "streamtest_oracle_min_tests": 0,
        "streamtest_warm_jvm": "off",
        "streamtest_connect": True,
        "streamtest_mutate": False,
        "streamtest_mutate_min_score": "80",
        "streamtest_mutate_max": 5,
        "streamtest_mutate_seed": 7,
        "streamtest_mutate_json": "mutants.json",
        "streamtest_mutate_junit": "mutants.xml",
    }


def test_every_option_is_read_from_pyproject_toml(pytester):
    pytester.makepyprojecttoml(PYPROJECT)
    assert resolved(pytester) == {
        "streamtest_master": "spark://toml-host:7077",
        "streamtest_conf": ["spark.a=from toml"],
        "streamtest_ignore_option": [],
        "streamtest_jvm_logs": True,
        "streamtest_cpu_load": 3,
        "streamtest_timeline_dir": str(pytester.path / "svg"),
        "streamtest_durations": 0,
        "streamtest_update_golden": True,
        "streamtest_oracle": True,
        "streamtest_oracle_min_tests": 0,
        "streamtest_warm_jvm": "on",
        "streamtest_connect": True,
        "streamtest_mutate": False,
        "streamtest_mutate_min_score": "90",
        "streamtest_mutate_max": 6,
        "streamtest_mutate_seed": 8,
        "streamtest_mutate_json": "m.json",
        "streamtest_mutate_junit": "m.xml",
    }


def test_the_command_line_wins_over_the_ini_file(pytester):
    pytester.makefile(".ini", pytest=PYTEST_INI.replace("= true", "= false"))
    values = resolved(
        pytester, "--streamtest-master=local[3]", "--streamtest-conf", "spark.b=from cli",
        "--streamtest-jvm-logs", "--streamtest-cpu-load=4", "--streamtest-timeline-dir=out",
        "--streamtest-durations=1", "--streamtest-update-golden", "--streamtest-oracle",
        "--streamtest-oracle-min-tests=0", "--streamtest-warm-jvm=on", "--streamtest-connect",
        "--streamtest-mutate-min-score=70", "--streamtest-mutate-max=3",
        "--streamtest-mutate-seed=1", "--streamtest-mutate-json=a.json",
        "--streamtest-mutate-junit=a.xml",
    )
    assert values == {
        "streamtest_master": "local[3]",
        # settings add up, the command line's last: it wins for spark.b
        "streamtest_conf": ["spark.a=from ini", "spark.b=from ini", "spark.b=from cli"],
        "streamtest_ignore_option": [],
        "streamtest_jvm_logs": True,
        "streamtest_cpu_load": 4,
        "streamtest_timeline_dir": "out",
        "streamtest_durations": 1,
        "streamtest_update_golden": True,
        "streamtest_oracle": True,
        "streamtest_oracle_min_tests": 0,
        "streamtest_warm_jvm": "on",
        "streamtest_connect": True,
        "streamtest_mutate": False,
        "streamtest_mutate_min_score": "70",
        "streamtest_mutate_max": 3,
        "streamtest_mutate_seed": 1,
        "streamtest_mutate_json": "a.json",
        "streamtest_mutate_junit": "a.xml",
    }


def test_the_environment_s_warm_jvm_sits_between_the_command_line_and_the_ini(
        pytester, monkeypatch):
    pytester.makefile(".ini", pytest="[pytest]\nstreamtest_warm_jvm = on\n")
    monkeypatch.setenv("STREAMTEST_WARM_JVM", "off")
    assert resolved(pytester)["streamtest_warm_jvm"] == "off"
    assert resolved(pytester, "--streamtest-warm-jvm=auto")["streamtest_warm_jvm"] == "auto"


def test_pytest_s_override_turns_off_a_flag_the_ini_file_turns_on(pytester):
    pytester.makefile(".ini", pytest=PYTEST_INI)
    values = resolved(pytester, "-o", "streamtest_update_golden=false")
    assert values["streamtest_update_golden"] is False
    assert values["streamtest_jvm_logs"] is True  # the others as the file says


def test_the_conf_option_repeats(pytester):
    values = resolved(pytester, "--streamtest-master=local[1]", "--streamtest-conf",
                      "spark.x=1", "--streamtest-conf", "spark.y=2")
    assert values["streamtest_master"] == "local[1]"
    assert values["streamtest_conf"] == ["spark.x=1", "spark.y=2"]


def test_ignored_source_options_add_up_from_the_ini_file_and_the_command_line(pytester):
    pytester.makefile(".ini", pytest="[pytest]\nstreamtest_ignore_option =\n"
                                     "    maxOffsetsPerTrigger\n    maxFilesPerTrigger\n")
    values = resolved(pytester, "--streamtest-ignore-option", "maxTriggerDelay")
    assert values["streamtest_ignore_option"] == [
        "maxOffsetsPerTrigger", "maxFilesPerTrigger", "maxTriggerDelay"]


def test_a_pre_release_spelling_is_an_unknown_option(pytester):
    result = pytester.runpytest_inprocess("--spark-master=local[1]")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*unrecognized arguments: --spark-master=local?1?*"])


def test_getoption_gives_the_value_in_force_by_either_name(pytester):
    pytester.makefile(".ini", pytest="[pytest]\nstreamtest_master = spark://ini-host:3\n")
    pytester.makepyfile(test_spellings="""
        def test_spellings(pytestconfig):
            for spelling in ("streamtest_master", "--streamtest-master"):
                assert pytestconfig.getoption(spelling) == "spark://ini-host:3", spelling
    """)
    pytester.runpytest_inprocess("-p", "no:cacheprovider").assert_outcomes(passed=1)


def test_the_master_from_the_environment_sits_between_the_command_line_and_the_ini(
        pytester, monkeypatch):
    pytester.makefile(".ini", pytest="[pytest]\nstreamtest_master = spark://ini-host:1\n")
    monkeypatch.setenv("STREAMTEST_MASTER", "spark://env-host:2")
    assert resolved(pytester)["streamtest_master"] == "spark://env-host:2"
    assert resolved(pytester, "--streamtest-master=local[1]")["streamtest_master"] == (
        "local[1]")


def test_the_report_header_names_the_ini_file_s_master(pytester):
    pytester.makefile(".ini", pytest="[pytest]\nstreamtest_master = spark://ini-host:9\n")
    pytester.makepyfile("def test_nothing():\n    pass\n")
    result = pytester.runpytest_inprocess("-p", "no:cacheprovider")
    result.stdout.fnmatch_lines(["pyspark-streamtest *, spark master spark://ini-host:9"])


def test_the_ini_file_s_oracle_settings_take_effect(pytester):
    """On, with a minimum no test can meet here: the run fails saying so (no Spark)."""
    pytester.makefile(".ini", pytest="[pytest]\nstreamtest_oracle = true\n"
                                     "streamtest_oracle_min_tests = 1\n")
    pytester.makepyfile("def test_nothing():\n    pass\n")
    result = pytester.runpytest_inprocess("-p", "no:cacheprovider")
    result.stdout.fnmatch_lines([
        "*streamtest oracle: the driver against Spark alone*",
        "*FAILED: the oracle compared batches in 0 tests, fewer than "
        "--streamtest-oracle-min-tests=1*",
    ])
    assert result.ret == pytest.ExitCode.TESTS_FAILED


def test_the_ini_file_s_durations_take_effect(pytester):
    pytester.makefile(".ini", pytest="[pytest]\nstreamtest_durations = 0\n")
    pytester.makepyfile("def test_one():\n    pass\n")
    result = pytester.runpytest_inprocess("-p", "no:cacheprovider")
    result.stdout.fnmatch_lines(["*streamtest durations (all)*", "*all 1 tests"])


@pytest.mark.parametrize(("ini", "message"), [
    ("streamtest_conf = no-equals-sign",
     "*streamtest_conf* expects KEY=VALUE, got 'no-equals-sign'*"),
    ("streamtest_cpu_load = many", "*streamtest_cpu_load*"),
])
def test_a_malformed_ini_value_is_a_usage_error_before_any_test(pytester, ini, message):
    pytester.makefile(".ini", pytest=f"[pytest]\n{ini}\n")
    pytester.makepyfile("def test_nothing():\n    pass\n")
    result = pytester.runpytest_inprocess("-p", "no:cacheprovider")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([message])
