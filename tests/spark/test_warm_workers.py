"""Warm Python workers (issue 36): the Python workers Spark starts afresh (the
transformWithState planner) come forked from a server that imported PySpark once, and
run exactly as a new interpreter would: the same module, arguments, environment, working
directory and streams, the user's code as it is on disk, the worker's exit status and
Spark's signals passed through; anything else starts the real interpreter."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap

import pytest

from pyspark_streamtest import Feature
from pyspark_streamtest._spark.runtime import warm_workers
from tests.spark.test_transform_with_state import ROCKSDB, _run_and_check

pytestmark = pytest.mark.skipif(
    not warm_workers.enabled("local[1]"), reason="warm workers run on Linux only"
)


@pytest.fixture
def launcher():
    return warm_workers.worker_python(sys.executable, "local[1]")


def _started(launcher: str) -> int:
    assert warm_workers.wait_until_ready(launcher, 120)
    started = warm_workers.started_workers(launcher)
    assert started is not None
    return started


def _worker_env(*, path: str = "", **extra: str) -> dict[str, str]:
    """The environment Spark gives a worker: its hash seed, unbuffered streams, and
    Spark's PySpark first on the import path (then ``path``)."""
    python_path = os.pathsep.join([*warm_workers.spark_python_path(), *filter(None, [path])])
    return {**os.environ, "PYTHONHASHSEED": "0", "PYTHONUNBUFFERED": "YES",
            "PYTHONPATH": python_path, **extra}


def _run(launcher: str, tmp_path, *args: str, **env: str) -> subprocess.CompletedProcess:
    return subprocess.run([launcher, *args], cwd=tmp_path, env=_worker_env(**env),
                          capture_output=True, text=True, timeout=120, check=False)


def test_a_worker_runs_its_module_as_a_new_interpreter_would(launcher, tmp_path):
    (tmp_path / "probe.py").write_text(textwrap.dedent("""
        import os, sys
        print(sys.argv[1:], os.environ["PROBE"], os.getcwd() == sys.path[0], __name__)
        print(sys.stdin.read().upper())
        print("to stderr", file=sys.stderr)
        sys.exit(3)
    """))
    before = _started(launcher)
    done = subprocess.run([launcher, "-m", "probe", "x", "--y"], cwd=tmp_path,
                          env=_worker_env(PROBE="p1", path=str(tmp_path)),
                          input="from stdin", capture_output=True, text=True, timeout=120,
                          check=False)
    assert done.stdout.splitlines() == ["['x', '--y'] p1 True __main__", "FROM STDIN"]
    assert done.stderr.strip() == "to stderr"
    assert done.returncode == 3
    assert _started(launcher) == before + 1  # forked by the server, not started afresh


def test_each_worker_imports_the_user_s_code_as_it_is_on_disk_now(launcher, tmp_path):
    module = tmp_path / "edited.py"
    module.write_text("print('first version')\n")
    assert _run(launcher, tmp_path, "-m", "edited").stdout == "first version\n"
    module.write_text("print('second version')\n")
    assert _run(launcher, tmp_path, "-m", "edited").stdout == "second version\n"


def test_a_raised_exception_prints_python_s_traceback_and_exits_1(launcher, tmp_path):
    (tmp_path / "raises.py").write_text("raise ValueError('bad input')\n")
    done = _run(launcher, tmp_path, "-m", "raises")
    assert done.returncode == 1
    assert "ValueError: bad input" in done.stderr and "Traceback" in done.stderr


def test_spark_s_terminate_reaches_the_worker(launcher, tmp_path):
    (tmp_path / "waits.py").write_text(textwrap.dedent("""
        import os, sys
        print(os.getpid(), flush=True)
        sys.stdin.read()
    """))
    process = subprocess.Popen([launcher, "-m", "waits"], cwd=tmp_path, env=_worker_env(),
                               stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    worker_pid = int(process.stdout.readline())
    process.terminate()  # what Spark's Process.destroy() does
    assert process.wait(timeout=60) == 128 + signal.SIGTERM
    process.stdin.close()
    process.stdout.close()
    # The launcher exits once the server has reaped the worker: it is gone already.
    with pytest.raises(ProcessLookupError):
        os.kill(worker_pid, 0)


def test_what_the_server_cannot_serve_exactly_starts_the_real_interpreter(launcher, tmp_path):
    (tmp_path / "seed.py").write_text("import sys; print(sys.flags.hash_randomization)\n")
    before = _started(launcher)
    other_seed = _run(launcher, tmp_path, "-m", "seed", PYTHONHASHSEED="random")
    not_a_module = _run(launcher, tmp_path, "-c", "print('plain')")
    other_pyspark = _run(launcher, tmp_path, "-m", "seed", PYTHONPATH="")  # site-packages'
    assert (other_seed.stdout, not_a_module.stdout, other_pyspark.stdout) == (
        "1\n", "plain\n", "0\n")
    assert _started(launcher) == before  # all three started as themselves


def test_warm_workers_can_be_turned_off(monkeypatch):
    monkeypatch.setenv(warm_workers.ENV_SWITCH, "0")
    assert warm_workers.worker_python(sys.executable, "local[1]") == sys.executable
    monkeypatch.setenv(warm_workers.ENV_SWITCH, "1")
    assert warm_workers.worker_python(sys.executable, "spark://host:7077") == sys.executable
    other = "/usr/bin/python3.8"  # not this interpreter: used as it is
    assert warm_workers.worker_python(other, "local[1]") == other


@pytest.mark.streamtest_requires(Feature.TRANSFORM_WITH_STATE_IN_PANDAS)
def test_the_transform_with_state_planner_starts_warm(topology_driver, spark):
    workers = spark.sparkContext.pythonExec
    assert workers != sys.executable  # the session the library made uses the launcher
    before = _started(workers)
    _run_and_check(topology_driver, spark, "transformWithStateInPandas")
    assert _started(workers) > before


def _greeting_topology(t):
    """A transformWithStateInPandas query whose processor prints in init(), which the
    planner calls at the query's start."""
    import pandas as pd
    from pyspark.sql.streaming.stateful_processor import StatefulProcessor

    class Greets(StatefulProcessor):
        def init(self, handle):
            print("the user's processor says hello", flush=True)
            self.seen = handle.getValueState("seen", "n LONG")

        def handleInputRows(self, key, rows, timerValues):  # noqa: N802, N803 (Spark API)
            count = sum(len(frame) for frame in rows)
            yield pd.DataFrame({"user": [key[0]], "n": [count]})

        def close(self):
            pass

    clicks = t.input("clicks", schema="user STRING")
    t.output("greeted", clicks.groupBy("user").transformWithStateInPandas(
        Greets(), "user STRING, n LONG", "Update", "None"), output_mode="update")


def test_the_planner_s_own_log_lines_are_dropped_and_the_user_s_prints_stay():
    """What PySpark 4.3's planner prints at a query start (its own lines, each followed by
    an empty one), with a user's processor printing in init() between them. (Spark copies
    a worker's output to the JVM's stderr from a thread of its own, so a test cannot know
    when a line has arrived there: the filter is checked on the worker's side.)"""
    import io

    from pyspark_streamtest._spark.runtime import _worker_server

    out = io.StringIO()
    quiet = _worker_server._WithoutPlannerLogs(out)
    for text in ["Starting Streaming TransformWithStateInPandas Python worker.\n", "\n",
                 "Streaming TransformWithStateInPandas Python worker Starting execution of "
                 "UDF: <function>.\n", "\n", "the user's processor says hello", "\n",
                 "\n", "Streaming TransformWithStateInPandas Python worker Completed "
                 "execution of UDF: <function>.\n", "\n", "no newline yet"]:
        print(text, end="", file=quiet)
    quiet.flush()
    assert out.getvalue() == "the user's processor says hello\n\nno newline yet"


@pytest.mark.streamtest_requires(Feature.TRANSFORM_WITH_STATE_IN_PANDAS)
def test_a_processor_that_prints_runs_through_the_quiet_planner(topology_driver, spark):
    workers = spark.sparkContext.pythonExec
    before = _started(workers)
    driver = topology_driver(_greeting_topology, sql_conf=ROCKSDB)
    driver.create_input_topic("clicks").pipe_input({"user": "a"})
    driver.process_all_available()
    assert driver.create_output_topic("greeted").read_values_to_list() == [
        {"user": "a", "n": 1}]
    assert _started(workers) > before  # the planner ran in a forked, quiet worker
