"""The same scenario gives the same history, run after run."""

from __future__ import annotations

from datetime import timedelta

from pyspark_streamtest import TopologyTestDriver
from tests.helpers import at, clicks_per_user


def _scenario(spark) -> tuple:
    with TopologyTestDriver(clicks_per_user, spark=spark) as driver:
        clicks = driver.create_input_topic("clicks")
        for second, (user, event_s) in enumerate(
            [("a", 1), ("b", 14), ("a", 3), ("c", 30), ("b", 2), ("a", 44), ("c", 9)]
        ):
            clicks.pipe_input({"user": user, "url": f"/{second}"}, timestamp=at(event_s))
            if second % 2:
                driver.process_all_available()
            else:
                driver.advance_wall_clock(timedelta(seconds=1))
        driver.advance_wall_clock(timedelta(seconds=3))
        return tuple(
            (
                b.output, b.batch_id, b.processing_time, b.watermark, b.watermark_after,
                b.num_input_rows, b.num_rows_dropped_by_watermark, b.num_state_rows_total,
                tuple(r.value for r in b.input_records),
                tuple(sorted(repr(r.value) for r in b.output_records)),
            )
            for b in driver.batches
        )


def test_same_scenario_five_times_gives_identical_histories(spark):
    runs = [_scenario(spark) for _ in range(5)]
    assert len(runs[0]) >= 8
    assert any(batch[6] for batch in runs[0])  # a late record was dropped
    for run in runs[1:]:
        assert run == runs[0]
