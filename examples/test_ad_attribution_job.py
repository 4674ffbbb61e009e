"""Tests of example 8: the Connect ad-attribution job in ``ad_attribution_job.py``, run as
it is, impressions landed as files, clicks piped into Kafka."""

from __future__ import annotations

import json
import os
import sqlite3
from dataclasses import replace
from datetime import datetime, timedelta, timezone

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from examples import ad_attribution_job
from pyspark_streamtest import InvalidArgumentError, StreamingQueryFailedError
from pyspark_streamtest.testing import strategies as sst
from pyspark_streamtest.testing.invariants import assert_matches_model
from pyspark_streamtest.testing.model import (
    Drain,
    Event,
    Pipe,
    Schedule,
    StreamJoin,
    Tick,
    simulate,
)

T0 = datetime(2024, 1, 1, tzinfo=timezone.utc)
MINUTE = timedelta(minutes=1)


def at(minutes: float) -> str:
    return (T0 + timedelta(minutes=minutes)).isoformat()


def impression(imp_id: str, campaign: str, minutes: float) -> str:
    return json.dumps({"imp_id": imp_id, "campaign_id": campaign, "shown_at": at(minutes)})


def click(click_id: str, imp_id: str, minutes: float) -> dict[str, str]:
    return {"click_id": click_id, "imp_id": imp_id, "clicked_at": at(minutes)}


@pytest.fixture
def production_paths(spark, tmp_path, monkeypatch):
    """The job's production paths pointed at the test's folder, the campaigns table
    written there."""
    campaigns = str(tmp_path / "campaigns")
    spark.createDataFrame([("c1", "Winter sale"), ("c2", "Spring")],
                          "campaign_id STRING, campaign STRING").write.parquet(campaigns)
    for name, value in {"ADS_CAMPAIGNS": campaigns, "ADS_SQLITE": str(tmp_path / "ads.db"),
                        "ADS_CHECKPOINTS": str(tmp_path / "checkpoints"),
                        "ADS_ATTRIBUTED": str(tmp_path / "attributed")}.items():
        monkeypatch.setenv(name, value)
    return tmp_path


@pytest.fixture
def job(topology_driver, production_paths):
    """The job under the driver; impressions are landed as files."""
    driver = topology_driver.from_app(ad_attribution_job.main, start_time=T0, land_files=True)
    impressions = driver.create_input_topic("impressions")
    clicks = driver.create_input_topic("ad-clicks", value_serializer="json")
    return driver, impressions, clicks, production_paths / "ads.db"


def attributions(driver) -> list[tuple[str, str | None, str | None]]:
    rows = driver.create_output_topic("attributed").read_values_to_list()
    return sorted((r["imp_id"], r["campaign"], r["click_id"]) for r in rows)


def hourly(db) -> list[tuple[str, str, int, int]]:
    with sqlite3.connect(db) as connection:
        return connection.execute("SELECT * FROM hourly ORDER BY hour, campaign_id").fetchall()


def test_the_job_runs_as_it_is(job):
    driver, impressions, _, _ = job
    assert impressions.is_file_input
    assert set(driver.input_names) == {"impressions", "ad-clicks"}
    assert set(driver.output_names) == {"attributed", "hourly"}


def test_a_click_within_30_minutes_is_attributed_to_its_impression(job):
    driver, impressions, clicks, _ = job
    impressions.land_lines([impression("i1", "c1", 0), impression("i2", "c2", 1)])
    clicks.pipe_input("k1", click("k1", "i1", 29))
    clicks.pipe_input("k2", click("k2", "i2", 32))  # 31 minutes after i2: not attributed
    driver.advance_wall_clock(MINUTE)
    assert attributions(driver) == [("i1", "Winter sale", "k1")]


def test_an_impression_nobody_clicked_comes_out_once_both_watermarks_pass_30_minutes(job):
    """Spark emits the unmatched row of a left outer join when the watermark (the
    smaller of the two inputs') passes the row's time plus 30 minutes, in the batch
    after the one that moved it."""
    driver, impressions, clicks, _ = job
    impressions.land_lines([impression("i1", "c1", 0)])
    driver.advance_wall_clock(MINUTE)
    impressions.land_lines([impression("i9", "c2", 41)])  # impressions' watermark: 31 min
    driver.advance_wall_clock(MINUTE)
    assert attributions(driver) == []  # the clicks' watermark has not moved
    clicks.pipe_input("k9", click("k9", "i9", 41))  # the watermark: min(31, 31) = 31 min
    driver.advance_wall_clock(MINUTE)
    assert attributions(driver) == [("i9", "Spring", "k9")]
    (emitting,) = driver.advance_wall_clock(MINUTE)[:1]
    assert not emitting.new_data  # the no-data batch after the one that moved it
    assert attributions(driver) == [("i1", "Winter sale", None)]


def test_landed_files_are_parsed_as_spark_parses_them_and_duplicates_counted(job):
    """A malformed line is dropped (DROPMALFORMED), an impression landed twice is kept
    once, a click sent twice is kept once: each drop is in the batch's state metrics."""
    driver, impressions, clicks, _ = job
    impressions.land_lines([impression("i1", "c1", 0), '{"imp_id": "i2", "campaign_'])
    impressions.land_lines([impression("i1", "c1", 0)])  # the same impression again
    clicks.pipe_input("k1", click("k1", "i1", 2))
    clicks.pipe_input("k1", click("k1", "i1", 2))  # sent twice
    (batch,) = [b for b in driver.advance_wall_clock(MINUTE) if b.output == "attributed"]
    assert [r.key for r in batch.input_records if r.topic == "impressions"] == [
        "part-00000.json", "part-00001.json"]
    assert attributions(driver) == [("i1", "Winter sale", "k1")]
    dedups = [m for m in batch.state_metrics if m.rows_dropped_as_duplicates is not None]
    assert sorted(m.rows_dropped_as_duplicates for m in dedups) == [1, 1]
    with pytest.raises(InvalidArgumentError, match="reads files landed in 'impressions'"):
        driver.duplicate_records("attributed")


def test_the_hourly_counts_are_added_once_per_batch_even_when_spark_replays_it(job):
    """An impression counts once it comes out of the join: with its click, or alone once
    the watermark has passed its 30 minutes (i2 here has not yet)."""
    driver, impressions, clicks, db = job
    impressions.land_lines([impression("i1", "c1", 0), impression("i2", "c1", 5)])
    clicks.pipe_input("k1", click("k1", "i1", 10))
    driver.advance_wall_clock(MINUTE)
    assert hourly(db) == [("2024-01-01T00:00:00", "c1", 1, 1)]
    impressions.land_lines([impression("i3", "c2", 61)])
    clicks.pipe_input("k3", click("k3", "i3", 62))
    driver.crash_before_commit("hourly")  # the batch runs, then runs again on recovery
    driver.advance_wall_clock(MINUTE)
    writes = [(b.attempt, b.crashed) for b in driver.batches
              if b.output == "hourly" and b.batch_id == 1]
    assert writes == [(1, "before_commit"), (2, None)]  # both attempts, the crash marked
    assert hourly(db) == [("2024-01-01T00:00:00", "c1", 1, 1),
                          ("2024-01-01T01:00:00", "c2", 1, 1)]


def test_a_click_whose_time_does_not_parse_is_named_as_the_culprit(job):
    driver, impressions, clicks, _ = job
    impressions.land_lines([impression("i1", "c1", 0)])
    clicks.pipe_input("k1", click("k1", "i1", 1))
    clicks.pipe_input("k2", {"click_id": "k2", "imp_id": "i1", "clicked_at": "yesterday"})
    clicks.pipe_input("k3", click("k3", "i1", 2))
    with pytest.raises(StreamingQueryFailedError) as failed:
        driver.advance_wall_clock(MINUTE)
    assert "[CAST_INVALID_INPUT]" in failed.value.cause
    culprit = failed.value.culprit
    assert culprit is not None and (culprit.topic, culprit.offset) == ("ad-clicks", 1)


# --- the job against the join model, on correlated impressions and clicks ----------------
EXAMPLES = max(3, int(os.environ.get("STREAMTEST_EXAMPLES", "15")) // 3)
CAMPAIGNS = {"a": ("c1", "Winter sale"), "b": ("c2", "Spring"), "c": ("c1", "Winter sale"),
             "d": ("c9", None)}
"""Each impression's campaign, by its id (the key drawn): c9 is not in the table."""
# The job's join as the model states it: impressions LEFT OUTER joined with the clicks
# 0 to 30 minutes after them, each input deduplicated within its 10-minute watermark.
JOIN = StreamJoin(how="left_outer", lower=timedelta(0), upper=30 * MINUTE,
                  left="impressions", right="ad-clicks", left_delay=10 * MINUTE,
                  right_delay=10 * MINUTE, dedup="dropDuplicatesWithinWatermark")
# Stories of an impression and the clicks on it: the same id, 0 to 30 minutes after
# (some outside), out of order by up to 5 minutes, some more than 45 minutes behind
# (late: the watermark lags the clock by 10 minutes and a batch or two), some landed or
# sent twice, in up to 6 batches with restarts; a click's value tells two clicks on one
# impression apart.
STORIES = sst.joined_schedules(
    left="impressions", right="ad-clicks", between=(timedelta(0), 30 * MINUTE),
    keys=st.sampled_from("abcd"), values=st.sampled_from("12"), resolution=MINUTE,
    max_size=8, max_step=10 * MINUTE, max_disorder=5 * MINUTE, late=0.3,
    late_by=45 * MINUTE, outside=0.3, orphans=0.2, duplicates=0.2, max_batches=6,
    restarts=0.2, start=T0)


def story(into, *events):
    return Pipe(tuple(Event(key, value, T0 + minutes * MINUTE)
                      for key, value, minutes in events), input=into)


# What few drawn examples reach, pinned: a click sent twice, an impression nobody
# clicked (d, campaign c9, not in the table) coming out once the watermark (35 min)
# passes its 30 minutes, then a click and an impression behind that watermark, dropped
# as late.
PINNED = Schedule((
    story("impressions", ("a", "1", 0), ("d", "1", 2)),
    story("ad-clicks", ("a", "1", 5), ("a", "1", 5)), Tick(),
    story("impressions", ("b", "1", 45)), story("ad-clicks", ("b", "2", 50)), Tick(),
    Tick(),
    story("impressions", ("c", "1", 30)), story("ad-clicks", ("a", "2", 20)), Tick(),
    Drain()))


def landed_impression(event):
    """An impression as the ad servers write it: one JSON line of a landed file."""
    return None, {"imp_id": event.key, "campaign_id": CAMPAIGNS[event.key][0],
                  "shown_at": event.timestamp.isoformat()}, None


def sent_click(event):
    """A click as the trackers send it: its id, the impression's, the time as text."""
    return event.key, {"click_id": f"{event.key}-{event.value}", "imp_id": event.key,
                       "clicked_at": event.timestamp.isoformat()}, None


def expected_attributions(schedule):
    """The job's batches as the model predicts them: the join model (the impressions'
    deduplication is by id alone, so their values are left out), each row given its
    campaign as the static join does."""
    by_id = Schedule(tuple(
        Pipe(tuple(Event(e.key, "x", e.timestamp) for e in s.events), input=s.input)
        if isinstance(s, Pipe) and s.input == "impressions" else s
        for s in schedule.steps))
    return [replace(batch, rows=tuple(
        {"imp_id": r["key"], "campaign_id": CAMPAIGNS[r["key"]][0],
         "campaign": CAMPAIGNS[r["key"]][1], "shown_at": r["left_ts"],
         "click_id": None if r["right_ts"] is None else f"{r['key']}-{r['right_value']}",
         "clicked_at": r["right_ts"]} for r in batch.rows))
        for batch in simulate(by_id, JOIN)]


def test_the_attributions_match_the_join_model_on_correlated_inputs(spark, production_paths):
    """Drawn impressions and clicks on them (out of order, late, repeated, across
    batches and restarts) through the job as it is: every batch's watermark, attributed
    rows and late drops are the join model's."""
    @sst.spark_settings(max_examples=EXAMPLES)
    @given(schedule=STORIES)
    @example(schedule=PINNED)
    def attributes(schedule):
        expected = expected_attributions(schedule)  # the model first: no Spark
        batches = sst.run_app(
            ad_attribution_job.main, schedule, spark=spark, output="attributed",
            trigger_interval=MINUTE, to_record={"impressions": landed_impression,
                                                "ad-clicks": sent_click},
            driver_options={"start_time": T0, "land_files": True,
                            "outputs": ["attributed"]})
        context = f"schedule:\n{schedule}"
        assert_matches_model(batches, expected, context=context)
        dropped = [b.num_rows_dropped_by_watermark for b in batches]
        assert dropped == [len(b.late) for b in expected], f"late drops {dropped}\n{context}"

    attributes()
