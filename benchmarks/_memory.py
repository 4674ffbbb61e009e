"""``--only memory``: Python's and the JVM's memory over a long run of steps on one
driver; and the readings it takes (``benchmarks/_scale.py`` takes them too)."""

from __future__ import annotations

import gc
import resource
import time
from collections.abc import Callable
from typing import Any

from pyspark.sql import SparkSession

from pyspark_streamtest import TopologyTestDriver

from ._pipelines import stateless
from ._timing import Clock, driver_step


def rss_mb(pid: int | None = None) -> float:
    """Resident set size of a process (this one by default) in MB."""
    with open(f"/proc/{pid or 'self'}/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def jvm_pid(spark: SparkSession) -> int:
    """The JVM's process id (PySpark's launcher ``exec``s java, so it is the gateway's)."""
    return int(spark.sparkContext._jvm.ProcessHandle.current().pid())  # type: ignore[union-attr]


def jvm_heap_mb(spark: SparkSession) -> float:
    runtime = spark.sparkContext._jvm.java.lang.Runtime.getRuntime()  # type: ignore[union-attr]
    spark.sparkContext._jvm.java.lang.System.gc()  # type: ignore[union-attr]
    return (runtime.totalMemory() - runtime.freeMemory()) / 2**20


def measure_memory(spark: SparkSession, args: Any, floor: float,
                   record: Callable[..., None]) -> None:
    """Python RSS, the JVM process's RSS and JVM heap (after a GC) before, during (ten
    samples) and after ``--long-steps`` stateless steps on one driver."""
    samples: list[dict[str, float]] = []

    def sample(done: int) -> None:
        gc.collect()
        samples.append({"steps": done, "python_rss_mb": round(rss_mb(), 1),
                        "jvm_rss_mb": round(rss_mb(jvm_pid(spark)), 1),
                        "jvm_heap_mb": round(jvm_heap_mb(spark), 1)})

    with TopologyTestDriver(stateless, spark=spark) as driver:
        step = driver_step(driver, Clock())
        for _ in range(20):
            step()
        sample(0)
        every = max(1, args.long_steps // 10)
        started = time.perf_counter()
        for done in range(1, args.long_steps + 1):
            step()
            if done % every == 0 or done == args.long_steps:
                sample(done)
        elapsed = time.perf_counter() - started
    first, last = samples[0], samples[-1]
    growth = {key: round(last[key] - first[key], 1)
              for key in ("python_rss_mb", "jvm_rss_mb", "jvm_heap_mb")}
    record(f"{args.long_steps} stateless steps", elapsed / args.long_steps, floor,
           "trivial job", total_seconds=round(elapsed, 1),
           **{f"{key[:-3]}_growth_mb": value for key, value in growth.items()},
           samples=samples)
    print(f"  {args.long_steps} stateless steps in {elapsed:.0f} s: Python RSS "
          f"{growth['python_rss_mb']:+.1f} MB, JVM process RSS {growth['jvm_rss_mb']:+.1f} MB, "
          f"JVM heap after GC {growth['jvm_heap_mb']:+.1f} MB")
