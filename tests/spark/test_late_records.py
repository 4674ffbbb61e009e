"""Which records were dropped as late, checked against Spark's own drop counts."""

from __future__ import annotations

from datetime import timedelta

import pytest
from pyspark.sql import functions as F

from pyspark_streamtest import Topology
from tests.helpers import at, clicks_per_user
from tests.spark.test_stateful_operators import ad_clicks, dedup
from tests.spark.test_time_and_state import sliding_counts


def test_tumbling_window_drops_by_window_end_not_event_time(topology_driver):
    driver = topology_driver(clicks_per_user)  # 10 s windows, watermark delay 10 s
    clicks = driver.create_input_topic("clicks")
    for second in (1, 7, 21):
        clicks.pipe_input({"user": "a", "url": "/"}, timestamp=at(second))
    driver.process_all_available()  # watermark 21 - 10 = 11 s
    clicks.pipe_input({"user": "a", "url": "/late"}, timestamp=at(4))    # window [0, 10) ended
    clicks.pipe_input({"user": "b", "url": "/ok"}, timestamp=at(10.5))   # behind 11 s, but its
    ran = driver.process_all_available()                                 # window [10, 20) is open
    late = driver.late_records("counts")
    assert [(x.record.value["url"], x.batch_id, x.watermark, x.dropped_windows) for x in late] == [
        ("/late", ran[0].batch_id, at(11), ((at(0), at(10)),))]
    assert ran[0].num_rows_dropped_by_watermark == len(ran[0].late_records) == 1


def test_sliding_window_record_can_be_partly_late(topology_driver):
    driver = topology_driver(sliding_counts("append"))  # 10 s windows every 5 s, delay 5 s
    clicks = driver.create_input_topic("clicks")
    for second in (1, 6, 12):
        clicks.pipe_input({"user": "u"}, timestamp=at(second))
        driver.process_all_available()
    clicks.pipe_input({"user": "u"}, timestamp=at(4))  # watermark 7 s
    driver.process_all_available()
    (late,) = driver.late_records("counts")
    assert (late.record.timestamp, late.watermark, late.dropped_windows, late.partial) == (
        at(4), at(7), ((at(-5), at(5)),), True)


def sessions(t: Topology) -> None:
    clicks = t.input("clicks", schema="user STRING, ts TIMESTAMP", timestamp_column="ts")
    t.output("sessions", clicks.withWatermark("ts", "10 seconds")
             .groupBy(F.session_window("ts", "5 seconds"), "user").count())


def test_session_windows_and_dedup_match_sparks_counts(topology_driver):
    driver = topology_driver(sessions)
    clicks = driver.create_input_topic("clicks")
    clicks.pipe_value_list([{"user": "a"}, {"user": "a"}], start_timestamp=at(1),
                           advance=timedelta(seconds=29))  # 1 s and 30 s: watermark 20 s
    driver.process_all_available()
    clicks.pipe_input({"user": "b"}, timestamp=at(14))  # 14 + 5 <= 20: late
    clicks.pipe_input({"user": "c"}, timestamp=at(16))  # 16 + 5 > 20: kept
    ran = driver.process_all_available()
    assert [x.record.value["user"] for x in driver.late_records("sessions")] == ["b"]
    assert ran[0].num_rows_dropped_by_watermark == 1

    driver = topology_driver(dedup)
    events = driver.create_input_topic("events")
    events.pipe_value_list([{"id": "a"}, {"id": "b"}], start_timestamp=at(1),
                           advance=timedelta(seconds=29))
    driver.process_all_available()  # watermark 30 - 10 = 20 s
    events.pipe_value_list([{"id": "x"}, {"id": "y"}, {"id": "z"}], start_timestamp=at(19),
                           advance=timedelta(seconds=1))  # 19 s and 20 s late, 21 s kept
    ran = driver.process_all_available()
    assert [x.record.value["id"] for x in ran[0].late_records] == ["x", "y"]
    assert ran[0].num_rows_dropped_by_watermark == 2


def _mapped_dedup(t: Topology) -> None:
    from tests.spark.test_late_records_computed import CLICK, parsed

    clicks = parsed(t, "clicks", CLICK)
    t.output("unique", clicks.mapInPandas(lambda frames: frames, clicks.schema)
             .withWatermark("at", "10 seconds").dropDuplicatesWithinWatermark(["user"]))


def test_when_the_driver_cannot_tell_it_says_why(topology_driver):
    """A mapInPandas between the source and the operator cannot be replayed row by row:
    the driver names it instead of guessing."""
    from tests.spark.test_late_records_computed import click, json_topic

    driver = topology_driver(_mapped_dedup)
    clicks = json_topic(driver, "clicks")
    clicks.pipe_input("a", click("a", 31))
    driver.process_all_available()  # watermark 21 s
    clicks.pipe_input("b", click("b", 3))
    assert driver.process_all_available()[0].num_rows_dropped_by_watermark == 1
    with pytest.raises(ValueError, match=r"cannot tell which records output 'unique' drops as "
                                         r"late: a MapInPandas between the source and the "
                                         r"operator"):
        driver.late_records("unique")


def test_a_join_of_timestamp_columns_is_evaluated_too(topology_driver):
    driver = topology_driver(ad_clicks)  # delays 10 s and 20 s
    impressions = driver.create_input_topic("impressions")
    clicks = driver.create_input_topic("clicks")
    impressions.pipe_input({"ad": "a"}, timestamp=at(100))
    clicks.pipe_input({"click_ad": "a"}, timestamp=at(100))
    driver.process_all_available()  # watermark min(90, 80) = 80 s
    impressions.pipe_input({"ad": "b"}, timestamp=at(80))  # late on its side
    clicks.pipe_input({"click_ad": "b"}, timestamp=at(81))
    ran = driver.process_all_available()
    assert [(x.record.value["ad"], x.side) for x in driver.late_records("clicked_ads")] == [
        ("b", "left")]
    assert ran[0].num_rows_dropped_by_watermark == 1


def test_grouped_state_with_event_time_timeouts_drops_late_rows(topology_driver):
    from tests.spark.test_time_and_state import expiring  # applyInPandasWithState, delay 5 s

    driver = topology_driver(expiring)
    clicks = driver.create_input_topic("clicks")
    clicks.pipe_input({"user": "a"}, timestamp=at(30))
    driver.process_all_available()  # watermark 25 s
    clicks.pipe_input({"user": "b"}, timestamp=at(3))
    clicks.pipe_input({"user": "c"}, timestamp=at(26))
    ran = driver.process_all_available()
    assert [(x.record.value["user"], x.watermark) for x in ran[0].late_records] == [("b", at(25))]
    assert ran[0].num_rows_dropped_by_watermark == 1


def _filtered_counts(t: Topology) -> None:
    clicks = t.input("clicks", schema="user STRING, url STRING, ts TIMESTAMP",
                     timestamp_column="ts")
    t.output("counts", clicks.where(F.col("url") != "/health")
             .withWatermark("ts", "10 seconds")
             .groupBy(F.window("ts", "10 seconds"), "user").count())


def test_a_record_a_filter_removes_before_the_operator_is_not_late(topology_driver):
    """The watermark is on the input's record timestamp and there is one operator, but a
    filter before it removes rows: a filtered record behind the watermark never reaches
    the operator, so Spark does not drop it as late (its count says so), and neither do
    we."""
    driver = topology_driver(_filtered_counts)
    clicks = driver.create_input_topic("clicks")
    clicks.pipe_input({"user": "a", "url": "/"}, timestamp=at(21))
    driver.process_all_available()  # watermark 11 s
    clicks.pipe_input({"user": "a", "url": "/health"}, timestamp=at(2))  # filtered out
    clicks.pipe_input({"user": "a", "url": "/late"}, timestamp=at(3))    # late
    ran = driver.process_all_available()
    assert ran[0].num_rows_dropped_by_watermark == 1
    late = driver.late_records("counts")
    assert [(x.record.value["url"], x.batch_id, x.watermark) for x in late] == [
        ("/late", ran[0].batch_id, at(11))]


def _shifted(t: Topology) -> None:
    clicks = t.input("clicks", schema="user STRING, ts TIMESTAMP", timestamp_column="ts")
    moved = clicks.withColumn("ts", F.col("ts") + F.expr("INTERVAL 100 SECONDS"))
    t.output("unique", moved.withWatermark("ts", "10 seconds").dropDuplicates(["user", "ts"]))


def test_an_event_time_column_redefined_in_the_query_is_not_the_piped_timestamp(
        topology_driver):
    """withColumn("ts", ts + 100 s) keeps the input's column name but not its values:
    Spark compares the query's ts with the watermark, and so does the driver (it
    evaluates the plan instead of reading the piped timestamps)."""
    driver = topology_driver(_shifted)
    clicks = driver.create_input_topic("clicks")
    clicks.pipe_input({"user": "a"}, timestamp=at(30))
    driver.process_all_available()  # the query's ts is 130 s: watermark 120 s
    clicks.pipe_input({"user": "b"}, timestamp=at(25))  # 125 s in the query: kept
    clicks.pipe_input({"user": "c"}, timestamp=at(15))  # 115 s in the query: late
    ran = driver.process_all_available()
    assert ran[0].num_rows_dropped_by_watermark == 1
    assert [x.record.value["user"] for x in driver.late_records("unique")] == ["c"]
