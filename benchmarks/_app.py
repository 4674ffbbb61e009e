"""The benchmark of a realistic job: ``examples/payments_pipeline.py``.

Two measures of the topology most teams write (Kafka JSON in, parsed in the job, dead
letters to a second output, a dedup, a stream-static join and windowed totals):

* :func:`driver_and_steps` against :func:`bare_jobs`: a new driver, three steps and
  close, against the same plans run as batch queries on the same rows, step by step;
* :func:`suite_seconds`: a 20-test pytest suite of the same topology, run serially and
  with ``-n 2``, each in its own process (the session start is part of what a user pays).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from datetime import datetime, timedelta, timezone
from typing import Any

from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from pyspark_streamtest import TopologyTestDriver

__all__ = ["SUITE_TESTS", "T0", "bare_jobs", "driver_and_steps", "measure_app", "run_steps",
           "step_payments", "suite_seconds"]

T0 = datetime(2024, 1, 1, tzinfo=timezone.utc)
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SUITE_TESTS = 20
STEPS = 3


def step_payments(step: int, count: int = 10) -> list[tuple[str, dict[str, Any] | bytes]]:
    """The records of one step: ``count`` payments of 3 merchants in 3 currencies, event
    times 6 minutes further on each step (so each step closes the windows of the one
    before), one payment sent twice and one value that does not parse."""
    records: list[tuple[str, dict[str, Any] | bytes]] = []
    for i in range(count):
        merchant = f"m{i % 3}"
        records.append((merchant, {
            "payment_id": f"p{step}-{i}", "merchant": merchant, "amount": f"{i + 1}.50",
            "currency": ("EUR", "USD", "GBP")[i % 3],
            "paid_at": (T0 + timedelta(minutes=6 * step, seconds=20 * i)).isoformat()}))
    records.append(records[0])
    records.append(("m9", b"{not json"))
    return records


def _kafka_rows(records: list[tuple[str, dict[str, Any] | bytes]]) -> list[tuple[bytes, bytes]]:
    return [(key.encode(), value if isinstance(value, bytes) else json.dumps(value).encode())
            for key, value in records]


def run_steps(driver: TopologyTestDriver, count: int = 10) -> tuple[Any, Any]:
    """On a driver of the payments topology: open its topics as the example's tests do,
    run three steps of :func:`step_payments` (pipe, ``process_all_available``), and
    return the output topics ``merchant-totals`` and ``payments-dead-letters``."""
    payments = driver.create_input_topic("payments", key_serializer="string",
                                         value_serializer="json")
    raw = driver.create_input_topic("payments", key_serializer="string",
                                    value_serializer="bytes")
    totals = driver.create_output_topic("merchant-totals", key_deserializer="string",
                                        value_deserializer="json")
    dead = driver.create_output_topic("payments-dead-letters", key_deserializer="string",
                                      value_deserializer="bytes")
    for step in range(STEPS):
        for key, value in step_payments(step, count):
            (raw if isinstance(value, bytes) else payments).pipe_input(key, value)
        driver.process_all_available()
    return totals, dead


def driver_and_steps(spark: SparkSession) -> None:
    """A new driver of the payments topology, :func:`run_steps`, both outputs read, close."""
    from examples.payments_pipeline import topology

    with TopologyTestDriver(topology, spark=spark, start_time=T0) as driver:
        totals, dead = run_steps(driver)
        totals.read_key_values_to_list()
        dead.read_key_values_to_list()


def bare_jobs(spark: SparkSession) -> None:
    """What Spark does bare for the same three steps: each step's rows as a DataFrame of
    the Kafka source's key and value, and both outputs' plans collected as batch queries
    (the rates table built once, as the topology does). The totals' plan is the example's
    with ``dropDuplicates``, which batch queries run in place of
    ``dropDuplicatesWithinWatermark`` (Spark refuses that on batch DataFrames)."""
    from examples.payments_pipeline import dead_letters, parsed, rates

    table = rates(spark)
    for step in range(STEPS):
        rows = spark.createDataFrame(_kafka_rows(step_payments(step)),
                                     "key BINARY, value BINARY")
        good = parsed(rows).where(F.col("p.paid_at").isNotNull()).select("p.*")
        in_eur = good.dropDuplicates(["payment_id"]).join(F.broadcast(table), "currency")
        in_eur.withColumn("eur", F.col("amount").cast("double") * F.col("to_eur")).groupBy(
            F.window("paid_at", "10 minutes"), "merchant").agg(
            F.round(F.sum("eur"), 2).alias("eur"), F.count("*").alias("payments")).collect()
        dead_letters(rows).collect()


_SUITE = '''
"""{tests} tests of the payments pipeline, each a new driver and three steps."""
import pytest

from benchmarks._app import STEPS, T0, run_steps
from examples.payments_pipeline import topology


@pytest.mark.parametrize("case", range({tests}))
def test_payments(topology_driver, case):
    totals, dead = run_steps(topology_driver(topology, start_time=T0), count=4 + case % 7)
    assert dead.read_key_values_to_list() == [("m9", b"{{not json")] * STEPS
    totals.read_key_values_to_list()
'''


def pytest_seconds(folder: str, target: str, *options: str,
                   env: dict[str, str] | None = None) -> tuple[float, str]:
    """Wall seconds of one fresh ``pytest`` process running ``target`` in ``folder``
    (this repository importable, ``env`` added to the environment), and its output.
    Raises if a test fails: a figure of a failing run means nothing."""
    command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
               "--rootdir", folder, target, *options]
    full_env = {**os.environ, **(env or {}), "PYTHONPATH": os.pathsep.join(
        filter(None, [ROOT, os.environ.get("PYTHONPATH")]))}
    started = time.perf_counter()
    ran = subprocess.run(command, cwd=folder, env=full_env, capture_output=True, text=True,
                         timeout=900, check=False)
    elapsed = time.perf_counter() - started
    if ran.returncode != 0:
        raise RuntimeError(f"the run failed ({' '.join(command)}):\n{ran.stdout[-3000:]}")
    return elapsed, ran.stdout


def suite_seconds(workers: int, tests: int = SUITE_TESTS) -> float:
    """Wall-clock seconds of a fresh ``pytest`` process running a suite of ``tests``
    tests (the payments topology, a new driver and three steps each), with
    ``-n workers`` (serially for 0)."""
    with tempfile.TemporaryDirectory(prefix="bench-suite-") as folder:
        path = os.path.join(folder, "test_payments_suite.py")
        with open(path, "w") as out:
            out.write(_SUITE.format(tests=tests))
        # A JVM of its own (cold), as a run without warm JVMs: benchmarks/inner_loop.py
        # measures the same suite with warm ones.
        elapsed, _ = pytest_seconds(folder, path, *(["-n", str(workers)] if workers else []),
                                    env={"STREAMTEST_WARM_JVM": "off"})
    return elapsed


def measure_app(spark: SparkSession, steps: int, timed: Callable[..., float],
                record: Callable[..., None], *, suite_tests: int = SUITE_TESTS) -> None:
    """The payments job's rows: a new driver and its steps against the same jobs run
    bare, and a suite of ``suite_tests`` tests run with ``-n 2`` against serially (none
    for 0)."""
    repeat, warmup = max(1, steps // 4), 2 if steps >= 10 else 1  # a run is seconds long
    bare = timed(lambda: bare_jobs(spark), repeat, warmup=warmup)
    print(f"floor: the payments job's plans run bare, {STEPS} steps = {bare * 1000:.1f} ms")
    record(f"payments job: new driver + {STEPS} steps + close", timed(
        lambda: driver_and_steps(spark), repeat, warmup=warmup), bare, "the same jobs run bare")
    if not suite_tests:
        return
    serial = suite_seconds(0, suite_tests)
    parallel = suite_seconds(2, suite_tests)
    record(f"payments job: {suite_tests}-test pytest suite, -n 2", parallel, serial,
           "the suite run serially", serial_seconds=round(serial, 1),
           parallel_seconds=round(parallel, 1))
