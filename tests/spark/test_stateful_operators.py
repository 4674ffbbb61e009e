"""dropDuplicates with a watermark and a stream-stream join, batch by batch."""

from __future__ import annotations

from pyspark.sql import functions as F

from pyspark_streamtest import Topology
from tests.helpers import at


def dedup(t: Topology) -> None:
    events = t.input("events", schema="id STRING, ts TIMESTAMP", timestamp_column="ts")
    t.output("unique", events.withWatermark("ts", "10 seconds").dropDuplicates(["id", "ts"]))


def test_duplicates_are_dropped_within_and_across_batches(topology_driver):
    driver = topology_driver(dedup)
    events = driver.create_input_topic("events")
    unique = driver.create_output_topic("unique")

    events.pipe_input({"id": "a"}, timestamp=at(1))
    events.pipe_input({"id": "a"}, timestamp=at(1))  # duplicate in the same batch
    events.pipe_input({"id": "b"}, timestamp=at(2))
    driver.process_all_available()
    assert sorted(v["id"] for v in unique.read_values_to_list()) == ["a", "b"]

    events.pipe_input({"id": "a"}, timestamp=at(1))  # duplicate of a row in state
    events.pipe_input({"id": "a"}, timestamp=at(5))  # same id, other event time: new
    ran = driver.process_all_available()
    assert unique.read_values_to_list() == [{"id": "a", "ts": at(5)}]
    assert ran[0].num_input_rows == 2

    # Event time 30 moves the watermark to 20: state for ts <= 20 is evicted, so an old
    # duplicate now arrives late and is dropped by the watermark, not by the state.
    events.pipe_input({"id": "c"}, timestamp=at(30))
    driver.process_all_available()
    assert unique.read_values_to_list() == [{"id": "c", "ts": at(30)}]
    events.pipe_input({"id": "a"}, timestamp=at(1))
    ran = driver.process_all_available()
    assert unique.is_empty()
    assert [b.num_rows_dropped_by_watermark for b in ran] == [1]


def ad_clicks(t: Topology) -> None:
    shows = t.input("impressions", schema="ad STRING, shown TIMESTAMP", timestamp_column="shown")
    clicks = t.input("clicks", schema="click_ad STRING, clicked TIMESTAMP",
                     timestamp_column="clicked")
    joined = shows.withWatermark("shown", "10 seconds").join(
        clicks.withWatermark("clicked", "20 seconds"),
        F.expr("click_ad = ad AND clicked >= shown AND clicked <= shown + interval 10 seconds"),
    )
    t.output("clicked_ads", joined.select("ad", "shown", "clicked"))


def test_stream_stream_join_matches_rows_from_different_batches(topology_driver):
    driver = topology_driver(ad_clicks)
    impressions = driver.create_input_topic("impressions")
    clicks = driver.create_input_topic("clicks")
    out = driver.create_output_topic("clicked_ads")

    impressions.pipe_input({"ad": "x"}, timestamp=at(0))
    impressions.pipe_input({"ad": "y"}, timestamp=at(1))
    driver.process_all_available()
    assert out.is_empty()

    clicks.pipe_input({"click_ad": "x"}, timestamp=at(4))   # matches x (within 10 s)
    clicks.pipe_input({"click_ad": "y"}, timestamp=at(30))  # too late for y's 10 s range
    ran = driver.process_all_available()
    assert [b.output_values for b in ran if b.is_data_batch] == [
        [{"ad": "x", "shown": at(0), "clicked": at(4)}]
    ]
    assert out.read_values_to_list() == [{"ad": "x", "shown": at(0), "clicked": at(4)}]
    # The global watermark is the minimum of the inputs' (max 1 s - 10 s and 30 s - 20 s).
    assert driver.watermark("clicked_ads") == at(-9)
