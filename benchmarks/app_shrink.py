"""How long a failing property test over a whole ``from_app`` job takes to find its
failure and shrink it, with Spark in the loop (issue 58's trial: 300 s there).

    python -m benchmarks.app_shrink [--examples N] [--per-event]

The job is ``examples/sessions_job.py`` (Kafka with a read limit, a stream-static join,
``applyInPandasWithState`` sessions with an event-time timeout, a ``foreachBatch``
upsert into SQLite), made once and ``reset()`` at each example, as the
property-testing guide advises. The property is ``examples/test_sessions_job.py``'s
with a planted bug: it expects no event to be late, which is wrong as soon as a stream
has one event far enough behind another. hypothesis finds such a stream and shrinks it
(``spark_settings``, derandomized); the minimal stream is printed with the seconds from
the first example to the end of the shrink, the examples tried and the batches Spark
ran. ``--per-event`` steps the clock after every event instead of once per cut: more
batches per example, as the trial's test did. Nothing is asserted about the time.
"""

from __future__ import annotations

import argparse
import itertools
import os
import sys
import tempfile
import time
from datetime import timedelta

from hypothesis import given

from pyspark_streamtest import TopologyTestDriver, test_spark_session
from pyspark_streamtest.testing import strategies as sst


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.app_shrink")
    parser.add_argument("--examples", type=int, default=60,
                        help="max_examples of the property (default 60)")
    parser.add_argument("--per-event", action="store_true",
                        help="advance the clock after every event (the trial's test)")
    args = parser.parse_args(argv)
    from examples import sessions_job
    from examples.test_sessions_job import T0, cuts, event, streams

    spark = test_spark_session()
    spark.createDataFrame([("a", "pro")], "user STRING, plan STRING") \
        .createOrReplaceTempView("users")
    minute = timedelta(minutes=1)
    tried: list[tuple[list[tuple[str, int]], list[int]]] = []
    batches = 0
    found: tuple[int, float] | None = None  # (examples tried, seconds) at the first failure
    started = time.perf_counter()
    with tempfile.TemporaryDirectory() as folder:
        database = os.path.join(folder, "sessions.db")
        with TopologyTestDriver.from_app(sessions_job.main, spark=spark, start_time=T0,
                                         argv=["--database", database]) as driver:

            @sst.spark_settings(max_examples=args.examples, derandomize=True, database=None)
            @given(stream=streams, cut_at=cuts)
            def no_event_is_late(stream: list[tuple[str, int]], cut_at: list[int]) -> None:
                nonlocal batches, found
                tried.append((stream, cut_at))
                driver.reset()
                events = driver.create_input_topic("app-events", value_serializer="json")
                if args.per_event:
                    chunks = [[item] for item in stream]
                else:
                    bounds = [0, *sorted(c for c in cut_at if c < len(stream)), len(stream)]
                    chunks = [stream[a:b] for a, b in itertools.pairwise(bounds)]
                for chunk in chunks:
                    events.pipe_value_list([event(user, at) for user, at in chunk])
                    driver.advance_wall_clock(minute)
                batches += len(driver.batches)
                if driver.late_records("sessions") and found is None:
                    found = (len(tried), time.perf_counter() - started)
                assert driver.late_records("sessions") == []  # the planted bug

            started = time.perf_counter()
            try:
                no_event_is_late()
            except AssertionError:
                seconds = time.perf_counter() - started
            else:
                print(f"no failure found in {args.examples} examples")
                return 1
    stream, cut_at = tried[-1]
    assert found is not None
    print(f"failed and shrank in {seconds:.1f} s: {len(tried)} examples tried, "
          f"{batches} batches run ({seconds / len(tried):.2f} s an example); the first "
          f"failure at example {found[0]} after {found[1]:.1f} s, then {len(tried) - found[0]}"
          f" shrink steps in {seconds - found[1]:.1f} s")
    print(f"minimal stream: {stream}, cut at {cut_at}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
