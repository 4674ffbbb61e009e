"""How long a wrong statement of a stream-stream join takes to shrink, with Spark in the
loop.

    python -m benchmarks.join_shrink [--variant before|after] [--examples N] [--master URL]

The pipeline joins impressions and clicks of one key, a click counting when it comes
0 to 10 s after its impression (``clicks.ts BETWEEN impressions.ts AND impressions.ts
+ INTERVAL 10 SECONDS``), both inputs with a 30-second watermark. The statement of it
is wrong by one second: it takes the upper bound as exclusive. The minimal failing
case is one impression and one click exactly 10 s after it, in one batch.

* ``before``: what a team writes with the strategies that draw each input on its own: a
  hand-written composite that draws impressions with ``events(...)``, clicks after
  them, and the batches; the expectation a hand-written list of joined rows.
* ``after``: ``joined_schedules(...)`` draws the clicks from the impressions (with
  disorder and late events), and the join model (``StreamJoin``) with the wrong bound
  predicts every batch.

Both run through ``run_topology`` with ``spark_settings``, derandomized. The seconds
from the first example to the end of the shrink, the examples tried, the Spark runs
made and the minimal schedule are printed. Nothing is asserted: it is a measure.
"""

from __future__ import annotations

import argparse
import sys
import time
from datetime import timedelta
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pyspark.sql import functions as F

from pyspark_streamtest import Topology, test_spark_session
from pyspark_streamtest.testing import strategies as sst
from pyspark_streamtest.testing._runs import spark_runs
from pyspark_streamtest.testing.invariants import assert_matches_expected
from pyspark_streamtest.testing.model import Drain, Event, Pipe, Schedule, Step, Tick

S = timedelta(seconds=1)
SCHEMA = "key STRING, value STRING, ts TIMESTAMP"


def impressions_and_clicks(t: Topology) -> None:
    """The pipeline: a click joins its impression when it comes 0 to 10 s after it."""
    def side(name: str, prefix: str) -> Any:
        return (t.input(name, schema=SCHEMA, timestamp_column="ts")
                .select(F.col("key").alias(f"{prefix}_key"),
                        F.col("value").alias(f"{prefix}_value"),
                        F.col("ts").alias(f"{prefix}_ts"))
                .withWatermark(f"{prefix}_ts", "30 seconds"))

    left, right = side("impressions", "left"), side("clicks", "right")
    joined = left.join(right, F.expr(
        "left_key = right_key AND right_ts BETWEEN left_ts AND "
        "left_ts + INTERVAL 10 SECONDS"), "inner")
    t.output("joined", joined.select(
        F.col("left_key").alias("key"), "left_value", "left_ts", "right_value",
        "right_ts"))


# --- before: a hand-written strategy and expectation ----------------------------------------
@st.composite
def hand_written_schedules(draw: Any) -> Schedule:
    """Impressions from ``events(...)``; for each, zero to two clicks 0 to 12 s after it;
    both inputs in event-time order, split into up to three batches."""
    impressions = draw(sst.events(max_size=5, max_step=2 * S))
    clicks = []
    for impression in impressions:
        for _ in range(draw(st.integers(0, 2))):
            offset = draw(st.integers(0, 12))
            clicks.append(Event(impression.key, "c", impression.timestamp + offset * S))
    piped = sorted([("impressions", e) for e in impressions]
                   + [("clicks", e) for e in clicks], key=lambda item: item[1].timestamp)
    cuts = sorted(draw(st.lists(st.integers(1, max(1, len(piped))), max_size=2)))
    steps: list[Step] = []
    for start, end in zip([0, *cuts], [*cuts, len(piped)], strict=True):
        chunk = piped[start:end]
        for name in ("impressions", "clicks"):
            events = tuple(e for into, e in chunk if into == name)
            if events:
                steps.append(Pipe(events, input=name))
        steps.append(Tick())
    steps.append(Drain())
    return Schedule(tuple(steps))


def wrong_expected_rows(schedule: Schedule) -> list[dict[str, Any]]:
    """Every impression and click of a key with the click 0 to 10 s after, the upper
    bound wrongly exclusive. (Nothing is late: the times span less than the delay.)"""
    return [{"key": i.key, "left_value": i.value, "left_ts": i.timestamp,
             "right_value": c.value, "right_ts": c.timestamp}
            for i in schedule.events_into("impressions")
            for c in schedule.events_into("clicks")
            if i.key == c.key and i.timestamp <= c.timestamp < i.timestamp + 10 * S]


def shrink_before(spark: Any, max_examples: int) -> tuple[list[Schedule], float, int]:
    tried: list[Schedule] = []

    @sst.spark_settings(max_examples=max_examples, derandomize=True, database=None)
    @given(hand_written_schedules())
    def property_with_a_wrong_expectation(schedule: Schedule) -> None:
        tried.append(schedule)
        expected = wrong_expected_rows(schedule)
        batches = sst.run_topology(impressions_and_clicks, schedule, spark=spark,
                                   input=None, output="joined")
        assert_matches_expected(batches, expected, schedule=schedule)

    return _timed(property_with_a_wrong_expectation, tried)


def _timed(prop: Any, tried: list[Schedule]) -> tuple[list[Schedule], float, int]:
    runs = spark_runs()
    started = time.perf_counter()
    with pytest.raises(AssertionError):
        prop()
    return tried, time.perf_counter() - started, spark_runs() - runs


VARIANTS = {"before": shrink_before}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.join_shrink")
    parser.add_argument("--variant", choices=sorted(VARIANTS), default="after")
    parser.add_argument("--examples", type=int, default=100,
                        help="max_examples of the property (default 100)")
    parser.add_argument("--master", default=None, help="Spark master (default local[2])")
    args = parser.parse_args(argv)
    spark = test_spark_session(master=args.master)
    try:
        tried, seconds, runs = VARIANTS[args.variant](spark, args.examples)
    finally:
        sst.clear_run_cache()
    minimal = tried[-1]
    print(f"{args.variant}: failed and shrank in {seconds:.1f} s: {len(tried)} examples "
          f"tried, {runs} Spark runs (the rest answered by run_topology's cache)")
    print(f"minimal schedule, {len(minimal.events)} events:\n{minimal}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
