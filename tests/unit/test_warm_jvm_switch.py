"""The warm JVM's switch, fingerprint and folder, without starting one (the runs that
start and attach to warm JVMs are in tests/spark/test_warm_jvm.py)."""

from __future__ import annotations

import os

import pytest

from pyspark_streamtest import InvalidArgumentError, WarmJvmError
from pyspark_streamtest._spark.runtime import warm_jvm

pytest_plugins = ["pytester"]


@pytest.mark.parametrize(("given", "ci", "expected"), [
    (None, None, True),
    (None, "true", False),
    (None, "1", False),
    (None, "false", True),
    ("auto", "true", False),
    ("on", "true", True),
    ("off", None, False),
    ("OFF", None, False),
    ("1", None, True),
])
def test_auto_is_on_except_in_ci(monkeypatch, given, ci, expected):
    monkeypatch.delenv(warm_jvm.ENV_SWITCH, raising=False)
    if ci is None:
        monkeypatch.delenv("CI", raising=False)
    else:
        monkeypatch.setenv("CI", ci)
    assert warm_jvm.wanted(given) is expected


def test_the_environment_variable_is_read_when_no_option_is_given(monkeypatch):
    monkeypatch.delenv("CI", raising=False)
    monkeypatch.setenv(warm_jvm.ENV_SWITCH, "off")
    assert warm_jvm.wanted(None) is False


def test_a_bad_value_names_the_ones_that_work(monkeypatch):
    monkeypatch.delenv(warm_jvm.ENV_SWITCH, raising=False)
    with pytest.raises(InvalidArgumentError, match="'maybe' is not one of auto, on, off"):
        warm_jvm.wanted("maybe")


def test_a_bad_value_stops_the_run_as_a_usage_error(pytester):
    pytester.makepyfile("def test_nothing():\n    pass\n")
    result = pytester.runpytest_inprocess("-p", "no:cacheprovider",
                                          "--streamtest-warm-jvm=maybe")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*'maybe' is not one of auto, on, off*"])


def test_the_report_header_says_when_runs_use_a_warm_jvm(pytester, monkeypatch):
    pytester.makepyfile("def test_nothing():\n    pass\n")
    monkeypatch.delenv("CI", raising=False)
    on = pytester.runpytest_inprocess("-p", "no:cacheprovider", "--streamtest-warm-jvm=on")
    on.stdout.fnmatch_lines(["pyspark-streamtest *, spark master local?2?, warm JVM"])
    off = pytester.runpytest_inprocess("-p", "no:cacheprovider", "--streamtest-warm-jvm=off")
    assert "warm JVM" not in off.stdout.str()
    cluster = pytester.runpytest_inprocess("-p", "no:cacheprovider", "--streamtest-warm-jvm=on",
                                           "--streamtest-master=spark://host:7077")
    assert "warm JVM" not in cluster.stdout.str()  # warm JVMs are for local sessions


def test_the_fingerprint_follows_what_the_jvm_sees():
    env = {"PATH": os.environ.get("PATH", ""), "HOME": "/home/a"}
    settings = {"spark.master": "local[2]", "spark.driver.extraJavaOptions": "-Dx=1"}
    same = warm_jvm.fingerprint(settings, env)
    assert warm_jvm.fingerprint(dict(settings), dict(env)) == same
    # where a shell or a pytest run is: not the JVM's business
    assert warm_jvm.fingerprint(settings, {**env, "PWD": "/x", "PYTEST_XDIST_WORKER": "gw1",
                                           "PYTEST_CURRENT_TEST": "t"}) == same
    # what the JVM and its Python workers see
    assert warm_jvm.fingerprint(settings, {**env, "TZ": "Asia/Tokyo"}) != same
    assert warm_jvm.fingerprint({**settings, "spark.driver.memory": "2g"}, env) != same
    assert warm_jvm.fingerprint({**settings, "spark.master": "local[1]"}, env) != same


def test_the_run_s_own_folders_are_no_part_of_the_jvm():
    assert {"spark.sql.warehouse.dir", "spark.pyspark.python",
            "spark.executorEnv.PYTHONPATH"} <= warm_jvm.PER_RUN_SETTINGS


@pytest.mark.skipif(os.getuid() != 0, reason="giving a folder to another user needs root")
def test_a_folder_of_another_user_is_refused(tmp_path, monkeypatch):
    folder = tmp_path / "theirs"
    folder.mkdir(mode=0o700)
    os.chown(folder, 65534, -1)
    monkeypatch.setenv(warm_jvm.ENV_DIR, str(folder))
    with pytest.raises(WarmJvmError, match="belongs to another user; set \\$STREAMTEST_WARM_JVM_DIR"):
        warm_jvm._root()


def test_an_own_folder_others_may_read_is_made_private(tmp_path, monkeypatch):
    folder = tmp_path / "mine"
    folder.mkdir()
    folder.chmod(0o755)
    monkeypatch.setenv(warm_jvm.ENV_DIR, str(folder))
    assert warm_jvm._root() == str(folder)
    assert folder.stat().st_mode & 0o777 == 0o700


def test_a_bad_idle_time_is_refused_naming_the_variable(tmp_path, monkeypatch):
    monkeypatch.setenv(warm_jvm.ENV_DIR, str(tmp_path / "jvms"))
    monkeypatch.setenv(warm_jvm.ENV_IDLE, "soon")
    with pytest.raises(InvalidArgumentError, match="STREAMTEST_WARM_JVM_IDLE='soon'"):
        warm_jvm._start(warm_jvm._root(), "key", {}, dict(os.environ))
    assert list((tmp_path / "jvms").iterdir()) == []  # nothing left of the attempt


@pytest.mark.parametrize("given", ["0", "many"])
def test_a_bad_cap_is_refused_naming_the_variable(tmp_path, monkeypatch, given):
    monkeypatch.setenv(warm_jvm.ENV_DIR, str(tmp_path / "jvms"))
    monkeypatch.setenv(warm_jvm.ENV_MAX, given)
    with pytest.raises(InvalidArgumentError, match=f"STREAMTEST_WARM_JVM_MAX='{given}'"):
        warm_jvm._start(warm_jvm._root(), "key", {}, dict(os.environ))
    assert list((tmp_path / "jvms").iterdir()) == []  # refused before anything started


def test_a_project_is_the_nearest_folder_with_a_project_file(tmp_path, monkeypatch):
    """Warm JVMs belong to the project a run was in: the nearest folder at or above the
    working folder holding pyproject.toml, .git, ... (else the folder itself), unless
    $STREAMTEST_WARM_JVM_PROJECT names it (the plugin sets it for a run's own children)."""
    inner = tmp_path / "repo" / "src" / "pkg"
    inner.mkdir(parents=True)
    (tmp_path / "repo" / ".git").mkdir()
    assert warm_jvm.project_of(str(inner)) == str((tmp_path / "repo").resolve())
    (tmp_path / "repo" / "src" / "pyproject.toml").write_text("")
    assert warm_jvm.project_of(str(inner)) == str((tmp_path / "repo" / "src").resolve())
    lone = tmp_path / "lone"
    lone.mkdir()
    assert warm_jvm.project_of(str(lone)) == str(lone.resolve())
    monkeypatch.chdir(inner)
    monkeypatch.delenv(warm_jvm.ENV_PROJECT, raising=False)
    assert warm_jvm.current_project() == str((tmp_path / "repo" / "src").resolve())
    monkeypatch.setenv(warm_jvm.ENV_PROJECT, "/some/project")
    assert warm_jvm.current_project() == "/some/project"
    assert warm_jvm.ENV_PROJECT in warm_jvm._VOLATILE_ENV  # not part of a JVM's fingerprint


def test_a_run_names_its_project_for_the_processes_it_starts(pytester, monkeypatch):
    monkeypatch.delenv(warm_jvm.ENV_PROJECT, raising=False)
    pytester.makefile(".toml", pyproject="")
    pytester.makepyfile(test_env="""
        import os

        def test_env():
            assert os.environ["STREAMTEST_WARM_JVM_PROJECT"] == os.getcwd()
    """)
    pytester.runpytest_inprocess("-p", "no:cacheprovider").assert_outcomes(passed=1)
    assert warm_jvm.ENV_PROJECT not in os.environ  # restored when the run ends
