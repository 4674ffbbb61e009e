"""``--only property``: the property-test target, a windowed aggregation checked against
the model over many examples, with a fresh driver each and through ``run_topology``."""

from __future__ import annotations

import time
from datetime import timedelta
from typing import Any

from pyspark.sql import SparkSession

from pyspark_streamtest import TopologyTestDriver


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
