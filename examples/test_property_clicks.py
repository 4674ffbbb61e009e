"""The property-testing guide's example (docs/how-to/property-tests.md): a user's windowed
pipeline checked against the reference model on generated schedules."""

from __future__ import annotations

import os
from datetime import timedelta

from hypothesis import given
from pyspark.sql import functions as F

from pyspark_streamtest import Topology
from pyspark_streamtest.testing import strategies as sst
from pyspark_streamtest.testing.invariants import (
    assert_matches_model,
    assert_no_late_rows,
    assert_watermark_never_goes_back,
)
from pyspark_streamtest.testing.model import WindowedCount, simulate

S = timedelta(seconds=1)


def clicks_per_user(t: Topology) -> None:
    """The pipeline under test: clicks per user in 5-second windows, 4 s of grace."""
    clicks = t.input("clicks", schema="key STRING, value STRING, ts TIMESTAMP",
                     timestamp_column="ts")
    counts = (clicks.withWatermark("ts", "4 seconds")
              .groupBy(F.window("ts", "5 seconds").alias("window"), "key").count())
    t.output("counts", counts, output_mode="append")


# What Spark promises for it: a tumbling count, append mode, the same delay.
MODEL = WindowedCount(size=5 * S, delay=4 * S, mode="append")


@sst.spark_settings(max_examples=int(os.environ.get("STREAMTEST_EXAMPLES", "15")))
@given(sst.schedules(sst.events(max_disorder=4 * S, late=0.2, late_by=4 * S, max_size=10),
                     max_batches=4, watermark_advances=0.2))
def test_clicks_per_user_keeps_spark_promises(spark, schedule):
    expected = simulate(schedule, MODEL)            # the model first: milliseconds
    batches = sst.run_topology(clicks_per_user, schedule, spark=spark,
                               input="clicks", output="counts")
    assert_matches_model(batches, expected, context=f"schedule:\n{schedule}")
    assert_watermark_never_goes_back(batches)
    assert_no_late_rows(batches, lambda row: row["window"]["end"])
