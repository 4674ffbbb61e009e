"""``python -m benchmarks --only scale``: how the cost grows with records and state keys.

* records: the benchmark's ``windowed`` topology (10-second windows, 5-second watermark,
  a count per key and window) fed 10k, 100k and ``--scale-records`` records of 1000 keys
  by a fresh driver each run: the records piped with ``pipe_value_list`` in
  :data:`STEPS` steps, each step's event times 60 seconds on (so each step closes the
  windows of the one before), ``process_all_available()`` after each, then the
  watermark moved a day on to close every window. The counts read back must add up to
  the records piped, or the run raises: a figure of a run that lost rows means nothing.
  Median of :data:`REPEAT` runs; each size's ratio is to the size before it;
* state keys: the rows of ``measure_state`` (1k, 100k and ``--max-keys`` keys in state,
  Spark's default store and RocksDB), with the memory at the largest size attached;
* memory: this process's RSS, the driver JVM's RSS and heap after a GC (and, on a
  cluster, the RSS of this application's executors), after the largest records run
  (the drivers closed) and with ``--max-keys`` keys in state (the driver open); with
  the peak RSS (``VmHWM``) of both processes so far.

``--master`` runs it all on a cluster's master URL (``pyspark-streamtest cluster
start``) in place of ``local[2]``.
"""

from __future__ import annotations

import argparse
import gc
import os
import statistics
import time
from collections.abc import Callable
from datetime import timedelta
from typing import Any

from pyspark.sql import SparkSession

from pyspark_streamtest import TopologyTestDriver

from ._memory import jvm_heap_mb, jvm_pid, rss_mb
from ._pipelines import T0, windowed
from ._state import measure_state
from ._timing import Clock, timed

__all__ = ["KEYS", "REPEAT", "STEPS", "add_scale_arguments", "measure_scale", "memory"]

STEPS = 5
"""Steps a run's records are piped in (a micro-batch each, and one to close windows)."""
KEYS = 1000
REPEAT = 3


def add_scale_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--scale-records", type=int, default=1_000_000,
                        help="most records of --only scale's windowed runs (10k, 100k and "
                        "this)")
    parser.add_argument("--master", default="local[2]",
                        help="the Spark master: local[N], or a cluster's spark://host:port "
                        "(pyspark-streamtest cluster start)")


def measure_scale(spark: SparkSession, args: Any, record: Callable[..., None]) -> None:
    """The records rows, then ``measure_state``'s with memory."""
    print(f"scale on {args.master}:")
    sizes = sorted({min(10_000, args.scale_records), min(100_000, args.scale_records),
                    args.scale_records})
    before: tuple[int, float] | None = None
    for size in sizes:
        seconds, phases = _records_run(spark, size, warmup=int(size != sizes[-1]))
        extra = memory(spark, f"after the {size}-record runs") if size == sizes[-1] \
            else {}
        base_size, base = before or (size, seconds)
        record(f"windowed aggregation of {size} records in {STEPS} steps", seconds, base,
               f"{base_size}-record run", master=args.master, records=size,
               per_100k_s=round(seconds / size * 100_000, 2), **phases, **extra)
        before = (size, seconds)

    pending: dict[str, Any] = {}

    def with_memory(*row: Any, **extra: Any) -> None:
        record(*row, master=args.master, **pending, **extra)
        pending.clear()

    measure_state(spark, args, with_memory, probe=lambda: pending.update(
        memory(spark, f"with {args.max_keys} keys in state")))


def _records_run(spark: SparkSession, size: int, warmup: int) -> tuple[float, dict[str, float]]:
    """Median seconds of a run of ``size`` records, and the medians of its parts."""
    clock = Clock(step_s=60)
    chunks = [clock.rows(size // STEPS + (step < size % STEPS), keys=KEYS)
              for step in range(STEPS)]
    end = T0 + timedelta(days=1)
    parts: list[tuple[float, float, float]] = []

    def run() -> None:
        piping = processing = 0.0
        with TopologyTestDriver(windowed, spark=spark) as driver:
            topic, out = driver.create_input_topic("events"), driver.create_output_topic("out")
            for chunk in chunks:
                started = time.perf_counter()
                topic.pipe_value_list(chunk)
                piped = time.perf_counter()
                driver.process_all_available()
                piping, processing = (piping + piped - started,
                                      processing + time.perf_counter() - piped)
            started = time.perf_counter()
            driver.advance_watermark_to(end)
            closing = time.perf_counter() - started
            counted = sum(value["count"] for value in out.read_values_to_list())
        if counted != size:
            raise RuntimeError(f"the windowed run of {size} records counted {counted}")
        parts.append((piping, processing, closing))

    seconds = timed(run, REPEAT, warmup=warmup)
    kept = parts[-REPEAT:]
    return seconds, {name: round(statistics.median(p[i] for p in kept), 2)
                     for i, name in enumerate(("pipe_s", "batches_s", "close_windows_s"))}


def memory(spark: SparkSession, when: str) -> dict[str, float]:
    """Memory now, in MB (printed with ``when``): RSS of this process and of the driver
    JVM, their peaks so far, the JVM's heap after a GC and, on a cluster, the RSS of
    this application's executors."""
    gc.collect()
    jvm = jvm_pid(spark)
    sample = {"python_rss_mb": rss_mb(), "python_peak_rss_mb": _peak_mb("self"),
              "jvm_rss_mb": rss_mb(jvm), "jvm_peak_rss_mb": _peak_mb(jvm),
              "jvm_heap_mb": jvm_heap_mb(spark)}
    executors = _executor_pids(spark.sparkContext.applicationId)
    if executors:
        sample["executors_rss_mb"] = sum(rss_mb(pid) for pid in executors)
    sample = {key: round(value, 1) for key, value in sample.items()}
    print(f"  memory {when}: Python RSS {sample['python_rss_mb']:.0f} MB (peak "
          f"{sample['python_peak_rss_mb']:.0f}), JVM RSS {sample['jvm_rss_mb']:.0f} MB (peak "
          f"{sample['jvm_peak_rss_mb']:.0f}), JVM heap after GC {sample['jvm_heap_mb']:.0f} MB"
          + (f", {len(executors)} executors' RSS {sample['executors_rss_mb']:.0f} MB"
             if executors else ""), flush=True)
    return sample


def _peak_mb(pid: int | str) -> float:
    """A process's peak resident set size so far (``VmHWM``) in MB."""
    with open(f"/proc/{pid}/status") as status:
        fields = dict(line.split(":", 1) for line in status if ":" in line)
    return int(fields["VmHWM"].split()[0]) / 1024


def _executor_pids(app_id: str) -> list[int]:
    """The executor processes of application ``app_id`` on this machine (none in local
    mode, where the driver JVM runs the tasks)."""
    found = []
    for entry in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as cmdline:
                words = cmdline.read().split(b"\0")
        except OSError:  # gone, or not ours to read
            continue
        if b"org.apache.spark.executor.CoarseGrainedExecutorBackend" in words \
                and app_id.encode() in words:
            found.append(int(entry))
    return found
