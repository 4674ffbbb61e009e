"""The driver's costs as ratios to Spark's floor, all measured in one process and run.

    python -m benchmarks [--steps N] [--long-steps N] [--max-keys N] [--bulk-rows N]
                         [--property-examples N]
                         [--only all|steps|app|state|memory|property|inner]
                         [--suite-tests N] [--inner-runs N] [--master URL] [--json FILE]
    python -m benchmarks --only scale [--scale-records N] [--max-keys N] [--master URL]
                         [--json FILE]
    python -m benchmarks --only connect [--steps N] [--json FILE]   (steps over Spark
                         Connect beside classic mode: benchmarks/connect_steps.py)
    python -m benchmarks --profile stateless|windowed|join|grouped-state [--steps N]
    python -m benchmarks --compare BASE.json [--against NEW.json] [--chart FILE.svg]
    python -m benchmarks --chart FILE.svg [--json FILE]

Floors, measured first on the same warm session:

* trivial job: ``spark.range(1).count()``, the cheapest thing Spark can do;
* createDataFrame: ``spark.createDataFrame(rows).count()`` of the rows the bulk pipe moves.

And beside each step row, the same micro-batches run by Spark alone (``...: Spark alone``
rows, ``benchmarks/_bare.py``): the same plan and sources with Spark's own JVM clock and
memory sink; the step row's ``spark_alone`` is the driver's step over it. The two are
measured in turn, a driver step then a Spark-alone step, so that their ratio does not
move with the machine's speed over the run.

Every figure is a median over repeated steps after a warm-up. "Public API" rows drive the
same pipeline the usual way: a JSON file source fed by writing files, a memory sink, and
``processAllAvailable()``. Results are printed as a table and written as JSON, followed
by one line per performance target: met or MISSED.

``--compare`` and ``--chart`` measure nothing and start no Spark session: they read the
results file (``--against``, else ``--json``) and print its comparison with BASE.json
(one line per measure: both values, the change, better or worse, the target) or write a
bar chart of its targeted rows as SVG.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import platform
import resource
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import datetime, timedelta, timezone
from typing import Any

import pandas as pd
import pyspark
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.streaming.state import GroupStateTimeout

from pyspark_streamtest import Topology, TopologyTestDriver, test_spark_session

from ._app import measure_app
from ._bare import BareQuery
from ._profile import profile_step
from ._report import chart, compare, load_results, verdicts_text
from ._scale import add_scale_arguments, measure_scale

T0 = datetime(2024, 1, 1, tzinfo=timezone.utc)
SCHEMA = "k STRING, v INT, ts TIMESTAMP"


# --- pipelines ----------------------------------------------------------------------------------
def stateless_plan(events: DataFrame) -> DataFrame:
    return events.where(F.col("v") % 2 == 0).select("k", "v")


def windowed_plan(events: DataFrame) -> DataFrame:
    return events.withWatermark("ts", "5 seconds").groupBy(F.window("ts", "10 seconds"),
                                                           "k").count()


def stateless(t: Topology) -> None:
    t.output("out", stateless_plan(t.input("events", schema=SCHEMA, timestamp_column="ts")))


def windowed(t: Topology) -> None:
    t.output("out", windowed_plan(t.input("events", schema=SCHEMA, timestamp_column="ts")))


RIGHT_SCHEMA = "rk STRING, rts TIMESTAMP"


def join_plan(left: DataFrame, right: DataFrame) -> DataFrame:
    return left.withWatermark("ts", "5 seconds").join(right.withWatermark("rts", "5 seconds"),
                                                      F.expr("rk = k AND rts >= ts AND rts <= "
                                                             "ts + interval 5 seconds"))


def joined(t: Topology) -> None:
    t.output("out", join_plan(t.input("left", schema=SCHEMA, timestamp_column="ts"),
                              t.input("right", schema=RIGHT_SCHEMA, timestamp_column="rts")))


def _running_count(key: tuple[Any, ...], frames: Iterator[Any], state: Any) -> Iterator[Any]:
    total = (state.get[0] if state.exists else 0) + sum(len(f) for f in frames)
    state.update((total,))
    yield pd.DataFrame({"k": [key[0]], "n": [total]})


def grouped_state_plan(events: DataFrame) -> DataFrame:
    return events.groupBy("k").applyInPandasWithState(
        _running_count, "k STRING, n LONG", "n LONG", "Update", GroupStateTimeout.NoTimeout)


def grouped_state(t: Topology) -> None:
    t.output("out", grouped_state_plan(t.input("events", schema=SCHEMA, timestamp_column="ts")),
             output_mode="update")


def key_counts(t: Topology) -> None:
    events = t.input("events", schema=SCHEMA, timestamp_column="ts")
    t.output("out", events.groupBy("k").count(), output_mode="update")


def total_plan(events: DataFrame) -> DataFrame:
    return events.groupBy().count()


def total_count(t: Topology) -> None:
    t.output("out", total_plan(t.input("events", schema=SCHEMA, timestamp_column="ts")),
             output_mode="complete")


PROFILED: dict[str, tuple[Callable[[Topology], None], tuple[str, ...]]] = {
    "stateless": (stateless, ("events",)),
    "windowed": (windowed, ("events",)),
    "join": (joined, ("left", "right")),
    "grouped-state": (grouped_state, ("events",)),
}

# The same steps' plans for Spark alone (benchmarks/_bare.py): inputs, plan, micro-batches
# per step (the data batch, and the no-data batch where the watermark moves), output mode.
BARE: dict[str, tuple[dict[str, str], Callable[..., DataFrame], int, str]] = {
    "stateless": ({"events": SCHEMA}, stateless_plan, 1, "append"),
    "windowed": ({"events": SCHEMA}, windowed_plan, 2, "append"),
    "join": ({"left": SCHEMA, "right": RIGHT_SCHEMA}, join_plan, 2, "append"),
    "grouped-state": ({"events": SCHEMA}, grouped_state_plan, 1, "update"),
}


# --- measuring ----------------------------------------------------------------------------------
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


class PublicApiPipeline:
    """The same pipeline the usual way: JSON files, memory sink, processAllAvailable()."""

    def __init__(self, spark: SparkSession, plan: Callable[[DataFrame], DataFrame],
                 mode: str) -> None:
        self.spark = spark
        self.folder = tempfile.mkdtemp(prefix="bench-files-")
        self.checkpoint = tempfile.mkdtemp(prefix="bench-ckpt-")
        source = spark.readStream.schema(SCHEMA).json(self.folder)
        self.name = f"bench_{os.getpid()}_{id(self)}"
        self.query = (plan(source).writeStream.format("memory").queryName(self.name)
                      .outputMode(mode).option("checkpointLocation", self.checkpoint).start())
        self.files = 0

    def step(self, rows: list[tuple[str, int, datetime]]) -> None:
        path = os.path.join(self.folder, f"part-{self.files:06d}.json")
        with open(path + ".tmp", "w") as out:
            for k, v, ts in rows:
                out.write(json.dumps({"k": k, "v": v, "ts": ts.isoformat()}) + "\n")
        os.rename(path + ".tmp", path)  # the file source must never see a partial file
        self.files += 1
        self.query.processAllAvailable()

    def close(self) -> None:
        self.query.stop()
        self.spark.sql(f"DROP VIEW IF EXISTS {self.name}")
        shutil.rmtree(self.folder, ignore_errors=True)
        shutil.rmtree(self.checkpoint, ignore_errors=True)


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


# --- the run ------------------------------------------------------------------------------------
def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--steps", type=int, default=20, help="measured steps per figure")
    parser.add_argument("--long-steps", type=int, default=1000,
                        help="steps of the memory-growth run (the target is stated for 10000)")
    parser.add_argument("--max-keys", type=int, default=1_000_000,
                        help="largest state size measured (1k, 100k and this)")
    parser.add_argument("--bulk-rows", type=int, default=100_000)
    parser.add_argument("--json", default="benchmarks/results.json")
    parser.add_argument("--property-examples", type=int, default=100,
                        help="examples of the property-test figure (the target is for 100)")
    parser.add_argument("--only", choices=("all", "steps", "app", "property", "memory", "state",
                                           "inner", "scale", "connect"),
                        default="all", help="only the floor and that part (scale and connect "
                        "are no part of all: see benchmarks/_scale.py and "
                        "benchmarks/connect_steps.py)")
    add_scale_arguments(parser)
    parser.add_argument("--warmup-seconds", type=float, default=60,
                        help="JIT warm-up before anything is measured (floor jobs, stateless "
                        "and windowed steps); a cold JVM makes early figures slower")
    parser.add_argument("--suite-tests", type=int, default=20,
                        help="tests of the payments suite run serially and with -n 2 (the "
                        "target is stated for 20; 0 skips the two pytest runs)")
    parser.add_argument("--inner-runs", type=int, default=5,
                        help="pytest runs of one test per inner-loop figure, cold and warm "
                        "JVM (benchmarks/inner_loop.py; its suite has --suite-tests tests)")
    parser.add_argument("--profile", choices=sorted(PROFILED),
                        help="measure only where one step of this pipeline spends its time")
    parser.add_argument("--compare", metavar="BASE.json",
                        help="measure nothing: compare the results file with this earlier run")
    parser.add_argument("--against", metavar="NEW.json",
                        help="the results file --compare and --chart read (default: --json)")
    parser.add_argument("--chart", metavar="FILE.svg",
                        help="measure nothing: write the results file's targets as SVG bars")
    args = parser.parse_args()
    if args.compare or args.chart:
        report(args)
        return
    if args.against:
        parser.error("--against needs --compare or --chart")
    steps = args.steps

    spark = test_spark_session(master=args.master)
    warm_up(spark, args.warmup_seconds)
    if args.profile:
        topology, inputs = PROFILED[args.profile]
        with TopologyTestDriver(topology, spark=spark) as driver:
            step = driver_step(driver, Clock(), inputs)
            for _ in range(3):
                step()
            print(f"profile of the {args.profile} step (--steps {steps}):")
            print("\n".join(profile_step(spark, step, steps)))
            whole = timed(step, steps, warmup=0)
        alone = spark_alone(spark, args.profile, steps)
        print(f"the same micro-batches run by Spark alone: {alone * 1000:.1f} ms a step; "
              f"the driver's step (uninstrumented, {whole * 1000:.1f} ms) is "
              f"{whole / alone:.2f}x that")
        return
    floor = timed(lambda: spark.range(1).count(), steps)
    rows: list[dict[str, Any]] = []

    def record(name: str, seconds: float, base: float, base_name: str, **extra: Any) -> None:
        rows.append({"measure": name, "ms": round(seconds * 1000, 2), "ratio": round(
            seconds / base, 2), "of": base_name, **extra})
        print(f"  {name:<66} {seconds * 1000:>9.1f} ms {seconds / base:>7.2f}x {base_name}",
              flush=True)

    print(f"floor: spark.range(1).count() = {floor * 1000:.1f} ms (median of {steps})")
    if args.only in ("all", "steps"):
        measure_steps(spark, args, floor, record)
    if args.only in ("all", "inner"):
        measure_inner(args, rows)
    if args.only in ("all", "app"):
        measure_app(spark, steps, timed, record, suite_tests=args.suite_tests)
    if args.only in ("all", "state"):
        measure_state(spark, args, record)
    if args.only in ("all", "memory"):
        measure_memory(spark, args, floor, record)
    if args.only in ("all", "property"):
        measure_property(spark, args, floor, rows)
    if args.only == "scale":
        measure_scale(spark, args, record, sys.modules[__name__])
    if args.only == "connect":  # each mode in a process of its own (see connect_steps.py)
        from benchmarks import connect_steps

        connect_rows = connect_steps.measure(steps, max(3, steps // 2))
        connect_steps.print_rows(connect_rows)
        rows.extend(connect_rows)
    floor_end = timed(lambda: spark.range(1).count(), steps)
    print(f"floor at the end: {floor_end * 1000:.1f} ms ({floor_end / floor:.2f}x the first)")
    print(verdicts_text(write_results(args, spark, floor, rows, floor_end)))


def report(args: Any) -> None:
    """``--compare`` and ``--chart``: report on the results file, without Spark."""
    results = load_results(args.against or args.json)
    if args.compare:
        print(compare(load_results(args.compare), results))
    if args.chart:
        with open(args.chart, "w") as out:
            out.write(chart(results))
        print(f"chart of {args.against or args.json} written to {args.chart}")


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


def measure_inner(args: Any, rows: list[dict[str, Any]]) -> None:
    """The inner loop from the shell (``benchmarks/inner_loop.py``): one test's pytest
    run with a warm JVM against a cold one and against its own micro-batches, and the
    suite with ``-n 2`` against serially, both with warm JVMs."""
    from benchmarks.inner_loop import measure

    found = measure(args.inner_runs, args.suite_tests)
    with_cpu, without_cpu = found["no_spark_with_cpu_s"], found["no_spark_without_cpu_s"]
    rows.append({"measure": "one test without Spark from the shell, with the plugin",
                 "seconds": found["no_spark_with_wall_s"],
                 "ratio": round(with_cpu / without_cpu, 2),
                 "of": "the same run with -p no:pyspark_streamtest (CPU time)",
                 "extra_cpu_seconds": round(with_cpu - without_cpu, 2),
                 "without_seconds": found["no_spark_without_wall_s"]})
    warm, cold = found["one_test_warm_s"], found["one_test_cold_s"]
    rows.append({"measure": "one windowed test from the shell, warm JVM", "seconds": warm,
                 "ratio": round(warm / cold, 2), "of": "the same run with a cold JVM",
                 "cold_seconds": cold})
    rows.append({"measure": "one windowed test from the shell, warm JVM, over its batches",
                 "ratio": found["one_test_warm_over_batches"],
                 "of": "its own micro-batches", "batches_seconds":
                 found["one_test_warm_batches_s"]})
    if args.suite_tests:
        serial, parallel = found["suite_serial_warm_s"], found["suite_n2_warm_s"]
        rows.append({"measure": f"payments job: {args.suite_tests}-test pytest suite, -n 2, "
                     "warm JVMs", "ratio": round(parallel / serial, 2),
                     "of": "the suite run serially, warm JVM", "serial_seconds": serial,
                     "parallel_seconds": parallel,
                     "cold_serial_seconds": found["suite_serial_cold_s"],
                     "cold_parallel_seconds": found["suite_n2_cold_s"],
                     "serial_busy_cores": found["suite_serial_warm_busy_cores"],
                     "parallel_busy_cores": found["suite_n2_warm_busy_cores"]})


def measure_property(spark: SparkSession, args: Any, floor: float,
                     rows: list[dict[str, Any]]) -> None:
    for reuse in (False, True):
        examples, elapsed, batch_counts = property_run(spark, args.property_examples, reuse)
        how = ("run_topology (one driver, reset between examples; repeats answered from "
               "its cache)" if reuse else "fresh driver each")
        name = (f"property test: {examples} examples, windowed aggregation, up to 6 data "
                "batches each")
        rows.append({"measure": name + (", with run_topology" if reuse else ""),
                     "seconds": round(elapsed, 1),
                     "ms_per_example": round(elapsed / examples * 1000, 1),
                     "ratio": round(elapsed / examples / floor, 2), "of": "trivial job",
                     "mean_batches": round(sum(batch_counts) / len(batch_counts), 2)})
        print(f"  property test, {how}: {examples} examples in {elapsed:.1f} s "
              f"({elapsed / examples * 1000:.0f} ms per example = "
              f"{elapsed / examples / floor:.1f}x trivial job; "
              f"{sum(batch_counts) / len(batch_counts):.1f} batches per example, "
              f"{max(batch_counts)} at most)")


def property_run(spark: SparkSession, examples: int,
                 reuse: bool = False) -> tuple[int, float, list[int]]:
    """The issue's property-test target: ``examples`` examples of a windowed aggregation
    checked against the model, derandomized; one fresh driver per example, or (``reuse``)
    through ``run_topology``, as the property-test guide writes it."""
    from hypothesis import HealthCheck, given, settings

    from pyspark_streamtest.testing import strategies as sst
    from pyspark_streamtest.testing.invariants import assert_matches_model
    from pyspark_streamtest.testing.model import WindowedCount, simulate

    second = timedelta(seconds=1)
    operator = WindowedCount(size=5 * second, delay=4 * second, mode="append")
    topology = operator.topology()
    counts: list[int] = []

    @settings(max_examples=examples, deadline=None, database=None, derandomize=True,
              suppress_health_check=list(HealthCheck))
    @given(sst.schedules(sst.events(max_disorder=4 * second, late=0.15, late_by=4 * second,
                                    max_size=10), max_batches=6))
    def check(schedule: Any) -> None:
        if reuse:
            batches = sst.run_topology(topology, schedule, spark=spark)
        else:
            with TopologyTestDriver(topology, spark=spark) as driver:
                batches = sst.run_schedule(driver, schedule)
        assert_matches_model(batches, simulate(schedule, operator))
        counts.append(len(batches))

    started = time.perf_counter()
    try:
        check()
    finally:
        sst.clear_run_cache()
    return len(counts), time.perf_counter() - started, counts


def measure_steps(spark: SparkSession, args: Any, floor: float,
                  record: Callable[..., None]) -> None:
    steps = args.steps
    driver_steps: dict[str, float] = {}
    for name, key in [
        ("stateless step (10 rows)", "stateless"),
        ("windowed step: data + no-data batch", "windowed"),
        ("stream-stream join step (10 rows per side)", "join"),
        ("applyInPandasWithState step (10 rows)", "grouped-state"),
    ]:
        topology, inputs = PROFILED[key]
        with TopologyTestDriver(topology, spark=spark) as driver, \
                bare_step(spark, key) as alone_step:
            seconds, alone = timed_pair(driver_step(driver, Clock(), inputs), alone_step,
                                        steps)
        driver_steps[name] = seconds
        record(name, seconds, floor, "trivial job", spark_alone=round(seconds / alone, 2))
        record(f"{name.split(' (')[0]}: Spark alone", alone, floor, "trivial job")

    def new_driver_first_step() -> None:
        with TopologyTestDriver(stateless, spark=spark) as driver:
            driver.create_input_topic("events").pipe_input(("a", 2, T0))
            driver.process_all_available()

    def bare_first_step() -> None:
        query = BareQuery(spark, {"events": SCHEMA}, stateless_plan, batches=1)
        try:
            query.step(query.lines({"events": [("a", 2, T0)]}))
        finally:
            query.close()

    first, first_alone = timed_pair(new_driver_first_step, bare_first_step, max(5, steps // 3),
                                    warmup=2)
    record("new driver + first step + close", first, floor, "trivial job",
           spark_alone=round(first / first_alone, 2))
    record("new query + first step + stop: Spark alone", first_alone, floor, "trivial job")

    # Public API, side by side.
    for name, plan, mode, driver_name in [
        ("public API: stateless step", stateless_plan, "append", "stateless step (10 rows)"),
        ("public API: windowed step (data batch only)", windowed_plan, "append",
         "windowed step: data + no-data batch"),
    ]:
        pipeline = PublicApiPipeline(spark, plan, mode)
        clock = Clock()
        try:
            seconds = timed(lambda p=pipeline, c=clock: p.step(c.rows(10)), steps)
        finally:
            pipeline.close()
        record(name, seconds, floor, "trivial job",
               driver_speedup=round(seconds / driver_steps[driver_name], 2))

    # Bulk pipe versus createDataFrame of the same rows.
    bulk = Clock().rows(args.bulk_rows, keys=1000)
    create_df = timed(lambda: spark.createDataFrame(bulk, SCHEMA).count(), 3, warmup=1)
    print(f"floor: createDataFrame({args.bulk_rows} rows).count() = {create_df * 1000:.1f} ms")
    query = BareQuery(spark, {"events": SCHEMA}, total_plan, batches=1, output_mode="complete")
    try:
        with TopologyTestDriver(total_count, spark=spark) as driver:
            topic = driver.create_input_topic("events")

            def bulk_pipe() -> None:
                topic.pipe_value_list(bulk)
                driver.process_all_available()

            lines = query.lines({"events": bulk})  # made once: Spark's share of the step
            piped, alone = timed_pair(bulk_pipe, lambda: query.step(lines), 3, warmup=1)
    finally:
        query.close()
    record(f"bulk pipe of {args.bulk_rows} rows + the batch", piped, create_df, "createDataFrame",
           spark_alone=round(piped / alone, 2))
    record(f"bulk: the batch of {args.bulk_rows} JSON lines, Spark alone", alone, create_df,
           "createDataFrame")


def measure_state(spark: SparkSession, args: Any, record: Callable[..., None],
                  probe: Callable[[], None] | None = None) -> None:
    """Step latency with many keys in state, with Spark's default state store (HDFS-backed:
    it copies its whole map every batch) and with RocksDB plus changelog checkpointing;
    ``probe`` runs with ``--max-keys`` keys in state, before that size is recorded."""
    steps = args.steps
    sizes = sorted({1000, min(100_000, args.max_keys), args.max_keys})
    rocksdb = {"spark.sql.streaming.stateStore.providerClass":
               "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider",
               "spark.sql.streaming.stateStore.rocksdb.changelogCheckpointing.enabled": "true"}
    for store, conf in [("", {}), (" (RocksDB, changelog checkpointing)", rocksdb)]:
        by_size: dict[int, float] = {}
        for size in sizes:
            by_size[size] = keyed_step(spark, size, steps, conf,
                                       probe if size == args.max_keys else None)
            record(f"step with {size} keys in state{store}", by_size[size], by_size[sizes[0]],
                   f"{sizes[0]}-key step{store}")


def keyed_step(spark: SparkSession, size: int, steps: int, conf: dict[str, str],
               probe: Callable[[], None] | None = None) -> float:
    """Median step (10 updates) of a per-key count holding ``size`` keys in state;
    ``probe`` runs after the steps, the keys still in state."""
    with TopologyTestDriver(key_counts, spark=spark, sql_conf=conf) as driver:
        topic = driver.create_input_topic("events")
        for start in range(0, size, 200_000):
            end = min(size, start + 200_000)
            topic.pipe_value_list([(f"key{i}", i, T0) for i in range(start, end)])
            driver.process_all_available()
        counter = iter(range(10**9))
        seconds = timed(lambda: (
            topic.pipe_value_list([(f"key{next(counter) % size}", 1, T0) for _ in range(10)]),
            driver.process_all_available()), steps)
        if probe is not None:
            probe()
        return seconds


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


def write_results(args: Any, spark: SparkSession, floor: float,
                  rows: list[dict[str, Any]], floor_end: float) -> dict[str, Any]:
    """Write the run to ``--json`` and return what was written."""
    create_df = next((r["ms"] / r["ratio"] / 1000 for r in rows
                      if r.get("of") == "createDataFrame"), None)
    result = {
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version(),
                    "pyspark": pyspark.__version__, "platform": platform.platform()},
        "floor_ms": round(floor * 1000, 2),
        "floor_at_end_ms": round(floor_end * 1000, 2),
        "warmup_seconds": args.warmup_seconds,
        "create_dataframe_floor_ms": None if create_df is None else round(create_df * 1000, 2),
        "rows": rows,
    }
    os.makedirs(os.path.dirname(args.json) or ".", exist_ok=True)
    with open(args.json, "w") as out:
        json.dump(result, out, indent=2)
    print(f"written to {args.json}")
    return result


if __name__ == "__main__":
    main()
