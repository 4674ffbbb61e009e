"""Nothing outlives a driver: no query, no thread waiting on a clock, no checkpoint directory."""

from __future__ import annotations

import gc
import os
import signal
import sys
import threading
import traceback
from datetime import timedelta

import pytest
from pyspark.sql import functions as F
from pyspark.sql.types import StringType

from pyspark_streamtest import StreamingQueryFailedError, Topology, TopologyTestDriver
from tests.helpers import at, clicks_per_user


def _threads_in_clock_callbacks() -> list[str]:
    """Stacks of Python threads currently inside our clock (the clock lives in the JVM
    since the stream thread stopped calling Python for the time: none ever is)."""
    stacks = ["".join(traceback.format_stack(frame)) for frame in sys._current_frames().values()]
    return [stack for stack in stacks if "_spark/query/clock.py" in stack and "waitTillTime" in stack]


def _jvm_threads_waiting_on_clocks(spark) -> list[str]:
    """Names of the JVM threads waiting in a query's clock (``waitTillTime``)."""
    from pyspark_streamtest._spark.query.clock import _CLASS_NAME

    traces = spark._jvm.java.lang.Thread.getAllStackTraces()
    waiting = []
    for thread in traces.keySet().toArray():
        frames = traces.get(thread)
        if any(str(f.getClassName()) == _CLASS_NAME and str(f.getMethodName()) == "waitTillTime"
               for f in frames):
            waiting.append(str(thread.getName()))
    return waiting


def test_close_while_records_are_pending(spark, tmp_path):
    driver = TopologyTestDriver(clicks_per_user, spark=spark, checkpoint_root=tmp_path)
    driver.create_input_topic("clicks").pipe_input({"user": "a", "url": "/"}, timestamp=at(1))
    assert len(_jvm_threads_waiting_on_clocks(spark)) == 1  # the idle query waits on its clock
    assert _threads_in_clock_callbacks() == []
    driver.close()
    assert spark.streams.active == []
    assert list(tmp_path.iterdir()) == []
    assert _jvm_threads_waiting_on_clocks(spark) == []


def _checkpoint_manager(driver: TopologyTestDriver) -> str:
    """The class of the CheckpointFileManager the (only) query's offset log writes with."""
    from pyspark_streamtest._spark.query.start import stream_execution

    (runner,) = driver._queries.runners
    log = stream_execution(runner._jquery).offsetLog()
    return str(log.fileManager().getClass().getSimpleName())


def test_checkpoints_use_the_file_system_manager_unless_sql_conf_says_otherwise(spark):
    """The driver's queries write checkpoints with Spark's FileSystem-based manager (no
    chmod/readlink process per file), and the session keeps its own setting; a driver's
    sql_conf overrides the choice. Restart and state still work with it."""
    from pyspark_streamtest._spark.jvm import Jvm
    from pyspark_streamtest._spark.query.checkpoints.settings import CHECKPOINT_MANAGER_KEY

    session_value = spark.conf.get(CHECKPOINT_MANAGER_KEY, None)
    with TopologyTestDriver(clicks_per_user, spark=spark) as driver:
        assert _checkpoint_manager(driver) == "FileSystemBasedCheckpointFileManager"
        assert spark.conf.get(CHECKPOINT_MANAGER_KEY, None) == session_value
        clicks = driver.create_input_topic("clicks")
        clicks.pipe_input({"user": "a", "url": "/"}, timestamp=at(1))
        driver.process_all_available()
        driver.restart()
        clicks.pipe_input({"user": "a", "url": "/x"}, timestamp=at(2))
        clicks.pipe_input({"user": "b", "url": "/"}, timestamp=at(30))  # closes [0s, 10s)
        driver.process_all_available()
        counts = driver.create_output_topic("counts").read_values_to_list()
        assert [(v["user"], v["count"]) for v in counts] == [("a", 2)]
    manager = "FileContextBasedCheckpointFileManager"
    classes = {"org.apache.spark.sql.execution.streaming.checkpointing." + manager,
               "org.apache.spark.sql.execution.streaming." + manager}
    jvm = Jvm(spark)
    existing = next(name for name in classes if jvm.class_exists(name))
    with TopologyTestDriver(clicks_per_user, spark=spark,
                            sql_conf={CHECKPOINT_MANAGER_KEY: existing}) as driver:
        assert _checkpoint_manager(driver) == manager


def _provider_ids(spark, runner, jquery) -> list:
    """The ids of the state store providers of each state partition of the run
    ``jquery`` (checkpoint state folder, operator, partition, store name, run id)."""
    from pyspark_streamtest._spark.jvm import Jvm

    state = Jvm(spark).jvm.org.apache.spark.sql.execution.streaming.state
    path = spark._jvm.org.apache.hadoop.fs.Path
    root = path(path(jquery.streamingQuery().resolvedCheckpointRoot()), "state").toString()
    operators = os.path.join(runner.checkpoint, "state", "0")
    return [
        state.StateStoreProviderId(
            state.StateStoreId(root, 0, int(partition), "default"), jquery.runId())
        for partition in sorted(os.listdir(operators)) if partition.isdigit()
    ]


def _loaded(spark, ids: list) -> list[bool]:
    """Whether this JVM holds each of these state store providers."""
    from pyspark_streamtest._spark.jvm import Jvm

    store = Jvm(spark).scala_object("org.apache.spark.sql.execution.streaming.state.StateStore")
    return [bool(store.isLoaded(provider_id)) for provider_id in ids]


def test_a_stopped_runs_state_store_providers_are_unloaded_at_once(spark):
    """Spark's executors keep a stopped run's state store providers (their memory and, on
    4.1+, their checksum writer threads) until state store maintenance, which the test
    session runs only every 600 s; the driver unloads them as soon as the run stops.
    A restarted run loads its own from the checkpoint and counts on."""
    with TopologyTestDriver(clicks_per_user, spark=spark) as driver:
        clicks = driver.create_input_topic("clicks")
        clicks.pipe_input({"user": "a", "url": "/"}, timestamp=at(1))
        driver.process_all_available()
        (runner,) = driver._queries.runners
        first_run = _provider_ids(spark, runner, runner._jquery)
        assert _loaded(spark, first_run) == [True]
        driver.restart()
        assert _loaded(spark, first_run) == [False]
        clicks.pipe_input({"user": "a", "url": "/x"}, timestamp=at(2))
        clicks.pipe_input({"user": "b", "url": "/"}, timestamp=at(30))  # closes [0s, 10s)
        driver.process_all_available()
        second_run = _provider_ids(spark, runner, runner._jquery)
        assert _loaded(spark, second_run) == [True]
        counts = driver.create_output_topic("counts").read_values_to_list()
        assert [(v["user"], v["count"]) for v in counts] == [("a", 2)]
    assert _loaded(spark, second_run) == [False]


def test_two_drivers_of_one_topology_run_side_by_side(spark):
    """Spark refuses two active queries with the same name in one session; the driver
    names its queries uniquely, so two drivers of one topology can be open together."""
    with TopologyTestDriver(clicks_per_user, spark=spark) as first, \
            TopologyTestDriver(clicks_per_user, spark=spark) as second:
        for driver, user in ((first, "a"), (second, "b")):
            clicks = driver.create_input_topic("clicks")
            clicks.pipe_input({"user": user, "url": "/"}, timestamp=at(1))
            clicks.pipe_input({"user": user, "url": "/"}, timestamp=at(30))
            driver.process_all_available()
        first.restart()
        assert [v["user"] for v in first.create_output_topic("counts").read_values_to_list()] \
            == ["a"]
        assert [v["user"] for v in second.create_output_topic("counts").read_values_to_list()] \
            == ["b"]


# --- the lifecycle/leak suite -------------------------------------------------------------
LIFECYCLES = int(os.environ.get("STREAMTEST_LIFECYCLES", "60"))
"""How many lifecycles the leak test runs: ten of each kind by default. A leak of one
thread or object per lifecycle of a kind shows as ten; ``STREAMTEST_LIFECYCLES`` runs
more."""

# Spark's own thread pools that grow with use up to a cap (not ours to close), and
# threads that end by themselves: each task running a Python UDF has a "Worker Monitor"
# (and on 3.5 a "Writer Monitor") thread that checks the task every 2 s and so outlives
# it by up to 2 s, longer for a task killed because its job failed (Spark then waits
# spark.python.task.killTimeout before destroying the worker, which the JDK's "process
# reaper" threads see out). With two task slots a handful at most are alive at once.
_BOUNDED_JVM_POOLS = {"block-manager-storage-async-thread-pool-": 100,
                      "block-manager-ask-thread-pool-": 100,
                      "Worker Monitor for ": 16, "Writer Monitor for ": 16,
                      "process reaper": 16}


def _raises_on_poison(value):  # no type hints: PySpark would read them as a pandas UDF
    if value == "poison":
        raise ValueError("poison")
    return value


def _checked_counts(t: Topology) -> None:
    udf = F.udf(_raises_on_poison, StringType())
    clicks = t.input("clicks", schema="user STRING")
    t.output("counts", clicks.select(udf("user").alias("user")).groupBy("user").count(),
             output_mode="update")


def _plain(spark, root, monkeypatch) -> None:
    with TopologyTestDriver(_checked_counts, spark=spark, checkpoint_root=root) as driver:
        driver.create_input_topic("clicks").pipe_input(("a",))
        assert len(driver.advance_wall_clock(timedelta(seconds=1))) == 1


def _restarted(spark, root, monkeypatch) -> None:
    with TopologyTestDriver(_checked_counts, spark=spark, checkpoint_root=root) as driver:
        driver.create_input_topic("clicks").pipe_input(("a",))
        driver.process_all_available()
        driver.restart()
        assert driver.batches[-1].batch_id == 0


def _failed(spark, root, monkeypatch) -> None:
    with TopologyTestDriver(_checked_counts, spark=spark, checkpoint_root=root) as driver:
        driver.create_input_topic("clicks").pipe_input(("poison",))
        with pytest.raises(StreamingQueryFailedError):
            driver.process_all_available()


def _unclosed(spark, root, monkeypatch) -> None:
    driver = TopologyTestDriver(_checked_counts, spark=spark, checkpoint_root=root)
    driver.create_input_topic("clicks").pipe_input(("a",))
    driver.process_all_available()
    del driver  # never closed: collected below


def _interrupted(spark, root, monkeypatch) -> None:
    from pyspark_streamtest._spark.query import sink

    collect = sink.CollectingSink.apply

    def interrupting(self, jds, batch_id):
        signal.pthread_kill(threading.main_thread().ident, signal.SIGINT)
        return collect(self, jds, batch_id)

    driver = TopologyTestDriver(_checked_counts, spark=spark, checkpoint_root=root)
    driver.create_input_topic("clicks").pipe_input(("a",))
    with monkeypatch.context() as patch:
        patch.setattr(sink.CollectingSink, "apply", interrupting)
        with pytest.raises(KeyboardInterrupt):
            driver.process_all_available()
    assert driver.closed


def _reset(spark, root, monkeypatch) -> None:
    with TopologyTestDriver(_checked_counts, spark=spark, checkpoint_root=root) as driver:
        driver.create_input_topic("clicks").pipe_input(("a",))
        driver.process_all_available()
        driver.reset()
        driver.create_input_topic("clicks").pipe_input(("b",))
        assert driver.process_all_available()[0].batch_id == 0


_KINDS = (_plain, _restarted, _failed, _unclosed, _interrupted, _reset)


def _leftovers(spark, root) -> dict[str, int]:
    """What a finished lifecycle must not leave behind, counted."""
    from pyspark_streamtest._spark.query.clock import ManualClock
    from pyspark_streamtest._spark.query.sink import CollectingSink
    from pyspark_streamtest.driver._lifecycle import await_released
    from pyspark_streamtest.driver.queries._runner import QueryRunner

    gc.collect()
    await_released()  # drivers collected unclosed are released on threads of their own
    kinds = (TopologyTestDriver, QueryRunner, ManualClock, CollectingSink)
    live = {kind.__name__: 0 for kind in kinds}
    for obj in gc.get_objects():
        for kind in kinds:
            # A sink whose batch failed is held by the traceback in Py4J's log record,
            # which pytest's log capture keeps until the test ends.
            if type(obj) is kind and getattr(obj, "error", None) is None:
                live[kind.__name__] += 1
    names = [str(t.getName()) for t in
             spark._jvm.java.lang.Thread.getAllStackTraces().keySet().toArray()]
    return {
        "python threads": threading.active_count(),
        "open file descriptors": len(os.listdir("/proc/self/fd")),
        "JVM threads outside Spark's capped pools": sum(
            not any(n.startswith(p) for p in _BOUNDED_JVM_POOLS)
            for n in names),
        "active queries": len(spark.streams.active),
        "checkpoint folders": len(list(root.iterdir())),
        **{f"live {name}": count for name, count in live.items()},
    }


def test_lifecycles_of_every_kind_leave_nothing_behind(spark, tmp_path, monkeypatch):
    """Plain, restarted, failed, unclosed-and-collected, interrupted and reset lifecycles, in
    turn; afterwards every count is back where it was after a warm-up round of each, and
    no kind of our objects has more live instances (Spark's block-manager pools, which
    grow up to 100 threads each, are counted apart; the JVM's other threads may grow by
    a few that come and go, such as Py4J's, and may fall)."""
    for kind in _KINDS:  # warm-up: sessions, workers and Spark's pools settle
        kind(spark, tmp_path, monkeypatch)
    before = _leftovers(spark, tmp_path)
    for index in range(LIFECYCLES):
        _KINDS[index % len(_KINDS)](spark, tmp_path, monkeypatch)
    after = _leftovers(spark, tmp_path)
    jvm = "JVM threads outside Spark's capped pools"
    # A leak grows the count with every lifecycle; a fall is threads of earlier tests
    # (Spark's and the JVM's own, idle ones timing out) ending meanwhile, seen under load.
    assert after.pop(jvm) - before.pop(jvm) <= 3
    # Live objects must not grow. They may fall: the process also holds earlier tests'
    # sinks, which Py4J lets go only when the JVM's garbage collector has freed their
    # proxies, so one of those can be released while these lifecycles run.
    live = [name for name in before if name.startswith("live ")]
    grown = {name: (before[name], after[name]) for name in live if after[name] > before[name]}
    assert not grown, grown
    for name in live:
        del before[name], after[name]
    assert after == before, [str(p) for p in tmp_path.rglob("*")]
    names = [str(t.getName()) for t in
             spark._jvm.java.lang.Thread.getAllStackTraces().keySet().toArray()]
    for prefix, cap in _BOUNDED_JVM_POOLS.items():
        assert sum(n.startswith(prefix) for n in names) <= cap
    assert _threads_in_clock_callbacks() == []
    assert _jvm_threads_waiting_on_clocks(spark) == []
