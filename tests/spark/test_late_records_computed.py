"""Late records when the event time is computed in the query (parsed from a Kafka
value), with chained stateful operators and stream-stream joins: each named with the
operator that dropped it, checked against Spark's per-operator drop counts."""

from __future__ import annotations

from pathlib import Path

import pytest
from pyspark.sql import functions as F

from pyspark_streamtest import Topology, timeline_svg, write_timeline_picture
from pyspark_streamtest.core.records import LAZY_FIELDS, field_known
from tests.helpers import at

CLICK = "user STRING, url STRING, at TIMESTAMP"


def parsed(t: Topology, topic: str, schema: str) -> object:
    """The production shape: Kafka JSON values parsed, malformed ones skipped."""
    values = t.kafka_input(topic).select(
        F.from_json(F.col("value").cast("string"), schema).alias("v"))
    return values.select("v.*").where(F.col("at").isNotNull())


def windowed(t: Topology) -> None:
    clicks = parsed(t, "clicks", CLICK).withWatermark("at", "10 seconds")
    t.output("counts", clicks.groupBy(F.window("at", "10 seconds", "5 seconds")).count())


def dedup_then_sessions(t: Topology) -> None:
    clicks = parsed(t, "clicks", CLICK).withWatermark("at", "10 seconds")
    unique = clicks.dropDuplicatesWithinWatermark(["user", "url"])
    t.output("sessions", unique.groupBy(F.session_window("at", "5 seconds"), "user").count())


def clicked_ads(t: Topology) -> None:
    shown = parsed(t, "impressions", "ad STRING, at TIMESTAMP").select(
        F.col("ad").alias("shown_ad"), F.col("at").alias("shown_at")
    ).withWatermark("shown_at", "10 seconds")
    clicked = parsed(t, "ad-clicks", "ad STRING, at TIMESTAMP").select(
        F.col("ad").alias("clicked_ad"), F.col("at").alias("clicked_at")
    ).withWatermark("clicked_at", "20 seconds")
    t.output("clicked", shown.join(clicked, F.expr(
        "shown_ad = clicked_ad AND clicked_at BETWEEN shown_at AND shown_at + interval 1 minute")))


def json_topic(driver, topic: str):
    """A Kafka input piped with string keys and JSON values."""
    return driver.create_input_topic(topic, key_serializer="string", value_serializer="json")


def click(user: str, second: float, url: str = "/") -> dict[str, str]:
    return {"user": user, "url": url, "at": at(second).isoformat()}


def test_event_time_parsed_from_the_value_is_evaluated_as_the_query_does(topology_driver):
    driver = topology_driver(windowed)  # 10 s windows every 5 s, delay 10 s
    clicks = json_topic(driver, "clicks")
    raw = driver.create_input_topic("clicks", value_serializer="bytes")
    clicks.pipe_input("a", click("a", 31))
    driver.process_all_available()  # watermark 21 s
    clicks.pipe_input("b", click("b", 3))      # windows [-5, 5) and [0, 10): both ended
    clicks.pipe_input("c", click("c", 17))     # [10, 20) ended, [15, 25) open: partly late
    clicks.pipe_input("d", click("d", 25))     # on time
    raw.pipe_input("e", b"{not json")          # skipped by the filter: never late
    ran = driver.process_all_available()
    late = driver.late_records("counts")
    assert [(x.record.key, x.batch_id, x.watermark, x.dropped_windows, x.partial, x.operator,
             x.operator_id) for x in late] == [
        ("b", ran[0].batch_id, at(21), ((at(-5), at(5)), (at(0), at(10))), False,
         "stateStoreSave", 0),
        ("c", ran[0].batch_id, at(21), ((at(10), at(20)),), True, "stateStoreSave", 0),
    ]
    assert late[0].record.offset == 1 and late[0].record.partition is not None
    assert ran[0].num_rows_dropped_by_watermark == 3  # after partial aggregation: per window
    assert driver.batches[-1].late_records == tuple(late)


def test_chained_operators_name_the_one_that_dropped_each_record(topology_driver):
    driver = topology_driver(dedup_then_sessions)  # both compare with the same watermark
    clicks = json_topic(driver, "clicks")
    clicks.pipe_input("a", click("a", 1))
    clicks.pipe_input("a", click("a", 30, "/x"))
    driver.process_all_available()  # watermark 20 s
    clicks.pipe_input("b", click("b", 14))
    clicks.pipe_input("c", click("c", 25))
    clicks.pipe_input("a", click("a", 1))  # a duplicate, and late: the dedup drops it
    ran = driver.process_all_available()
    late = driver.late_records("sessions")
    assert [(x.record.key, x.operator, x.operator_id) for x in late] == [
        ("b", "dedupeWithinWatermark", 1), ("a", "dedupeWithinWatermark", 1)]
    # operator 0 is the sessions (Spark 3.5 names it "defaultName"), 1 the dedup
    assert [m.rows_dropped_by_watermark for m in ran[0].state_metrics] == [0, 2]
    assert ran[0].state_metrics[1].operator_name == "dedupeWithinWatermark"


def test_a_join_drops_a_side_by_its_own_event_time_column(topology_driver):
    driver = topology_driver(clicked_ads)
    shown = json_topic(driver, "impressions")
    clicked = json_topic(driver, "ad-clicks")
    shown.pipe_input("a", {"ad": "a", "at": at(100).isoformat()})
    clicked.pipe_input("a", {"ad": "a", "at": at(100).isoformat()})
    driver.process_all_available()  # watermark min(90, 80) = 80 s
    shown.pipe_input("s85", {"ad": "a", "at": at(85).isoformat()})
    clicked.pipe_input("c75", {"ad": "a", "at": at(75).isoformat()})  # 75 <= 80: late
    clicked.pipe_input("c85", {"ad": "a", "at": at(85).isoformat()})
    ran = driver.process_all_available()
    late = driver.late_records("clicked")
    assert [(x.record.key, x.record.topic, x.side, x.operator, x.watermark) for x in late] == [
        ("c75", "ad-clicks", "right", "symmetricHashJoin", at(80))]
    assert ran[0].num_rows_dropped_by_watermark == 1


SCENARIO = """\
name: the dedup drops a late, parsed click
start_time: 2024-01-01T00:00:00Z
inputs: {clicks: {key_serializer: string, value_serializer: json}}
steps:
  - pipe:
      topic: clicks
      records:
        - {key: a, value: {user: a, url: /, at: "2024-01-01T00:00:30Z"}}
  - process                      # watermark 20 s
  - pipe:
      topic: clicks
      records:
        - {key: b, value: {user: b, url: /, at: "2024-01-01T00:00:14Z"}}
  - process
  - expect_late: {count: 1}
"""


def test_scenario_expect_late_evaluates_the_parsed_event_time(tmp_path, spark):
    from pyspark_streamtest import run_scenario

    path = tmp_path / "late.streamtest.yaml"
    path.write_text(SCENARIO)
    result = run_scenario(path, topology=dedup_then_sessions, spark=spark)
    assert result.passed, (result.failure, result.error)
    failing = tmp_path / "wrong.streamtest.yaml"
    failing.write_text(SCENARIO.replace("count: 1", "count: 0"))
    result = run_scenario(failing, topology=dedup_then_sessions, spark=spark)
    assert not result.passed and "expected 0, actual 1" in str(result.failure)
    # the failure's timeline (and picture) has the event times the query parsed
    assert [b.input_event_times for b in result.batches if b.input_records] == [
        (at(30),), (at(14),)]


def test_the_picture_draws_records_at_the_event_time_parsed_from_the_value(
        topology_driver, tmp_path):
    driver = topology_driver(windowed)
    clicks = json_topic(driver, "clicks")
    raw = driver.create_input_topic("clicks", value_serializer="bytes")
    clicks.pipe_input("a", click("a", 31), timestamp=at(0))  # Kafka timestamp 0 s
    driver.process_all_available()
    clicks.pipe_input("b", click("b", 3), timestamp=at(0))
    raw.pipe_input("e", b"{not json", timestamp=at(0))
    driver.process_all_available()
    assert not any(field_known(b, name) for b in driver.batches for name in LAZY_FIELDS)
    path = write_timeline_picture(driver.evaluate_event_times(), tmp_path / "clicks.svg")
    assert [b.input_event_times for b in driver.batches if b.input_records] == [
        (at(31),), (at(3), None)]  # the unparsable value never reaches the watermark
    assert [x.record.key for x in driver.batches[-1].late_records] == ["b"]
    assert "window it was dropped from" in Path(path).read_text(encoding="utf-8")


def _dots(svg: str) -> list[float]:
    """The heights (cy) of the input records' dots, in the order of the batches and
    their records (the last circle is the legend's)."""
    import xml.etree.ElementTree as ET

    circles = ET.fromstring(svg).iter("{http://www.w3.org/2000/svg}circle")
    return [float(circle.get("cy")) for circle in circles][:-1]


def test_the_picture_of_driver_batches_stands_records_at_their_parsed_event_time(
        topology_driver):
    driver = topology_driver(windowed)
    clicks = json_topic(driver, "clicks")
    clicks.pipe_input("a", click("a", 31), timestamp=at(0))  # Kafka timestamps: all 0 s
    clicks.pipe_input("b", click("b", 40), timestamp=at(0))
    driver.process_all_available()
    clicks.pipe_input("c", click("c", 3), timestamp=at(0))   # late: behind watermark 30 s
    driver.process_all_available()
    batches = driver.batches
    # driver.batches evaluated nothing (no Spark job until a picture reads them)
    assert not any(field_known(b, name) for b in batches for name in LAZY_FIELDS)
    a, b, c = _dots(timeline_svg(batches))  # the obvious call: evaluated on first read
    assert b < a < c  # higher is later: 40 s, 31 s, 3 s (at their Kafka timestamp: level)
    assert (a - b) / 9 == pytest.approx((c - a) / 28, rel=0.02)  # to scale
    assert [b.input_event_times for b in batches if b.input_records] == [
        (at(31), at(40)), (at(3),)]
    assert [x.record.key for x in batches[-1].late_records] == ["c"]  # read by the picture
    assert timeline_svg(batches) == timeline_svg(driver.evaluate_event_times())


def test_event_times_and_late_records_first_read_after_close_are_none(topology_driver):
    driver = topology_driver(windowed)
    json_topic(driver, "clicks").pipe_input("a", click("a", 31), timestamp=at(0))
    driver.process_all_available()
    driver.close()
    assert {b.input_event_times for b in driver.batches} == {None}  # records at timestamps
    assert {b.late_records for b in driver.batches} == {None}  # not known


def parsed_expiring(t: Topology) -> None:
    from pyspark.sql.streaming.state import GroupStateTimeout

    from tests.spark.test_time_and_state import _expire_after_10s

    clicks = parsed(t, "clicks", CLICK).select("user", F.col("at").alias("ts"))
    t.output("activity", clicks.withWatermark("ts", "5 seconds").groupBy("user")
             .applyInPandasWithState(_expire_after_10s, "user STRING, count LONG, kind STRING",
                                     "count LONG", "Update", GroupStateTimeout.EventTimeTimeout),
             output_mode="update")


def test_grouped_state_with_event_time_timeouts_and_parsed_event_time(topology_driver):
    driver = topology_driver(parsed_expiring)
    clicks = json_topic(driver, "clicks")
    clicks.pipe_input("a", click("a", 30))
    driver.process_all_available()  # watermark 25 s
    clicks.pipe_input("b", click("b", 3))
    clicks.pipe_input("c", click("c", 26))
    ran = driver.process_all_available()
    assert [(x.record.key, x.watermark, x.operator_id) for x in driver.late_records("activity")
            ] == [("b", at(25), 0)]
    assert ran[0].num_rows_dropped_by_watermark == 1


def distinct_clicks(t: Topology) -> None:
    clicks = parsed(t, "clicks", CLICK).withWatermark("at", "10 seconds")
    t.output("distinct", clicks.distinct())  # a stateful aggregation over every column


def test_a_streaming_distinct_drops_by_its_event_time_column(topology_driver):
    driver = topology_driver(distinct_clicks)
    clicks = json_topic(driver, "clicks")
    clicks.pipe_input("a", click("a", 30))
    driver.process_all_available()  # watermark 20 s
    for key in ("b", "b", "c"):
        clicks.pipe_input(key, click("b", 14))  # the same late click three times
    ran = driver.process_all_available()
    assert [x.record.key for x in driver.late_records("distinct")] == ["b", "b", "c"]
    assert ran[0].num_rows_dropped_by_watermark == 3
