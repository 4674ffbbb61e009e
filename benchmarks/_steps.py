"""``--only steps``: the driver's steps against Spark alone's and against the public API,
the bulk pipe against ``createDataFrame``; and ``--profile``, where one step spends its
time (``benchmarks/_profile.py``)."""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from collections.abc import Callable
from datetime import datetime
from typing import Any

from pyspark.sql import DataFrame, SparkSession

from pyspark_streamtest import TopologyTestDriver

from ._bare import BareQuery
from ._pipelines import (
    PROFILED,
    SCHEMA,
    T0,
    stateless,
    stateless_plan,
    total_count,
    total_plan,
    windowed_plan,
)
from ._profile import profile_step
from ._timing import Clock, bare_step, driver_step, spark_alone, timed, timed_pair


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


def profile(spark: SparkSession, name: str, steps: int) -> None:
    """``--profile``: where one step of the pipeline ``name`` spends its time, and the
    step uninstrumented against the same micro-batches run by Spark alone."""
    topology, inputs = PROFILED[name]
    with TopologyTestDriver(topology, spark=spark) as driver:
        step = driver_step(driver, Clock(), inputs)
        for _ in range(3):
            step()
        print(f"profile of the {name} step (--steps {steps}):")
        print("\n".join(profile_step(spark, step, steps)))
        whole = timed(step, steps, warmup=0)
    alone = spark_alone(spark, name, steps)
    print(f"the same micro-batches run by Spark alone: {alone * 1000:.1f} ms a step; "
          f"the driver's step (uninstrumented, {whole * 1000:.1f} ms) is "
          f"{whole / alone:.2f}x that")
