"""Steps over Spark Connect beside the same steps in classic mode, measured in one run.

``python -m benchmarks.connect_steps [--steps 20] [--warmup-steps 10] [--json FILE]``
(also ``python -m benchmarks --only connect``).

Connect mode is a whole process's, so each mode runs in a process of its own, one after
the other (never side by side), with the same test-tuned session settings, ``local[2]``:
the classic process with a classic session, the Connect process with the plugin's kind
of Connect session (a local server in its own JVM). Each figure is the median of
``--steps`` driver steps after ``--warmup-steps`` unmeasured ones (a cold JVM's first
batches are slower in both modes). A step pipes records and advances the wall clock by
the trigger interval, so it runs one micro-batch (and the no-data batch a watermark
asks for) exactly as a test does. What Connect adds is planning the topology through the
server (once per driver) and, per step, nothing on the driver's path: its queries run in
the JVM as in classic mode; a ``foreachBatch`` step adds a cached relation and the
function's own Connect round trips.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from datetime import datetime, timedelta, timezone
from typing import Any

T0 = datetime(2024, 1, 1, tzinfo=timezone.utc)
ROWS = ("stateless step", "windowed step", "foreachBatch step (count in the function)",
        "new driver + first windowed step")


def _measure(mode: str, steps: int, warmup: int) -> dict[str, float]:
    """Run in the child process of ``mode``: the median seconds of each row."""
    from pyspark.sql import functions as F

    from pyspark_streamtest import Topology, TopologyTestDriver
    from pyspark_streamtest._spark.runtime.session import build_test_session

    spark = build_test_session(master="local[2]", connect=mode == "connect")

    def stateless(t: Topology) -> None:
        clicks = t.input("clicks", schema="user STRING, ts TIMESTAMP", timestamp_column="ts")
        t.output("out", clicks.filter(F.col("user") != "bot").select(F.upper("user")))

    def windowed(t: Topology) -> None:
        clicks = t.input("clicks", schema="user STRING, ts TIMESTAMP", timestamp_column="ts")
        t.output("out", clicks.withWatermark("ts", "10 seconds")
                 .groupBy(F.window("ts", "10 seconds"), "user").count())

    counted: list[int] = []

    def batches(t: Topology) -> None:
        clicks = t.input("clicks", schema="user STRING, ts TIMESTAMP", timestamp_column="ts")
        t.foreach_batch("out", clicks, lambda df, _: counted.append(df.count()))

    def timed_steps(topology: Any) -> float:
        with TopologyTestDriver(topology, spark=spark, start_time=T0) as driver:
            topic = driver.create_input_topic("clicks")
            seconds: list[float] = []
            for step in range(warmup + steps):
                start = time.perf_counter()
                for n in range(10):
                    topic.pipe_input({"user": f"u{n % 3}"}, timestamp=T0 + timedelta(
                        seconds=step * 5 + n * 0.1))
                driver.advance_wall_clock(timedelta(seconds=1))
                if step >= warmup:
                    seconds.append(time.perf_counter() - start)
        return statistics.median(seconds)

    def new_driver() -> float:
        start = time.perf_counter()
        with TopologyTestDriver(windowed, spark=spark, start_time=T0) as driver:
            driver.create_input_topic("clicks").pipe_input({"user": "a"}, timestamp=T0)
            driver.advance_wall_clock(timedelta(seconds=1))
        return time.perf_counter() - start

    found = {ROWS[0]: timed_steps(stateless), ROWS[1]: timed_steps(windowed),
             ROWS[2]: timed_steps(batches)}
    for _ in range(max(1, warmup // 5)):
        new_driver()
    found[ROWS[3]] = statistics.median(new_driver() for _ in range(max(3, steps // 4)))
    spark.stop()
    return found


def measure(steps: int, warmup: int) -> list[dict[str, Any]]:
    """Each row's median in classic and Connect mode, and their ratio."""
    found: dict[str, dict[str, float]] = {}
    for mode in ("classic", "connect"):
        ran = subprocess.run(
            [sys.executable, "-m", "benchmarks.connect_steps", "--child", mode,
             "--steps", str(steps), "--warmup-steps", str(warmup)],
            capture_output=True, text=True, timeout=1800, check=False)
        lines = [line for line in ran.stdout.splitlines() if line.startswith("RESULT ")]
        if ran.returncode != 0 or not lines:
            raise RuntimeError(f"the {mode} run failed:\n{ran.stdout[-2000:]}{ran.stderr[-3000:]}")
        found[mode] = json.loads(lines[-1].removeprefix("RESULT "))
    return [{"measure": f"Connect: {row}", "ms": round(found["connect"][row] * 1000, 2),
             "classic_ms": round(found["classic"][row] * 1000, 2),
             "ratio": round(found["connect"][row] / found["classic"][row], 2),
             "of": "the same step in classic mode"} for row in ROWS]


def print_rows(rows: list[dict[str, Any]]) -> None:
    for row in rows:
        print(f"  {row['measure']:<58} {row['ms']:>8.1f} ms  classic {row['classic_ms']:>8.1f}"
              f" ms  {row['ratio']:>5.2f}x", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--warmup-steps", type=int, default=10)
    parser.add_argument("--json", help="write the rows to this file")
    parser.add_argument("--child", choices=("classic", "connect"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print("RESULT " + json.dumps(_measure(args.child, args.steps, args.warmup_steps)),
              flush=True)
        return
    rows = measure(args.steps, args.warmup_steps)
    print_rows(rows)
    if args.json:
        with open(args.json, "w") as out:
            json.dump(rows, out, indent=2)


if __name__ == "__main__":
    main()
