"""Per-step cost of the driver as ratios to Spark's floor, measured in one run.

    python -m benchmarks [--steps N]

Floor: a trivial job on the same warm session (``spark.range(1).count()``). Every
figure is a median over repeated steps; ratios compare figures from this one run.
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable
from datetime import timedelta

from pyspark.sql import functions as F

from pyspark_streamtest import Topology, TopologyTestDriver, test_spark_session
from pyspark_streamtest._time import from_ms


def stateless(t: Topology) -> None:
    events = t.input("events", schema="k STRING, v INT")
    t.output("out", events.where(F.col("v") % 2 == 0).select("k", "v"))


def windowed(t: Topology) -> None:
    events = t.input("events", schema="k STRING, v INT, ts TIMESTAMP", timestamp_column="ts")
    t.output(
        "out",
        events.withWatermark("ts", "5 seconds").groupBy(F.window("ts", "10 seconds"), "k").count(),
    )


def median_ms(samples: list[float]) -> float:
    return statistics.median(samples) * 1000


def timed(action: Callable[[], object], repeat: int) -> list[float]:
    samples = []
    for _ in range(repeat):
        start = time.perf_counter()
        action()
        samples.append(time.perf_counter() - start)
    return samples


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--steps", type=int, default=30)
    steps = parser.parse_args().steps
    spark = test_spark_session()
    spark.range(1).count()
    floor = median_ms(timed(lambda: spark.range(1).count(), steps))

    rows: list[tuple[str, float]] = []
    with TopologyTestDriver(stateless, spark=spark) as driver:
        topic = driver.create_input_topic("events")
        counter = iter(range(10**9))

        def stateless_step() -> None:
            topic.pipe_value_list([(f"k{i % 7}", next(counter)) for i in range(10)])
            driver.advance_wall_clock(timedelta(seconds=1))

        timed(stateless_step, 5)  # warm-up: codegen, JIT
        rows.append(("stateless step (10 rows)", median_ms(timed(stateless_step, steps))))

    with TopologyTestDriver(windowed, spark=spark) as driver:
        topic = driver.create_input_topic("events")
        second = iter(range(0, 10**9, 3))

        def windowed_step() -> None:
            base = next(second)
            topic.pipe_value_list(
                [(f"k{i % 5}", i, from_ms(1_704_067_200_000 + (base + i % 3) * 1000))
                 for i in range(10)]
            )
            driver.process_all_available()  # the data batch and the no-data batch

        timed(windowed_step, 5)
        rows.append(("windowed step: data + no-data batch", median_ms(timed(windowed_step, steps))))

    def new_driver_first_step() -> None:
        with TopologyTestDriver(stateless, spark=spark) as driver:
            driver.create_input_topic("events").pipe_input(("a", 2))
            driver.process_all_available()

    timed(new_driver_first_step, 2)
    rows.append(("new driver + first step + close", median_ms(timed(new_driver_first_step, 8))))

    print(f"floor: spark.range(1).count() = {floor:.1f} ms (median of {steps})")
    print(f"{'measure':<40} {'median ms':>10} {'x floor':>8}")
    for name, value in rows:
        print(f"{name:<40} {value:>10.1f} {value / floor:>8.2f}")


if __name__ == "__main__":
    main()
