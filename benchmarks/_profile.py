"""``python -m benchmarks --profile NAME``: where one driver step's time goes.

A step (pipe the rows, ``process_all_available``) is measured ``steps`` times on a warm
driver, with light instruments that count and time:

* the wait for the triggers (the driver's ``batches`` cost): everything Spark's stream
  thread does for the step's micro-batches, split into
  - Spark jobs: the jobs' own run time, from Spark's status store (submission to
    completion of every job the steps ran);
  - the sink callback (Python, on Py4J's callback thread): collecting each batch's rows,
    which runs the batch's job, so its time minus the jobs' is Py4J transfer and row
    decoding (serialisation);
  - the rest: Spark's micro-batch work around the jobs (planning, offset and commit
    logs, state store set-up and commit, progress), and the test thread's Py4J calls
    that wait on the query's clock (the clock is a JVM object: Spark's stream thread
    reads it without calling into Python);
* Py4J round trips of the test's thread (piping, handing rows to the sources, reading
  progress and watermarks): count and time;
* our bookkeeping: the test thread's remaining Python time.

The instruments add a little time of their own (a ``perf_counter`` pair per Py4J call).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from py4j.java_gateway import GatewayClient
from pyspark.sql import SparkSession

from pyspark_streamtest._spark.query.clock import ManualClock
from pyspark_streamtest._spark.query.sink import CollectingSink
from pyspark_streamtest.core.costs import spent


class _Tally:
    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.seconds: dict[str, float] = {}
        self.calls: dict[str, int] = {}

    def add(self, key: str, seconds: float) -> None:
        with self.lock:
            self.seconds[key] = self.seconds.get(key, 0.0) + seconds
            self.calls[key] = self.calls.get(key, 0) + 1


@contextmanager
def _instruments(tally: _Tally) -> Iterator[None]:
    """Time Py4J calls by thread (the test's thread apart) and our Python callbacks."""
    main = threading.main_thread()
    send, apply = GatewayClient.send_command, CollectingSink.apply
    await_idle = ManualClock.await_idle
    waiting = threading.local()

    def timed_send(self: Any, *args: Any, **kwargs: Any) -> Any:
        started = time.perf_counter()
        try:
            return send(self, *args, **kwargs)
        finally:
            where = ("py4j callback" if threading.current_thread() is not main
                     else "py4j wait" if getattr(waiting, "on", False) else "py4j main")
            if where == "py4j callback" and "\ncollectToPython\n" in str(args[0]):
                where = "collect"
            tally.add(where, time.perf_counter() - started)

    def timed_apply(self: Any, jds: Any, batch_id: Any) -> None:
        started = time.perf_counter()
        try:
            apply(self, jds, batch_id)
        finally:
            tally.add("sink", time.perf_counter() - started)

    def timed_await(self: Any, *args: Any, **kwargs: Any) -> None:
        waiting.on = True
        try:
            await_idle(self, *args, **kwargs)
        finally:
            waiting.on = False

    patches: list[tuple[type, str, Any]] = [
        (GatewayClient, "send_command", timed_send), (CollectingSink, "apply", timed_apply),
        (ManualClock, "await_idle", timed_await),
    ]
    originals = [(owner, name, owner.__dict__[name]) for owner, name, _ in patches]
    for owner, name, replacement in patches:
        setattr(owner, name, replacement)
    try:
        yield
    finally:
        for owner, name, original in originals:
            setattr(owner, name, original)


def _job_seconds(spark: SparkSession, since_ms: int) -> tuple[int, float]:
    """(count, summed run time) of the jobs submitted since ``since_ms`` (epoch ms)."""
    jobs = spark.sparkContext._jsc.sc().statusStore().jobsList(None)
    count, total_ms = 0, 0
    for index in range(jobs.size()):
        job = jobs.apply(index)
        submitted, completed = job.submissionTime(), job.completionTime()
        if submitted.isDefined() and completed.isDefined():
            start = submitted.get().getTime()
            if start >= since_ms:
                count += 1
                total_ms += completed.get().getTime() - start
    return count, total_ms / 1000


def profile_step(spark: SparkSession, step: Callable[[], None], steps: int) -> list[str]:
    """Run ``step`` ``steps`` times under the instruments; the report's lines."""
    tally = _Tally()
    # The status store records jobs when the listener bus delivers their events.
    bus = spark.sparkContext._jsc.sc().listenerBus()
    bus.waitUntilEmpty(60_000)
    since_ms = int(time.time() * 1000)
    before = spent()
    with _instruments(tally):
        started = time.perf_counter()
        for _ in range(steps):
            step()
        wall = time.perf_counter() - started
    bus.waitUntilEmpty(60_000)
    after = spent()
    jobs, job_s = _job_seconds(spark, since_ms)
    batch_count = int(after["batch count"] - before["batch count"])
    waiting = after["batches"] - before["batches"]
    sink = tally.seconds.get("sink", 0.0)
    main_py4j = tally.seconds.get("py4j main", 0.0)
    outside = wall - waiting

    def line(name: str, seconds: float, note: str = "") -> str:
        return (f"  {name:<50} {seconds / steps * 1000:>8.1f} ms {seconds / wall:>6.0%}"
                + (f"  {note}" if note else ""))

    collect = tally.seconds.get("collect", 0.0)
    return [
        f"{steps} steps, {batch_count / steps:.1f} micro-batches and {jobs / steps:.1f} Spark "
        f"jobs per step; per step:",
        line("whole step", wall),
        line("waiting for the triggers", waiting,
             f"{tally.calls.get('py4j wait', 0) / steps:.0f} Py4J calls waiting on the clock"),
        line("  sink: collecting the batch's rows", collect,
             "Spark plans and runs the batch's job, sends the rows"),
        line("    of which the Spark jobs' run time", job_s),
        line("  sink: its other Py4J calls, decoding the rows", max(0.0, sink - collect),
             f"{tally.calls.get('sink', 0) / steps:.1f} callbacks"),
        line("  Spark's trigger around the sink", max(0.0, waiting - sink),
             "offsets, logs, state commit, progress, the sink's callback round trip"),

        line("outside the wait", outside),
        line("  Py4J round trips of the test's thread", main_py4j,
             f"{tally.calls.get('py4j main', 0) / steps:.0f} calls"),
        line("  our Python (bookkeeping, records, history)", max(0.0, outside - main_py4j)),
    ]
