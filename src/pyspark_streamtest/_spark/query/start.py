"""Starting and stopping one streaming query with our clock, trigger and sink."""

from __future__ import annotations

import contextlib
import json
import threading
import time
from typing import Any, NamedTuple
from weakref import WeakKeyDictionary

from py4j.java_gateway import get_method
from pyspark.java_gateway import ensure_callback_server_started
from pyspark.sql import DataFrame

from ...errors import hide_our_frames
from ..jvm import JavaObject, Jvm, java_error_text
from ..versions import capabilities
from .callbacks import CallbackConnections
from .clock import ManualClock

__tracebackhide__ = hide_our_frames

_OUTPUT_MODES = {"append": "Append", "update": "Update", "complete": "Complete"}


def start_query(
    jvm: Jvm,
    df: DataFrame,
    *,
    name: str,
    checkpoint: str,
    output_mode: str,
    trigger_interval_ms: int,
    clock: JavaObject,
    sink: JavaObject,
) -> JavaObject:
    """Start ``df`` as a micro-batch query; returns the JVM StreamingQuery (wrapper).

    ``StreamingQueryManager.startQuery`` is the only entry point that takes a trigger
    clock; its parameter list gained ``userSpecifiedSinkName`` in 4.2.
    """
    ensure_callback_server_started(jvm.gateway)  # type: ignore[no-untyped-call]
    classes = _start_classes(jvm)
    mode = getattr(classes.output_mode, _OUTPUT_MODES[output_mode])()
    trigger = classes.trigger.ProcessingTime(int(trigger_interval_ms))
    none = classes.option.empty()
    tail = [
        df._jdf,
        classes.empty_map,
        sink,
        mode,
        False,  # useTempCheckpointLocation
        True,  # recoverFromCheckpointLocation
        trigger,
        clock,
        none,  # catalogAndIdent
        none,  # catalogTable
    ]
    head = [classes.option.apply(name)]
    if capabilities(jvm).start_query_has_sink_name:
        head.append(none)
    head.append(classes.option.apply(checkpoint))
    return jvm.jspark.streams().startQuery(*head, *tail)


class _StartClasses(NamedTuple):
    output_mode: JavaObject
    trigger: JavaObject
    option: JavaObject
    empty_map: JavaObject  # an immutable Scala Map: one serves every start


_START_CLASSES: WeakKeyDictionary[object, _StartClasses] = WeakKeyDictionary()


def _start_classes(jvm: Jvm) -> _StartClasses:
    """What every query start looks up, once per JVM: a lookup by dotted name costs a
    Py4J round trip per package (about 30 for these)."""
    found = _START_CLASSES.get(jvm.gateway)
    if found is None:
        streaming = jvm.jvm.org.apache.spark.sql.streaming
        found = _START_CLASSES[jvm.gateway] = _StartClasses(
            streaming.OutputMode, streaming.Trigger, jvm.jvm.scala.Option, jvm.scala_map())
    return found


def stream_execution(jquery: JavaObject) -> JavaObject:
    """The StreamExecution behind the StreamingQueryWrapper startQuery returns."""
    return jquery.streamingQuery()


def last_progress(jquery: JavaObject) -> dict[str, Any] | None:
    progress = jquery.lastProgress()
    return None if progress is None else json.loads(progress.json())


def failure_text(jquery: JavaObject) -> str | None:
    """The query's failure (cause first), or None if it has not failed."""
    exc = jquery.exception()
    if exc is None or not exc.isDefined():
        return None
    error = exc.get()
    cause = error.cause() if hasattr(error, "cause") else None
    text = str(error.message()) if cause is None else str(cause.toString())
    return text.strip()


_UNWOKEN_CHECK_S = 0.05


def stop_query(
    jquery: JavaObject,
    clock: ManualClock,
    callbacks: CallbackConnections | None = None,
    timeout_s: float = 60.0,
) -> None:
    """Stop a query whose stream thread may be waiting on our clock.

    ``StreamingQuery.stop()`` sets the query TERMINATED, then interrupts and joins the
    stream thread. Our clock is told first that the query is stopping, so that interrupt
    ends the thread's wait (``clock.py``), and stop() returns as soon as the thread has
    ended, as it does with Spark's own clock. We call stop() on a helper thread, to bound
    it: should the thread get to the clock without the interrupt (a batch that swallowed
    it, ending after stop() marked the query inactive), :meth:`ManualClock.close`
    releases the wait once the query reports inactive. Once stop() has returned the
    stream thread has ended, and the callback connections it used (the sink's) are
    closed.
    """
    errors: list[BaseException] = []

    def _stop() -> None:
        try:
            jquery.stop()
        except BaseException as error:  # surfaced below
            errors.append(error)

    run_id = str(jquery.runId().toString())
    # A stream thread parked in our clock runs no batch, so no task of the run can be
    # running or be launched: only a query stopped mid-batch has tasks to wait for. A
    # thread released but not yet awake counts as mid-batch: it could start its trigger
    # before stop() marks the query inactive (``next_trigger_ms`` still shows its wait).
    mid_batch = not clock.stopping()
    stopper = threading.Thread(target=_stop, name="pyspark-streamtest-stop", daemon=True)
    stopper.start()
    deadline = time.monotonic() + timeout_s
    # stop() returns by itself; the check that the query is inactive, at each interval,
    # only covers a wait the interrupt did not end: once it is, the clock is released
    # for good and stop() given the rest of the time.
    while stopper.is_alive() and time.monotonic() < deadline:
        stopper.join(min(_UNWOKEN_CHECK_S, max(0.0, deadline - time.monotonic())))
        if stopper.is_alive() and not jquery.isActive():
            break
    clock.close()
    stopper.join(max(0.0, deadline - time.monotonic()))
    if stopper.is_alive():
        raise TimeoutError(f"StreamingQuery.stop() did not return within {timeout_s:.0f} s")
    if callbacks is not None:
        callbacks.close()
    if mid_batch:
        _await_tasks_of(jquery, run_id, deadline)
    if errors:
        raise RuntimeError(f"stopping the query failed: {java_error_text(errors[0])}")


_JOB_GROUP = "spark.jobGroup.id"  # SparkContext.SPARK_JOB_GROUP_ID, every version
_RECENT_JOBS = 3


def _await_tasks_of(jquery: JavaObject, run_id: str, deadline: float) -> None:
    """Wait (until ``deadline``) for every task of a query stopped mid-batch to end.

    Stopping a query cancels its jobs (the job group of its run id), but Spark kills
    their running tasks asynchronously, and a task may still write state files into the
    checkpoint, which is deleted only after this. A cancelled job reads as ended at once
    (the DAG scheduler posts its end when it sends the kills), while its killed tasks
    run on: a state store task killed mid-batch aborts its store in a task completion
    listener, and ``HDFSBackedStateStore.abort`` first *creates* the version's delta
    temporary file (its output stream is a lazy val) with Hadoop's ``.crc`` beside it,
    then deletes both. Run against the checkpoint's deletion, that left a lone
    ``..1.delta.<uuid>.TID<n>.tmp.crc`` behind (the data file gone, Hadoop's delete
    returns before the checksum file). Two facts make the wait exact:

    * once the status tracker, fed by the listener bus, shows none of the run's jobs
      running, the cancellation has been processed and no further task of the run is
      launched (the listener bus is drained first, so every job started is known);
    * ``TaskSchedulerImpl.taskIdToTaskSetManager`` holds each launched task from its
      launch until the scheduler has handled its final status, which the executor sends
      only after ``Task.run`` has returned, completion listeners included
      (``Executor.TaskRunner.run``), so no entry of the run's job group means no task
      of the run can write any more.
    """
    context = jquery.sparkSession().sparkContext()
    with contextlib.suppress(Exception):  # a TimeoutException: the waits below are bounded
        context.listenerBus().waitUntilEmpty(max(1, int((deadline - time.monotonic()) * 1000)))
    tracker = context.statusTracker()
    # Only the run's newest jobs can still be running; its older ones ended long before.
    jobs = sorted(tracker.getJobIdsForGroup(run_id))[-_RECENT_JOBS:]
    # The map's Java values(): Py4J's mapping view of a java.util.Map looks each key up
    # again with get(), and a task id comes back from Java as a Python int that goes
    # back as an Integer, which no Long key of this map equals: every task read as None.
    task_set_managers = get_method(context.taskScheduler().taskIdToTaskSetManager(), "values")
    waited = threading.Event()

    def running() -> bool:
        for job in jobs:
            info = tracker.getJobInfo(job)
            if info.isDefined() and str(info.get().status()) == "RUNNING":
                return True
        return any(  # one manager per running task; toArray() is a snapshot
            str(manager.taskSet().properties().getProperty(_JOB_GROUP)) == run_id
            for manager in task_set_managers().toArray()
        )

    while running() and time.monotonic() < deadline:
        waited.wait(0.005)  # liveness check of Spark's task threads, bounded


def processing_time_ms(jvm: Jvm, interval: str) -> int:
    """The interval of ``trigger(processingTime=interval)``, parsed by Spark's own
    ``Trigger.ProcessingTime`` (so every form Spark accepts is accepted); a ValueError
    with Spark's message for one it refuses."""
    try:
        trigger = jvm.jvm.org.apache.spark.sql.streaming.Trigger.ProcessingTime(interval)
    except Exception as error:
        raise ValueError(java_error_text(error).strip().splitlines()[0]) from None
    return int(trigger.intervalMs())
