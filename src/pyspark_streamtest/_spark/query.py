"""Starting and stopping one streaming query with our clock, trigger and sink."""

from __future__ import annotations

import json
import threading
import time
from typing import Any

from pyspark.java_gateway import ensure_callback_server_started
from pyspark.sql import DataFrame

from ..errors import hide_our_frames
from .callbacks import CallbackConnections
from .clock import ManualClock
from .jvm import JavaObject, Jvm, java_error_text
from .versions import capabilities

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
    clock: ManualClock,
    sink: JavaObject,
) -> JavaObject:
    """Start ``df`` as a micro-batch query; returns the JVM StreamingQuery (wrapper).

    ``StreamingQueryManager.startQuery`` is the only entry point that takes a trigger
    clock; its parameter list gained ``userSpecifiedSinkName`` in 4.2.
    """
    ensure_callback_server_started(jvm.gateway)  # type: ignore[no-untyped-call]
    streaming = jvm.jvm.org.apache.spark.sql.streaming
    mode = getattr(streaming.OutputMode, _OUTPUT_MODES[output_mode])()
    trigger = streaming.Trigger.ProcessingTime(int(trigger_interval_ms))
    tail = [
        df._jdf,
        jvm.scala_map(),
        sink,
        mode,
        False,  # useTempCheckpointLocation
        True,  # recoverFromCheckpointLocation
        trigger,
        clock,
        jvm.none(),  # catalogAndIdent
        jvm.none(),  # catalogTable
    ]
    head = [jvm.some(name)]
    if capabilities(jvm).start_query_has_sink_name:
        head.append(jvm.none())
    head.append(jvm.some(checkpoint))
    return jvm.jspark.streams().startQuery(*head, *tail)


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


def stop_query(
    jquery: JavaObject,
    clock: ManualClock,
    callbacks: CallbackConnections | None = None,
    timeout_s: float = 60.0,
) -> None:
    """Stop a query whose stream thread may be blocked in our Python clock.

    ``StreamingQuery.stop()`` sets the query TERMINATED, then interrupts and joins the
    stream thread; an interrupt cannot reach a thread blocked in a Py4J callback, so
    stop() would wait for the clock forever. We call stop() on a helper thread, wait
    until the query reports inactive (it then runs no further batch), release the
    clock so the callback returns, and join. Once stop() has returned the stream thread
    has ended, and the callback connections it used are closed.
    """
    errors: list[BaseException] = []

    def _stop() -> None:
        try:
            jquery.stop()
        except BaseException as error:  # surfaced below
            errors.append(error)

    run_id = str(jquery.runId().toString())
    stopper = threading.Thread(target=_stop, name="pyspark-streamtest-stop", daemon=True)
    stopper.start()
    deadline = time.monotonic() + timeout_s
    finished = threading.Event()
    # No notification exists for "state is TERMINATED": check it at a short interval.
    while jquery.isActive() and time.monotonic() < deadline:
        finished.wait(0.002)
    clock.close()
    stopper.join(max(0.0, deadline - time.monotonic()))
    if stopper.is_alive():
        raise TimeoutError(f"StreamingQuery.stop() did not return within {timeout_s:.0f} s")
    if callbacks is not None:
        callbacks.close()
    _await_tasks_of(jquery, run_id, deadline)
    if errors:
        raise RuntimeError(f"stopping the query failed: {java_error_text(errors[0])}")


_RECENT_JOBS = 3
"""How many of a query's newest jobs can still have tasks running when it stops."""


def _await_tasks_of(jquery: JavaObject, run_id: str, deadline: float) -> None:
    """Wait (until ``deadline``) for the tasks of the stopped query's jobs to end.

    Stopping a query cancels its jobs, but Spark kills their running tasks
    asynchronously, and a task may still write state files into the checkpoint; the
    checkpoint is deleted only after this. Each query's jobs are in the job group of its
    run id; only its newest jobs can be running. Usually nothing runs and this is one
    call into the JVM.
    """
    tracker = jquery.sparkSession().sparkContext().statusTracker()
    jobs = sorted(tracker.getJobIdsForGroup(run_id))[-_RECENT_JOBS:]
    stages = []
    for job in jobs:
        info = tracker.getJobInfo(job)
        if info.isDefined():
            stages.extend(info.get().stageIds())
    waited = threading.Event()
    for stage in stages:
        while time.monotonic() < deadline:
            info = tracker.getStageInfo(stage)
            if not info.isDefined() or info.get().numActiveTasks() == 0:
                break
            waited.wait(0.005)  # liveness check of Spark's task threads, bounded
