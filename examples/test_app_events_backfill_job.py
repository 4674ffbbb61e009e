"""Tests of ``examples/app_events_backfill_job.py``, the job unchanged: its read limit
makes Spark's batches, its backfill ends, its lag monitor writes Kafka from
``foreachBatch`` and survives a crash between its two writes."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

from examples.app_events_backfill_job import main

T0 = datetime(2024, 1, 1, tzinfo=timezone.utc)
TOPICS = ["app-events-web", "app-events-mobile", "billing"]


def event(event_id: str, kind: str, second: int) -> dict[str, str]:
    return {"event_id": event_id, "user": "u1", "kind": kind,
            "at": (T0 + timedelta(seconds=second)).isoformat()}


def test_the_read_limit_makes_the_batches_production_makes(topology_driver):
    driver = topology_driver.from_app(main, topics=TOPICS, start_time=T0,
                                      outputs=["per_minute"])
    web = driver.create_input_topic("app-events-web", value_serializer="json")
    mobile = driver.create_input_topic("app-events-mobile", value_serializer="json")
    web.pipe_value_list([event(f"w{i}", "click", 1) for i in range(700)])
    mobile.pipe_value_list([event(f"m{i}", "view", 1) for i in range(500)])
    ran = driver.advance_wall_clock(timedelta(minutes=3))  # the job's 1-minute trigger
    # maxOffsetsPerTrigger=500 over two topics: 291 + 208 twice, then 118 + 84
    assert [(b.processing_time - T0, b.num_input_rows) for b in ran] == [
        (timedelta(minutes=1), 499), (timedelta(minutes=2), 499), (timedelta(minutes=3), 202)]
    # update mode: each batch writes the counts it changed, before the minute closes
    counts = driver.create_output_topic("events-per-minute", key_deserializer="string",
                                        value_deserializer="json")
    assert [v["count"] for _, v in counts.read_key_values_to_list()][-2:] in (
        [700, 500], [500, 700])


def test_a_backfill_reads_its_backlog_ends_and_the_next_run_goes_on(topology_driver):
    driver = topology_driver.from_app(main, topics=TOPICS, start_time=T0,
                                      argv=["--trigger", "availableNow", "--max-offsets", "2"])
    assert not driver.is_running  # the topics were empty when the job started
    web = driver.create_input_topic("app-events-web", value_serializer="json")
    raw = driver.create_input_topic("app-events-web", value_serializer="bytes")
    per_minute = driver.create_output_topic("events-per-minute", key_deserializer="string",
                                            value_deserializer="json")
    dlq = driver.create_output_topic("app-events-dlq", value_deserializer="bytes")
    web.pipe_input(None, event("e1", "click", 5), headers={"trace": "t-1"})
    web.pipe_input(None, event("e1", "click", 6))  # the same event again: dropped
    raw.pipe_input(None, b"{not json", headers={"trace": "t-2"})
    web.pipe_input(None, event("e2", "view", 70))
    driver.restart()  # the next scheduled run: the backlog in batches of 2
    assert driver.ended_outputs == ("dead_letters", "per_minute", "lag")
    assert [r.headers for r in dlq.read_records_to_list()] == [(("trace", b"t-2"),)]
    assert {k: v["count"] for k, v in per_minute.read_key_values_to_map().items()} == {
        "click": 1, "view": 1}
    counted = [b.num_input_rows for b in driver.batches if b.output == "per_minute"]
    assert counted[:2] == [2, 2]  # the limit, then what was left

    web.pipe_input(None, event("e3", "click", 200))
    driver.restart()
    assert per_minute.read_key_values_to_list() == [
        ("click", {"minute": "2024-01-01T00:03:00.000Z", "count": 1})]

    # The watermark is the newest event time less 2 minutes (00:01:20 after e3): e5 at
    # 00:01:50 is on time (a 1-minute delay would drop it), and e4 at 00:05:00 moves the
    # watermark to 00:03:00, past e1's 00:00:05 + 2 minutes: its id is forgotten (a
    # 3-minute delay would still hold it), so e1 sent again counts.
    web.pipe_input(None, event("e4", "click", 300))
    web.pipe_input(None, event("e5", "view", 110))
    driver.restart()
    assert {k: (v["minute"][11:16], v["count"])
            for k, v in per_minute.read_key_values_to_map().items()} == {
        "click": ("00:05", 1), "view": ("00:01", 2)}
    web.pipe_input(None, event("e1", "click", 350))
    driver.restart()
    assert per_minute.read_key_values_to_list() == [
        ("click", {"minute": "2024-01-01T00:05:00.000Z", "count": 2})]


def test_the_lag_monitor_survives_a_crash_between_its_two_writes(topology_driver):
    driver = topology_driver.from_app(main, topics=TOPICS, start_time=T0, outputs=["lag"])
    web = driver.create_input_topic("app-events-web", value_serializer="json")
    lag = driver.create_output_topic("consumer-lag", key_deserializer="string",
                                     value_deserializer="string")
    audit = driver.create_output_topic("audit", value_deserializer="json")
    driver.crash_after_write("lag", 1)  # consumer-lag written, then the batch dies
    web.pipe_value_list([event("e1", "click", 1), event("e2", "click", 2)])
    ran = driver.advance_wall_clock(timedelta(minutes=1))
    assert [(b.attempt, b.crashed) for b in ran] == [(1, "after_write_1"), (2, None)]
    # at-least-once: the lag of batch 0 twice, the audit once
    assert lag.read_key_values_to_list() == [("0", "0"), ("0", "0")]
    assert [v["event_id"] for v in audit.read_values_to_list()] == ["e1", "e2"]
    web.pipe_input(None, event("e3", "view", 3))
    driver.advance_wall_clock(timedelta(minutes=1))
    assert lag.read_key_values_to_list() == [("1", "2")]  # 3 held, 1 read
