"""How long a wrong statement of a stream-stream join takes to shrink, with Spark in the
loop.

    python -m benchmarks.join_shrink [--variant before|after|after-plain|all] [--seeds N]
                                     [--examples N] [--master URL]

The pipeline joins impressions and clicks of one key, a click counting when it comes
0 to 10 s after its impression (``clicks.ts BETWEEN impressions.ts AND impressions.ts
+ INTERVAL 10 SECONDS``), both inputs with a 30-second watermark. The statement of it
is wrong by one second: it takes the upper bound as exclusive. The minimal failing
case is one impression and one click exactly 10 s after it, in one batch.

* ``before``: what a team writes with the strategies that draw each input on its own: a
  hand-written composite that draws impressions with ``events(...)``, clicks after
  them, and the batches; the expectation a hand-written list of joined rows.
* ``after``: ``joined_schedules(...)`` draws the clicks from the impressions (with
  disorder, late events and copies), and the join model (``StreamJoin``) with the
  wrong bound predicts every batch; ``after-plain`` the same without disorder, late
  events or copies, as the hand-written strategy draws.

Both run through ``run_topology`` with ``spark_settings``, once per hypothesis seed
(0 to N-1; one derandomized run says little: hypothesis derives its examples from the
test function's source, so any edit draws others). Per run: the seconds and Spark runs
from the first example to the end of the shrink, when the property first failed, the
minimal schedule; then the medians. Nothing is asserted: it is a measure.
"""

from __future__ import annotations

import argparse
import contextlib
import statistics
import sys
import textwrap
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

from hypothesis import given, seed
from hypothesis import strategies as st
from pyspark.sql import functions as F

from pyspark_streamtest import Topology, test_spark_session
from pyspark_streamtest.testing import strategies as sst
from pyspark_streamtest.testing._runs import spark_runs
from pyspark_streamtest.testing.invariants import assert_matches_expected, assert_matches_model
from pyspark_streamtest.testing.model import (
    Drain,
    Event,
    Pipe,
    Schedule,
    Step,
    StreamJoin,
    Tick,
    simulate,
)

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


def check_before(spark: Any, schedule: Schedule) -> None:
    expected = wrong_expected_rows(schedule)
    batches = sst.run_topology(impressions_and_clicks, schedule, spark=spark, input=None,
                               output="joined")
    assert_matches_expected(batches, expected, schedule=schedule)


# --- after: joined_schedules and the join model ---------------------------------------------
WRONG = StreamJoin(how="inner", left="impressions", right="clicks", lower=0 * S,
                   upper=9 * S, left_delay=30 * S, right_delay=30 * S)
"""The statement, wrong by one second: ``BETWEEN left_ts AND left_ts + 9 s`` at a
resolution of one second is the upper bound taken as exclusive."""


AFTER = sst.joined_schedules(left="impressions", right="clicks", between=(0 * S, 10 * S),
                            max_size=5, max_step=2 * S, max_disorder=2 * S, late=0.1,
                            late_by=32 * S, duplicates=0.1, max_batches=3, idle_ticks=0)


def check_after(spark: Any, schedule: Schedule) -> None:
    expected = simulate(schedule, WRONG)  # the model first: no Spark
    batches = sst.run_topology(impressions_and_clicks, schedule, spark=spark, input=None,
                               output="joined")
    assert_matches_model(batches, expected, context=f"schedule:\n{schedule}")


PLAIN = sst.joined_schedules(left="impressions", right="clicks", between=(0 * S, 10 * S),
                            max_size=5, max_step=2 * S, max_batches=3, idle_ticks=0)
"""As ``AFTER`` without disorder, late events or copies: what the hand-written
strategy draws, besides clicks outside the range and without an impression."""

VARIANTS: dict[str, tuple[Any, Callable[[Any, Schedule], None]]] = {
    "before": (hand_written_schedules(), check_before),
    "after": (AFTER, check_after),
    "after-plain": (PLAIN, check_after),
}


@dataclass
class Shrunk:
    """One run of a variant's property: the seconds and Spark runs to the end of the
    shrink, the examples tried, and when it first failed (None: it never did)."""

    variant: str
    seed: int
    seconds: float
    runs: int
    tried: list[Schedule] = field(default_factory=list)
    first: tuple[int, float, int] | None = None

    def __str__(self) -> str:
        if self.first is None:
            return (f"{self.variant} seed {self.seed}: no failure in {len(self.tried)} "
                    f"examples ({self.seconds:.1f} s)")
        examples, seconds, runs = self.first
        return (f"{self.variant} seed {self.seed}: {self.seconds:.1f} s, {self.runs} Spark "
                f"runs, {len(self.tried)} examples to {len(self.tried[-1].events)} events; "
                f"first failure at example {examples} ({seconds:.1f} s, {runs} runs), "
                f"the shrink {self.seconds - seconds:.1f} s, {self.runs - runs} runs")


def shrink(spark: Any, variant: str, chosen_seed: int, max_examples: int) -> Shrunk:
    """The variant's property with hypothesis seed ``chosen_seed``, to the end of its
    shrink (the cache emptied first: no run carries over)."""
    strategy, check = VARIANTS[variant]
    sst.clear_run_cache()
    done = Shrunk(variant, chosen_seed, 0.0, 0)
    runs, started = spark_runs(), time.perf_counter()

    @seed(chosen_seed)
    @sst.spark_settings(max_examples=max_examples, database=None)
    @given(strategy)
    def property_of_a_wrong_statement(schedule: Schedule) -> None:
        done.tried.append(schedule)
        try:
            check(spark, schedule)
        except AssertionError:
            if done.first is None:
                done.first = (len(done.tried), time.perf_counter() - started,
                              spark_runs() - runs)
            raise

    with contextlib.suppress(AssertionError):  # a failure is what is measured
        property_of_a_wrong_statement()
    done.seconds, done.runs = time.perf_counter() - started, spark_runs() - runs
    return done


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.join_shrink")
    parser.add_argument("--variant", choices=[*VARIANTS, "all"], default="all")
    parser.add_argument("--seeds", type=int, default=5,
                        help="hypothesis seeds 0..N-1, each variant once per seed "
                        "(default 5)")
    parser.add_argument("--examples", type=int, default=100,
                        help="max_examples of the property (default 100)")
    parser.add_argument("--master", default=None, help="Spark master (default local[2])")
    args = parser.parse_args(argv)
    spark = test_spark_session(master=args.master)
    variants = list(VARIANTS) if args.variant == "all" else [args.variant]
    results: list[Shrunk] = []
    try:
        for chosen in range(args.seeds):
            for variant in variants[chosen % len(variants):] + variants[:chosen % len(variants)]:
                results.append(shrink(spark, variant, chosen, args.examples))
                print(results[-1], flush=True)
                if results[-1].first is not None:
                    print(textwrap.indent(str(results[-1].tried[-1]), "  "), flush=True)
    finally:
        sst.clear_run_cache()
    for variant in variants:
        failed = [r for r in results if r.variant == variant and r.first is not None]
        if not failed:
            continue
        shrinks = [(r.seconds - r.first[1], r.runs - r.first[2]) for r in failed if r.first]
        print(f"{variant}, median of {len(failed)} seeds: "
              f"{statistics.median(r.seconds for r in failed):.1f} s and "
              f"{statistics.median(r.runs for r in failed):.0f} Spark runs in all; the "
              f"shrink {statistics.median(t for t, _ in shrinks):.1f} s and "
              f"{statistics.median(n for _, n in shrinks):.0f} runs; to "
              f"{statistics.median(len(r.tried[-1].events) for r in failed):.0f} events")
    return 0


if __name__ == "__main__":
    sys.exit(main())
