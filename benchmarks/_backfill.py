"""The backfill row (issue 58): an ``availableNow`` query reading 10,000 records in the
20 batches ``maxOffsetsPerTrigger=500`` makes, against the same 20 batches stepped one
by one on a processing-time trigger. Both start from a restart of the job's query (a
backfill is the job's next run) and end when the backlog is read, so the ratio is what
the driver adds to run a backfill as Spark ends one: at most 1.1."""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta
from typing import Any

from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from pyspark_streamtest import TopologyTestDriver

from ._timing import timed_pair

__all__ = ["BACKFILL_NAME", "measure_backfill"]

RECORDS, LIMIT = 10_000, 500
BATCHES = RECORDS // LIMIT
BACKFILL_NAME = f"availableNow backfill: {RECORDS} records in {BATCHES} batches"


def _job(trigger: dict[str, Any]) -> Callable[[SparkSession], None]:
    def job(spark: SparkSession) -> None:
        (spark.readStream.format("kafka").option("subscribe", "events")
         .option("maxOffsetsPerTrigger", LIMIT).load()
         .select(F.col("value").cast("string").alias("v"), "partition")
         .writeStream.format("memory").queryName("events").trigger(**trigger).start())
    return job


def measure_backfill(spark: SparkSession, steps: int, record: Callable[..., None]) -> None:
    values = [f"e{i}" for i in range(RECORDS)]
    backfill = TopologyTestDriver.from_app(_job({"availableNow": True}), spark=spark)
    stepped = TopologyTestDriver.from_app(_job({"processingTime": "1 second"}), spark=spark)
    try:
        def run_backfill() -> None:
            backfill.create_input_topic("events", value_serializer="string").pipe_value_list(
                values)
            ran = backfill.restart()
            assert len(ran) == BATCHES, len(ran)

        def run_stepped() -> None:
            stepped.create_input_topic("events", value_serializer="string").pipe_value_list(
                values)
            ran = stepped.restart()
            for _ in range(BATCHES):
                ran += stepped.advance_wall_clock(timedelta(seconds=1))
            assert [b.num_input_rows for b in ran] == [LIMIT] * BATCHES, ran

        repeat = max(3, steps // 4)
        ours, theirs = timed_pair(run_backfill, run_stepped, repeat, warmup=1)
    finally:
        backfill.close()
        stepped.close()
    record(BACKFILL_NAME, ours, theirs, f"the same {BATCHES} batches stepped one by one")
