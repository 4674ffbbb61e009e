"""What a focused test saves with ``from_app(main, outputs=[...])`` (issue 36): the same
three-query job (alerts to Kafka, averages in complete mode, a registry count), every
query against the alerts query alone.

    python -m benchmarks.from_app_outputs [--steps N] [--rounds N]

Each round makes a driver both ways (alternating, so both see the same load), pipes one
reading per step and runs one trigger, then calls ``reset()`` (what a property test does
between examples). Prints the median start, step and reset times and their ratios.
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable
from datetime import timedelta
from typing import Any

from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from pyspark_streamtest import TopologyTestDriver, test_spark_session


def job(spark: SparkSession) -> None:
    """Alerts and averages read the readings topic; a registry count reads another."""
    readings = (spark.readStream.format("kafka").option("subscribe", "readings").load()
                .select(F.col("key").cast("string").alias("device"),
                        F.col("value").cast("string").cast("double").alias("reading")))
    (readings.where("reading > 50")
     .selectExpr("device AS key", "CAST(reading AS STRING) AS value")
     .writeStream.format("kafka").option("topic", "alerts").start())
    (readings.groupBy("device").avg("reading").writeStream.outputMode("complete")
     .format("memory").queryName("averages").start())
    registry = spark.readStream.format("kafka").option("subscribe", "registry").load()
    registry.groupBy("key").count().writeStream.outputMode("update").toTable("registry_counts")


def _timed(action: Callable[[], Any]) -> tuple[float, Any]:
    started = time.perf_counter()
    result = action()
    return time.perf_counter() - started, result


def _round(spark: SparkSession, outputs: list[str] | None, steps: int) -> dict[str, float]:
    start_s, driver = _timed(lambda: TopologyTestDriver.from_app(job, spark=spark,
                                                                 outputs=outputs))
    with driver:
        readings = driver.create_input_topic("readings", key_serializer="string",
                                             value_serializer="string")
        step_times = []
        for n in range(steps):
            readings.pipe_input(f"d{n % 3}", str(40 + n))
            step_times.append(_timed(lambda: driver.advance_wall_clock(timedelta(seconds=1)))[0])
        reset_s, _ = _timed(driver.reset)
    return {"start": start_s, "step": statistics.median(step_times), "reset": reset_s}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=int, default=8)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    spark = test_spark_session()
    _round(spark, None, 2)  # warm-up: JIT, codegen, the first query plans
    figures: dict[str, list[dict[str, float]]] = {"every query": [], "outputs=['alerts']": []}
    for _ in range(args.rounds):
        figures["every query"].append(_round(spark, None, args.steps))
        figures["outputs=['alerts']"].append(_round(spark, ["alerts"], args.steps))
    medians = {way: {k: statistics.median(r[k] for r in rounds) for k in ("start", "step", "reset")}
               for way, rounds in figures.items()}
    print(f"{'':22}{'start':>9}{'step':>9}{'reset':>9}   (median s, {args.rounds} rounds, "
          f"{args.steps} steps each)")
    for way, m in medians.items():
        print(f"{way:22}{m['start']:9.2f}{m['step']:9.3f}{m['reset']:9.2f}")
    full, focused = medians["every query"], medians["outputs=['alerts']"]
    print(f"{'ratio':22}" + "".join(f"{full[k] / focused[k]:8.1f}x" for k in ("start", "step",
                                                                               "reset")))


if __name__ == "__main__":
    main()
