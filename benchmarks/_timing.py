"""How every figure is timed: medians over repeated steps after a warm-up, driver steps
and the same steps run by Spark alone, in turn, and the JIT warm-up before the run."""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import datetime, timedelta
from typing import Any

from pyspark.sql import SparkSession

from pyspark_streamtest import TopologyTestDriver

from ._bare import BareQuery
from ._pipelines import BARE, T0, stateless, windowed


def timed_pair(first: Callable[[], object], second: Callable[[], object], repeat: int,
               warmup: int = 3) -> tuple[float, float]:
    """Median seconds of ``first`` and of ``second``, run in turn ``repeat`` times after
    ``warmup`` turns: a ratio of the two is not skewed by the machine's speed drifting
    between one series and the next."""
    for _ in range(warmup):
        first()
        second()
    samples: tuple[list[float], list[float]] = ([], [])
    for _ in range(repeat):
        for action, times in zip((first, second), samples, strict=True):
            start = time.perf_counter()
            action()
            times.append(time.perf_counter() - start)
    return statistics.median(samples[0]), statistics.median(samples[1])


def timed(action: Callable[[], object], repeat: int, warmup: int = 3) -> float:
    """Median seconds of ``action`` over ``repeat`` runs after ``warmup`` runs."""
    for _ in range(warmup):
        action()
    samples = []
    for _ in range(repeat):
        start = time.perf_counter()
        action()
        samples.append(time.perf_counter() - start)
    return statistics.median(samples)


class Clock:
    """Event times that move forward by ``step_s`` per batch of rows."""

    def __init__(self, step_s: int = 3) -> None:
        self.second = 0
        self.step_s = step_s

    def rows(self, count: int, keys: int = 7) -> list[tuple[str, int, datetime]]:
        base = self.second
        self.second += self.step_s
        return [(f"k{i % keys}", i, T0 + timedelta(seconds=base + i % 3)) for i in range(count)]


def driver_step(driver: TopologyTestDriver, clock: Clock, inputs: tuple[str, ...] = ("events",),
                rows: int = 10) -> Callable[[], None]:
    topics = {name: driver.create_input_topic(name) for name in inputs}

    def step() -> None:
        for name, batch in step_rows(clock, inputs, rows).items():
            topics[name].pipe_value_list(batch)
        driver.process_all_available()

    return step


def step_rows(clock: Clock, inputs: tuple[str, ...], rows: int = 10) -> dict[str, list[Any]]:
    """One step's rows per input (the join's right side gets keys and times only)."""
    out: dict[str, list[Any]] = {}
    for name in inputs:
        batch = clock.rows(rows)
        out[name] = [(k, ts) for k, _, ts in batch] if name == "right" else list(batch)
    return out


def spark_alone(spark: SparkSession, name: str, steps: int) -> float:
    """Median seconds of the step ``name`` run by Spark alone (benchmarks/_bare.py)."""
    with bare_step(spark, name) as step:
        return timed(step, steps)


@contextmanager
def bare_step(spark: SparkSession, name: str) -> Iterator[Callable[[], None]]:
    """The step ``name`` run by Spark alone (benchmarks/_bare.py), on a query kept open."""
    schemas, plan, batches, mode = BARE[name]
    query = BareQuery(spark, schemas, plan, batches=batches, output_mode=mode)
    clock = Clock()
    try:
        yield lambda: query.step(query.lines(step_rows(clock, tuple(schemas))))
    finally:
        query.close()


def warm_up(spark: SparkSession, seconds: float) -> None:
    """Run floor jobs and driver steps for ``seconds`` so the JIT has compiled the paths
    every figure uses (over a long run a stateless step gets about 2x faster)."""
    deadline = time.perf_counter() + seconds
    spark.range(1).count()
    with TopologyTestDriver(stateless, spark=spark) as plain, \
            TopologyTestDriver(windowed, spark=spark) as windows:
        plain_step, window_step = driver_step(plain, Clock()), driver_step(windows, Clock())
        while time.perf_counter() < deadline:
            spark.range(1).count()
            plain_step()
            window_step()
