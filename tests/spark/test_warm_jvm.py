"""Warm JVMs (``--streamtest-warm-jvm``): a run attaches to the JVM a previous run left,
and finds it as a new JVM would be. Each test runs real pytest runs of a small project
as separate processes (a process has one JVM), in one working folder, so that they share
a fingerprint, with the JVMs' folders in a folder of this module's own; every JVM a test
leaves is ended when the module ends."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from pyspark_streamtest._spark.runtime import warm_jvm

pytestmark = pytest.mark.skipif(not warm_jvm.available(), reason="warm JVMs need POSIX")

RUN_TIMEOUT_S = 300

_PREAMBLE = '''
import json, os, threading
from pathlib import Path

FACTS = Path(os.environ["FACTS"])

def jvm_pid(spark):
    return int(spark.sparkContext._jvm.java.lang.ProcessHandle.current().pid())

def state_store(spark):
    from pyspark_streamtest._spark.jvm import Jvm
    return Jvm(spark).scala_object("org.apache.spark.sql.execution.streaming.state.StateStore")

def note(name, **facts):
    (FACTS / f"{name}.json").write_text(json.dumps(facts))
'''


class Project:
    """A folder of test files, and pytest runs of them in their own processes."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.jvms = root / "jvms"
        self.facts = root / "facts"
        self.facts.mkdir(parents=True, exist_ok=True)

    def write(self, name: str, body: str) -> Path:
        path = self.root / name
        path.write_text(_PREAMBLE + textwrap.dedent(body))
        return path

    def env(self, **extra: str) -> dict[str, str]:
        env = dict(os.environ)
        for name in list(env):
            if name.startswith(("PYTEST_", "STREAMTEST_")):
                del env[name]
        env.update(STREAMTEST_WARM_JVM="on", STREAMTEST_WARM_JVM_DIR=str(self.jvms),
                   STREAMTEST_WARM_JVM_IDLE="120", FACTS=str(self.facts))
        env.update(extra)
        return env

    def command(self, test_file: str, *options: str) -> list[str]:
        return [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                "-p", "no:randomly", "-p", "no:xdist", test_file, *options]

    def run(self, test_file: str, *options: str, **env: str) -> subprocess.CompletedProcess[str]:
        done = subprocess.run(self.command(test_file, *options), cwd=self.root,
                              env=self.env(**env), capture_output=True, text=True,
                              timeout=RUN_TIMEOUT_S, check=False)
        assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
        return done

    def fact(self, name: str) -> dict[str, object]:
        facts: dict[str, object] = json.loads((self.facts / f"{name}.json").read_text())
        return facts

    def warm(self) -> list[dict[str, int]]:
        """The facts of every warm JVM in the folder: process ids, gateway port."""
        found = []
        for info in sorted(self.jvms.glob("*/gateway.json")):
            found.append(json.loads(info.read_text()))
        return found


def _end_all(jvms: Path) -> None:
    """End every keeper and JVM in ``jvms`` and wait until they are gone (bounded)."""
    pids = []
    for folder in jvms.glob("*"):
        for name in ("gateway.json", "keeper.pid"):
            path = folder / name
            if path.exists():
                text = path.read_text()
                if name == "keeper.pid":
                    pids.append(int(text))
                else:
                    info = json.loads(text)
                    pids += [info["keeper_pid"], info["jvm_pid"]]
    for pid in set(pids):
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGKILL)
    warm_jvm.wait_gone(set(pids), 30)


def _alive(pid: int) -> bool:
    return warm_jvm._alive(pid)


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Project]:
    made = Project(tmp_path_factory.mktemp("warm-project"))
    try:
        yield made
    finally:
        _end_all(made.jvms)


def test_a_second_run_attaches_to_the_first_runs_jvm_and_finds_it_as_new(project):
    """Temp views (local and global), SQL settings, cached tables, listeners, active
    queries and log levels of the first run are not in the second, which runs in the
    same JVM with a SparkContext of its own."""
    project.write("test_leave_things.py", """
        from pyspark.sql import functions as F

        def test_leave_things_behind(spark, tmp_path):
            spark.range(3).createOrReplaceTempView("left_view")
            spark.range(3).createOrReplaceGlobalTempView("left_global")
            spark.conf.set("spark.sql.shuffle.partitions", "7")
            spark.range(5).cache().count()
            spark.table("left_view").cache()
            spark.sparkContext.setLogLevel("FATAL")
            from pyspark.sql.streaming import StreamingQueryListener
            class Listener(StreamingQueryListener):
                def onQueryStarted(self, event): pass
                def onQueryProgress(self, event): pass
                def onQueryIdle(self, event): pass
                def onQueryTerminated(self, event): pass
            spark.streams.addListener(Listener())
            counts = (spark.readStream.format("rate").load().groupBy().count()
                      .writeStream.format("memory").outputMode("complete")
                      .queryName("left_state").trigger(once=True).start())
            assert counts.awaitTermination(120)
            assert state_store(spark).isMaintenanceRunning()  # Spark keeps its providers
            query = (spark.readStream.format("rate").load().writeStream.format("memory")
                     .queryName("left_running").start())
            assert query.isActive
            note("first", pid=jvm_pid(spark), app=spark.sparkContext.applicationId,
                 level=str(spark.sparkContext._jvm.org.apache.logging.log4j.LogManager
                           .getRootLogger().getLevel()))
    """)
    project.write("test_find_nothing.py", """
        def test_nothing_of_the_first_run_is_here(spark):
            jvm = spark.sparkContext._jvm
            assert spark.catalog.listTables() == []
            assert spark.catalog.listTables("global_temp") == []
            assert spark.conf.get("spark.sql.shuffle.partitions") == "1"
            assert spark._jsparkSession.sharedState().cacheManager().isEmpty()
            assert spark.streams.active == []
            assert len(spark._jsparkSession.streams().listListeners()) == 0
            assert not state_store(spark).isMaintenanceRunning()
            level = str(jvm.org.apache.logging.log4j.LogManager.getRootLogger().getLevel())
            note("second", pid=jvm_pid(spark), app=spark.sparkContext.applicationId,
                 level=level)
    """)
    project.run("test_leave_things.py")
    project.run("test_find_nothing.py")
    first, second = project.fact("first"), project.fact("second")
    assert first["pid"] == second["pid"]
    assert first["app"] != second["app"]
    assert first["level"] == "FATAL"
    assert second["level"] != "FATAL"


def test_edited_user_code_is_the_code_that_runs(project):
    """Python workers are new for each run: a UDF's module edited between two runs in
    the same JVM runs as it is on disk."""
    project.write("test_udf.py", """
        from datetime import datetime, timezone
        from pyspark.sql import functions as F
        from pyspark_streamtest import Topology
        import shop_rules

        def scores(t: Topology) -> None:
            events = t.input("events", schema="n INT")
            score = F.udf(shop_rules.score, "int", useArrow=False)
            t.output("scores", events.select(score("n").alias("score")))

        def test_score(topology_driver, spark):
            driver = topology_driver(scores)
            driver.create_input_topic("events").pipe_input({"n": 1})
            driver.process_all_available()
            got = driver.create_output_topic("scores").read_values_to_list()
            import sys
            note("udf-" + shop_rules.VERSION, pid=jvm_pid(spark), got=got,
                 loaded=[m for m in ("pandas", "pyspark.testing") if m in sys.modules])
    """)
    rules = project.root / "shop_rules.py"
    rules.write_text("VERSION = 'one'\ndef score(n):\n    return n + 1\n")
    project.run("test_udf.py")
    rules.write_text("VERSION = 'two'\ndef score(n):\n    return n + 100\n")
    project.run("test_udf.py")
    one, two = project.fact("udf-one"), project.fact("udf-two")
    assert one["pid"] == two["pid"]
    assert one["got"] == [{"score": 2}]
    assert two["got"] == [{"score": 101}]
    # Nothing of the run needed pandas, nor PySpark's testing module that PySpark's NumPy
    # converters import for the first call to the JVM (see _spark/runtime/py4j_converters.py).
    assert one["loaded"] == two["loaded"] == []


def test_other_settings_or_environment_get_a_jvm_of_their_own(project):
    """The fingerprint: another Spark setting or another environment variable is
    another JVM; the first settings find their JVM again."""
    plain = _jvm_of_a_run(project, "plain")
    other_setting = _jvm_of_a_run(project, "other_setting", "--streamtest-conf",
                                  "spark.sql.shuffle.partitions=3")
    other_env = _jvm_of_a_run(project, "other_env", PROJECT_FLAVOUR="other")
    plain_again = _jvm_of_a_run(project, "plain_again")
    assert len({plain, other_setting, other_env}) == 3
    assert plain_again == plain


def test_a_concurrent_run_gets_a_jvm_of_its_own(project):
    project.write("test_hold.py", """
        import time

        def test_hold(spark):
            note("holder", pid=jvm_pid(spark))
            release = FACTS / "release"
            deadline = time.monotonic() + 240
            while not release.exists() and time.monotonic() < deadline:
                threading.Event().wait(0.1)
            assert release.exists()
    """)
    project.write("test_beside.py", """
        def test_beside(spark):
            note("beside", pid=jvm_pid(spark))
            (FACTS / "release").write_text("go")
    """)
    holder = subprocess.Popen(project.command("test_hold.py"), cwd=project.root,
                              env=project.env(), stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, text=True)
    try:
        deadline = time.monotonic() + RUN_TIMEOUT_S
        while not (project.facts / "holder.json").exists():
            assert holder.poll() is None, holder.communicate()[0][-3000:]
            assert time.monotonic() < deadline
            time.sleep(0.1)
        project.run("test_beside.py")
        output, _ = holder.communicate(timeout=RUN_TIMEOUT_S)
        assert holder.returncode == 0, output[-3000:]
    finally:
        if holder.poll() is None:
            holder.kill()
            holder.wait(30)
    assert project.fact("holder")["pid"] != project.fact("beside")["pid"]


def test_a_killed_run_leaves_nothing_running_for_the_next(project):
    """A run killed with its queries running: the next run in the same JVM finds no
    query, and a SparkContext of its own."""
    project.write("test_killed.py", """
        def test_killed_while_running(spark):
            query = (spark.readStream.format("rate").load().writeStream.format("memory")
                     .queryName("orphan").start())
            note("killed", pid=jvm_pid(spark), app=spark.sparkContext.applicationId)
            threading.Event().wait(240)
    """)
    project.write("test_after_kill.py", """
        def test_after(spark):
            assert spark.streams.active == []
            note("after-kill", pid=jvm_pid(spark), app=spark.sparkContext.applicationId)
    """)
    victim = subprocess.Popen(project.command("test_killed.py"), cwd=project.root,
                              env=project.env(), stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + RUN_TIMEOUT_S
        while not (project.facts / "killed.json").exists():
            assert victim.poll() is None and time.monotonic() < deadline
            time.sleep(0.1)
    finally:
        victim.kill()
        victim.wait(30)
    project.run("test_after_kill.py")
    killed, after = project.fact("killed"), project.fact("after-kill")
    assert killed["pid"] == after["pid"]
    assert killed["app"] != after["app"]


def _jvm_of_a_run(project: Project, name: str, *options: str, **env: str) -> int:
    """The JVM process id of a run of a one-test file named after ``name``."""
    project.write(f"test_{name}.py", f"""
        def test_{name}(spark):
            note("{name}", pid=jvm_pid(spark))
    """)
    project.run(f"test_{name}.py", *options, **env)
    return int(project.fact(name)["pid"])  # type: ignore[call-overload]


def _count(path: Path) -> int:
    try:
        return int(path.read_text())
    except (OSError, ValueError):
        return 0


def _cleaned(project: Project, jvm_pid: int, jvms: Path | None = None) -> None:
    """Wait (bounded) until the keeper of ``jvm_pid`` has cleaned it after its last run:
    its ``cleaned`` count has reached its ``runs`` count. (A ``cleaned`` file alone is
    the count of earlier runs' cleanings when the JVM served earlier tests of the
    module: stopped then, it was stopped mid-cleaning, and the next run waited for the
    keeper's 60 s cleaning timeout.)"""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        for info in (jvms or project.jvms).glob("*/gateway.json"):
            folder = info.parent
            if json.loads(info.read_text())["jvm_pid"] == jvm_pid and not (
                    folder / "cleaning").exists() and (
                    0 < _count(folder / "runs") <= _count(folder / "cleaned")):
                return
        time.sleep(0.05)
    raise AssertionError(f"the keeper of JVM {jvm_pid} did not clean it within 60 s")


def test_a_wedged_or_killed_jvm_is_replaced(project):
    """A JVM that does not answer (stopped here, once its keeper has cleaned it after
    its run: a JVM stopped while it is cleaned holds the next run for the keeper's
    cleaning timeout, 60 s) is ended, and the run starts another after at most the
    answer timeout and a start; a JVM killed after its run is replaced by the next run
    too, and no longer listed. (One chain of runs: the wedged JVM's replacement is the
    one killed.)"""
    first = _jvm_of_a_run(project, "before_wedge")
    _cleaned(project, first)
    os.kill(first, signal.SIGSTOP)
    try:
        started = time.monotonic()
        second = _jvm_of_a_run(project, "after_wedge")
        took = time.monotonic() - started
    finally:
        if _alive(first):
            os.kill(first, signal.SIGKILL)
    assert second != first
    assert not _alive(first)  # ended by the run, not left stopped
    assert took < warm_jvm.ANSWER_TIMEOUT_S + warm_jvm.START_TIMEOUT_S
    os.kill(second, signal.SIGKILL)
    third = _jvm_of_a_run(project, "after_jvm_kill")
    assert third not in (first, second)
    assert second not in [info["jvm_pid"] for info in project.warm()]


def _listening_addresses(port: int) -> set[str]:
    """The addresses a TCP port listens on, from /proc/net/tcp and tcp6."""
    found = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        if not os.path.exists(table):
            continue
        for line in Path(table).read_text().splitlines()[1:]:
            local, state = line.split()[1], line.split()[3]
            address, port_hex = local.split(":")
            if int(port_hex, 16) != port or state != "0A":  # 0A: LISTEN
                continue
            raw = bytes.fromhex(address)  # 32-bit words, each in little-endian order
            if len(raw) == 16 and raw[:12] == bytes(8) + b"\xff\xff\x00\x00":
                raw = raw[12:]  # an IPv4-mapped IPv6 address: its last word
            found.add(".".join(str(b) for b in reversed(raw)) if len(raw) == 4 else raw.hex())
    return found


def _gone_within(pid: int, seconds: float) -> bool:
    return warm_jvm.wait_gone([pid], seconds)


def test_an_idle_jvm_ends_by_itself(project, tmp_path):
    jvms = tmp_path / "idle-jvms"
    pid = _jvm_of_a_run(project, "idle", STREAMTEST_WARM_JVM_DIR=str(jvms),
                        STREAMTEST_WARM_JVM_IDLE="1")
    assert _gone_within(pid, 60)
    deadline = time.monotonic() + 10
    while any(jvms.iterdir()) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert list(jvms.iterdir()) == []


def test_off_leaves_no_jvm_behind(project, tmp_path):
    jvms = tmp_path / "off-jvms"
    pid = _jvm_of_a_run(project, "off", "--streamtest-warm-jvm=off",
                        STREAMTEST_WARM_JVM_DIR=str(jvms))
    assert _gone_within(pid, 30)
    assert not jvms.exists() or list(jvms.iterdir()) == []


def _command(project: Project, jvms: Path, *verb: str, cwd: Path) -> str:
    env = {**project.env(), "STREAMTEST_WARM_JVM_DIR": str(jvms)}
    done = subprocess.run([sys.executable, "-m", "pyspark_streamtest.gates.cli", "warm-jvm",
                           *verb], env=env, cwd=cwd, capture_output=True, text=True,
                          timeout=120, check=True)
    return done.stdout


def _private_and_on_loopback(jvms: Path) -> None:
    """The JVMs' folder, each JVM's folder and its files are the user's alone; each
    JVM's gateway listens on 127.0.0.1 only."""
    assert (jvms.stat().st_mode & 0o777) == 0o700
    for info_file in jvms.glob("*/gateway.json"):
        folder = info_file.parent
        assert (folder.stat().st_mode & 0o777) == 0o700
        for path in folder.iterdir():
            assert (path.stat().st_mode & 0o077) == 0, path
        assert _listening_addresses(json.loads(info_file.read_text())["port"]) == {
            "127.0.0.1"}


def test_the_jvm_is_private_the_command_lists_and_ends_warm_jvms(project, tmp_path):
    """A warm JVM is private to the user and listens on loopback; from the project's
    folder (or one below it) the command lists and ends the project's JVMs."""
    jvms = tmp_path / "listed-jvms"
    pid = _jvm_of_a_run(project, "listed", STREAMTEST_WARM_JVM_DIR=str(jvms))
    assert list(jvms.glob("*/gateway.json"))
    _private_and_on_loopback(jvms)
    # In use until its keeper has cleaned it after the run (a list at once may say so).
    _cleaned(project, pid, jvms)
    below = project.root / "sub"
    below.mkdir()
    (project.root / "pyproject.toml").write_text("")  # what marks the project's folder
    assert f"JVM pid {pid} (waiting)" in _command(project, jvms, "list", cwd=below)
    ended = _command(project, jvms, "stop", cwd=project.root)
    assert ended.strip() == f"ended 1 warm JVM of project {project.root.resolve()}"
    assert _gone_within(pid, 10)
    assert list(jvms.iterdir()) == []


def test_at_most_a_few_jvms_wait_and_another_project_s_are_its_own(project, tmp_path):
    """Runs in a new working folder each time would leave a JVM each: starting one more
    than ``$STREAMTEST_WARM_JVM_MAX`` (4 by default; 2 here) ends the one used least
    recently. On a machine with several projects, a project's runs and commands never
    end another's JVMs: neither that cap nor ``warm-jvm stop`` touches them (another
    project's JVM, used least recently of all, outlives the cap); ``--all-projects``
    does."""
    jvms = tmp_path / "projects-jvms"
    other = _jvm_of_a_run(project, "other_project", STREAMTEST_WARM_JVM_DIR=str(jvms),
                          STREAMTEST_WARM_JVM_PROJECT="/elsewhere/other")
    ours = [_jvm_of_a_run(project, f"ours_{n}", STREAMTEST_WARM_JVM_DIR=str(jvms),
                          STREAMTEST_WARM_JVM_MAX="2", PROJECT_FLAVOUR=str(n))
            for n in range(3)]  # another JVM each; two may wait: ours_0's ends
    try:
        assert _gone_within(ours[0], 30)
        assert _alive(other) and all(_alive(pid) for pid in ours[1:])
        for pid in ours[1:]:  # each in use until its keeper has cleaned it after its run
            _cleaned(project, pid, jvms)
        listed = _command(project, jvms, "list", cwd=project.root)
        assert all(f"JVM pid {pid}" in listed for pid in ours[1:])
        assert f"JVM pid {other}" not in listed
        assert _command(project, jvms, "stop", cwd=project.root).startswith(
            "ended 2 warm JVMs")
        assert all(_gone_within(pid, 10) for pid in ours[1:]) and _alive(other)
        everywhere = _command(project, jvms, "list", "--all-projects", cwd=project.root)
        assert f"JVM pid {other} (waiting)" in everywhere
        assert "project /elsewhere/other" in everywhere
        assert _command(project, jvms, "stop", "--all-projects",
                        cwd=project.root).strip() == "ended 1 warm JVM"
        assert _gone_within(other, 10)
    finally:
        _end_all(jvms)


def test_a_run_asking_for_the_jvm_s_logs_gets_a_jvm_of_its_own(project, tmp_path):
    """A warm JVM's output goes to its keeper's log: ``--streamtest-jvm-logs`` wants it on
    the run's terminal, so that run starts (and ends) a JVM of its own."""
    jvms = tmp_path / "logs-jvms"
    pid = _jvm_of_a_run(project, "with_logs", "--streamtest-jvm-logs",
                        STREAMTEST_WARM_JVM_DIR=str(jvms))
    assert _gone_within(pid, 30)
    assert not jvms.exists() or list(jvms.iterdir()) == []


_EVERY_CALLBACK = """
    import pandas as pd
    from datetime import timedelta
    from pyspark.sql import Row
    from pyspark.sql import functions as F
    from pyspark.sql.streaming import StreamingQueryListener
    from pyspark.sql.streaming.state import GroupStateTimeout
    from pyspark_streamtest import Feature, Topology
    from pyspark_streamtest.core.features import supported_features

    class Listener(StreamingQueryListener):
        def __init__(self):
            self.started = []
        def onQueryStarted(self, event): self.started.append(event.id)
        def onQueryProgress(self, event): pass
        def onQueryIdle(self, event): pass
        def onQueryTerminated(self, event): pass

    def with_udf(t: Topology) -> None:
        plus = F.udf(lambda n: n + 1, "int", useArrow=False)
        t.output("out", t.input("events", schema="n INT").select(plus("n").alias("n")))

    def counting(key, frames, state):
        count = (state.get[0] if state.exists else 0) + sum(len(f) for f in frames)
        state.update((count,))
        yield pd.DataFrame({"user": [key[0]], "count": [count]})

    def in_pandas(t: Topology) -> None:
        t.output("counts", t.input("clicks", schema="user STRING").groupBy("user")
                 .applyInPandasWithState(counting, "user STRING, count LONG", "count LONG",
                                         "Update", GroupStateTimeout.NoTimeout),
                 output_mode="update")

    def with_state(t: Topology) -> None:
        from pyspark.sql.streaming.stateful_processor import StatefulProcessor

        class Counter(StatefulProcessor):
            def init(self, handle):
                self.total = handle.getValueState("total", "total LONG")
            def handleInputRows(self, key, rows, timerValues):
                total = (self.total.get()[0] if self.total.exists() else 0) + len(list(rows))
                self.total.update((total,))
                yield Row(user=key[0], total=total)
            def close(self):
                pass

        t.output("totals", t.input("clicks", schema="user STRING").groupBy("user")
                 .transformWithState(Counter(), "user STRING, total LONG", "Update", "None"),
                 output_mode="update")

    def test_every_query_that_calls_back_into_python(topology_driver, spark, tmp_path):
        listener = Listener()
        spark.streams.addListener(listener)
        udf = topology_driver(with_udf)
        assert listener.started  # Spark calls it before start() returns
        stored = []
        batches = topology_driver(lambda t: t.foreach_batch(
            "store", t.input("events", schema="n INT"),
            lambda batch, batch_id: stored.append((batch_id, batch.count()))))
        pandas = topology_driver(in_pandas)
        tws = topology_driver(with_state, sql_conf={
            "spark.sql.streaming.stateStore.providerClass":
                "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider",
        }) if Feature.TRANSFORM_WITH_STATE in supported_features(spark) else None
        (tmp_path / "in").mkdir()
        (tmp_path / "in" / "a.json").write_text('{"n": 1}\\n{"n": 2}\\n')
        seen = []
        writer = (spark.readStream.schema("n INT").json(str(tmp_path / "in")).writeStream
                  .foreachBatch(lambda batch, batch_id: seen.append(batch.count()))
                  .option("checkpointLocation", str(tmp_path / "checkpoint")))

        # Every query's Python objects are in the JVM's hands now. What the JVM does
        # whenever it likes: finalize the proxies nothing holds, among them the earlier
        # run's, whose finalizers tell the process attached now to forget their ids.
        pool = spark.sparkContext._gateway.gateway_property.pool
        ours = set(pool.dict)
        system = spark.sparkContext._jvm.java.lang.System
        system.gc()
        system.runFinalization()
        assert set(pool.dict) >= ours  # none of this run's proxies was forgotten

        started = len(listener.started)
        udf.create_input_topic("events").pipe_input({"n": 1})
        udf.process_all_available()
        udf.advance_wall_clock(timedelta(seconds=5))
        udf.create_input_topic("events").pipe_input({"n": 2})
        udf.process_all_available()
        assert udf.create_output_topic("out").read_values_to_list() == [{"n": 2}, {"n": 3}]
        batches.create_input_topic("events").pipe_value_list([{"n": 1}, {"n": 2}])
        batches.process_all_available()
        assert stored == [(0, 2)]
        pandas.create_input_topic("clicks").pipe_value_list([{"user": "a"}, {"user": "a"}])
        pandas.process_all_available()
        assert pandas.create_output_topic("counts").read_values_to_list() == [
            {"user": "a", "count": 2}]
        if tws is not None:
            tws.create_input_topic("clicks").pipe_value_list(
                [{"user": "a"}, {"user": "b"}, {"user": "a"}])
            tws.process_all_available()
            assert sorted(tws.create_output_topic("totals").read_values_to_list(),
                          key=lambda v: v["user"]) == [{"user": "a", "total": 2},
                                                       {"user": "b", "total": 1}]
        query = writer.trigger(availableNow=True).start()
        assert query.awaitTermination(120)
        assert query.exception() is None and seen == [2]
        assert len(listener.started) == started + 1  # the listener heard the last query
        spark.streams.removeListener(listener)
        note("callbacks", pid=jvm_pid(spark))
"""


_LEAVE_PROXIES = """
    from pyspark_streamtest import Topology

    def passing(t: Topology) -> None:
        t.output("out", t.input("events", schema="n INT"))

    def test_leave_proxies_to_be_collected(topology_driver, spark):
        # Each driver hands the JVM its clock and sink (Python proxies p0, p1, ... of
        # this process). Open until the run ends, they are collected after it: at the
        # JVM's next garbage collection, when the next run may be attached.
        for n in range(20):
            driver = topology_driver(passing)
            driver.create_input_topic("events").pipe_input({"n": n})
            driver.process_all_available()
        note("proxies-left", pid=jvm_pid(spark))
"""


def test_an_earlier_run_s_proxies_collected_late_never_reach_the_next_run_s(project, tmp_path):
    """Issue 49: Py4J numbers a process's Python proxies p0, p1, ... and a JVM proxy's
    finalizer tells the gateway's callback peer *of that moment* to forget its id. The
    first run leaves the proxies of 20 drivers, closed as the run ends, for the JVM to
    collect; the second, in the same JVM, sets up a query of every kind that calls back
    into Python (the driver's sink and clock with a Python UDF, the driver's and
    PySpark's own ``foreachBatch``, a listener, ``applyInPandasWithState``,
    ``transformWithState``), forces the JVM's garbage collector, and runs them. Each run
    numbers its proxies in a range of its own, so none of the second run's is forgotten
    (with the ranges left out, its first batch failed with "Object ID unknown")."""
    project.write("test_leave_proxies.py", _LEAVE_PROXIES)
    project.write("test_every_callback.py", _EVERY_CALLBACK)
    jvms = str(tmp_path / "proxy-jvms")  # one JVM for both runs: no other waits beside it
    try:
        project.run("test_leave_proxies.py", STREAMTEST_WARM_JVM_DIR=jvms)
        project.run("test_every_callback.py", STREAMTEST_WARM_JVM_DIR=jvms)
    finally:
        _end_all(Path(jvms))
    assert project.fact("proxies-left")["pid"] == project.fact("callbacks")["pid"]


def test_the_objects_an_ended_run_held_are_let_go_of(project, tmp_path):
    """Py4J's gateway keeps each JVM object it handed to a Python process until that
    process says it dropped it; a run's process ends holding many, and never says so.
    The next run in the same JVM finds none of them bound (their memory can be
    collected), and the number bound does not grow from run to run."""
    project.write("test_hold_objects.py", """
        from py4j.java_gateway import JavaObject

        def bound(spark):
            gateway = spark.sparkContext._gateway
            server = JavaObject("GATEWAY_SERVER", gateway._gateway_client)
            return [str(k) for k in server.getGateway().getBindings().keySet().toArray()]

        def test_hold_objects(spark):
            before = len(bound(spark))
            held = [spark.sparkContext._jvm.java.util.ArrayList() for _ in range(300)]
            kept = [spark.range(3)._jdf for _ in range(20)]
            note("held", pid=jvm_pid(spark), ids=[o._target_id for o in held + kept],
                 before=before, bound=bound(spark))
    """)
    project.write("test_find_them_gone.py", """
        from test_hold_objects import bound

        def test_find_them_gone(spark):
            name = "again" if (FACTS / "after-held.json").exists() else "after-held"
            note(name, pid=jvm_pid(spark), bound=bound(spark))
    """)
    jvms = str(tmp_path / "bound-jvms")  # every run in one JVM: no other waits beside it
    try:
        project.run("test_hold_objects.py", STREAMTEST_WARM_JVM_DIR=jvms)
        for _ in range(3):
            project.run("test_find_them_gone.py", STREAMTEST_WARM_JVM_DIR=jvms)
    finally:
        _end_all(Path(jvms))
    held, after, again = project.fact("held"), project.fact("after-held"), project.fact("again")
    assert held["pid"] == after["pid"]
    assert set(held["ids"]) & set(after["bound"]) == set()  # type: ignore[arg-type]
    assert set(held["ids"]) <= set(held["bound"])  # type: ignore[arg-type]
    # No growth from run to run: none of the objects a run held is bound two runs later
    # (with nothing let go of, each run left about 9). Ids, not counts: how many objects
    # a run binds itself varies with the machine's load.
    def objects(run: dict[str, object]) -> set[str]:  # Py4J's own entries ('j', ...) stay
        return {key for key in run["bound"] if key.startswith("o")}  # type: ignore[attr-defined]

    assert objects(after) & objects(again) == set()
