"""Tests of example 8: the Connect ad-attribution job in ``ad_attribution_job.py``, run as
it is, impressions landed as files, clicks piped into Kafka."""

from __future__ import annotations

import json
import sqlite3
from datetime import datetime, timedelta, timezone

import pytest

from examples import ad_attribution_job
from pyspark_streamtest import InvalidArgumentError, StreamingQueryFailedError

T0 = datetime(2024, 1, 1, tzinfo=timezone.utc)
MINUTE = timedelta(minutes=1)


def at(minutes: float) -> str:
    return (T0 + timedelta(minutes=minutes)).isoformat()


def impression(imp_id: str, campaign: str, minutes: float) -> str:
    return json.dumps({"imp_id": imp_id, "campaign_id": campaign, "shown_at": at(minutes)})


def click(click_id: str, imp_id: str, minutes: float) -> dict[str, str]:
    return {"click_id": click_id, "imp_id": imp_id, "clicked_at": at(minutes)}


@pytest.fixture
def job(topology_driver, spark, tmp_path, monkeypatch):
    """The job under the driver, its production paths pointed at the test's folder, the
    campaigns table written there; impressions are landed as files."""
    campaigns = str(tmp_path / "campaigns")
    spark.createDataFrame([("c1", "Winter sale"), ("c2", "Spring")],
                          "campaign_id STRING, campaign STRING").write.parquet(campaigns)
    for name, value in {"ADS_CAMPAIGNS": campaigns, "ADS_SQLITE": str(tmp_path / "ads.db"),
                        "ADS_CHECKPOINTS": str(tmp_path / "checkpoints"),
                        "ADS_ATTRIBUTED": str(tmp_path / "attributed")}.items():
        monkeypatch.setenv(name, value)
    driver = topology_driver.from_app(ad_attribution_job.main, start_time=T0, land_files=True)
    impressions = driver.create_input_topic("impressions")
    clicks = driver.create_input_topic("ad-clicks", value_serializer="json")
    return driver, impressions, clicks, tmp_path / "ads.db"


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
