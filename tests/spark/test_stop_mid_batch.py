"""A query stopped in the middle of a batch leaves no task of its run running.

The driver deletes a query's checkpoint right after stopping it, so a task of the
stopped run that is still running could write into the deleted folder: a killed state
store task aborts its store in a task completion listener, which creates the version's
delta temporary file (with Hadoop's ``.crc`` beside it) and deletes it again. Spark
reports a cancelled job as ended before its killed tasks have ended, so the stop must
wait for the tasks themselves (``_spark/query/start.py``).
"""

from __future__ import annotations

import os
import signal
import threading

import pytest

from pyspark_streamtest import TopologyTestDriver
from tests.helpers import at, counts_per_user

ROUNDS = int(os.environ.get("STREAMTEST_MID_BATCH_STOPS", "30"))
"""How many queries are stopped mid-batch (one try of a short race each)."""

_STATE_PARTITIONS = {"spark.sql.shuffle.partitions": "8"}
"""Eight state store tasks a batch, two at a time: more chances for a stop to find
one running."""

_TASK_THREAD = "Executor task launch worker for task "
_TASK_RUN = "org.apache.spark.scheduler.Task.run"


def _stages_of(spark, run_id: str) -> set[int]:
    tracker = spark.sparkContext.statusTracker()
    stages: set[int] = set()
    for job in tracker.getJobIdsForGroup(run_id):
        info = tracker.getJobInfo(job)
        if info is not None:
            stages.update(info.stageIds)
    return stages


def _tasks_running(spark, stages: set[int]) -> list[str]:
    """Threads running (inside ``Task.run`` of) a task of one of ``stages`` now; a
    task's thread is named after it ("... task 0.0 in stage 12.0 (TID 34)") while it
    runs, and renamed once it has ended."""
    running = []
    for thread in spark._jvm.java.lang.Thread.getAllStackTraces().keySet().toArray():
        name = str(thread.getName())
        if name.startswith(_TASK_THREAD) and any(f" in stage {s}." in name for s in stages) \
                and any(f"{f.getClassName()}.{f.getMethodName()}" == _TASK_RUN
                        for f in thread.getStackTrace()):
            running.append(name)
    return running


def test_no_task_of_a_run_stopped_mid_batch_outlives_the_stop(spark, tmp_path, monkeypatch):
    """Queries with state are interrupted (SIGINT, from the sink) while their batch
    runs, so the driver stops them mid-batch, wherever the batch's job has got to. The
    moment ``stop_query`` returns, no task of the run is still running (checked against
    the JVM's task threads, not against what Spark reports); once the driver has
    closed, its checkpoint is gone."""
    from pyspark_streamtest._spark.query import sink
    from pyspark_streamtest.driver.queries import _runner

    collect = sink.CollectingSink.apply
    stop_query = _runner.stop_query

    def interrupting(self, jds, batch_id):
        signal.pthread_kill(threading.main_thread().ident, signal.SIGINT)
        return collect(self, jds, batch_id)

    outlived: list[list[str]] = []

    def observed_stop(jquery, *args, **kwargs):
        stop_query(jquery, *args, **kwargs)
        stages = _stages_of(spark, str(jquery.runId().toString()))
        outlived.append(_tasks_running(spark, stages))

    monkeypatch.setattr(_runner, "stop_query", observed_stop)
    for _ in range(ROUNDS):
        driver = TopologyTestDriver(counts_per_user, spark=spark, checkpoint_root=tmp_path,
                                    sql_conf=_STATE_PARTITIONS)
        clicks = driver.create_input_topic("clicks")
        clicks.pipe_input({"user": "a", "url": "/"}, timestamp=at(1))
        driver.process_all_available()  # batch 0: batch 1 then updates stored state
        for user in "abcdefgh":
            clicks.pipe_input({"user": user, "url": "/"}, timestamp=at(2))
        with monkeypatch.context() as patch:
            patch.setattr(sink.CollectingSink, "apply", interrupting)
            with pytest.raises(KeyboardInterrupt):
                driver.process_all_available()
        assert driver.closed
    assert len(outlived) == ROUNDS
    assert [names for names in outlived if names] == []
    assert list(tmp_path.iterdir()) == []
