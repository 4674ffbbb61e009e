"""Tests of example 1, in the style of Kafka Streams' TopologyTestDriver tests."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

from examples.kafka_json_windowed_counts import topology

T0 = datetime(2024, 1, 1, tzinfo=timezone.utc)


def view(page: str, user: str, second: int) -> dict[str, str]:
    return {"page": page, "user": user, "at": (T0 + timedelta(seconds=second)).isoformat()}


def test_counts_are_written_when_the_window_closes(topology_driver):
    driver = topology_driver(topology)
    views = driver.create_input_topic("page-views", key_serializer="string",
                                      value_serializer="json")
    raw = driver.create_input_topic("page-views", value_serializer="bytes")  # same topic
    counts = driver.create_output_topic("page-counts", key_deserializer="string",
                                        value_deserializer="json")

    views.pipe_input("u1", view("/home", "u1", 5))
    views.pipe_input("u2", view("/home", "u2", 20))
    views.pipe_input("u1", view("/cart", "u1", 50))
    raw.pipe_input("u3", b"{not json")  # skipped by the pipeline, does not stop it
    driver.process_all_available()
    assert counts.is_empty()  # watermark 50 - 30 = 20 s: the first minute is still open

    views.pipe_input("u2", view("/home", "u2", 95))  # watermark -> 65 s: minute 0 closes
    driver.process_all_available()
    assert counts.read_key_values_to_map() == {
        "/home": {"window_start": "2024-01-01T00:00:00.000Z", "page": "/home", "views": 2,
                  "users": 2},
        "/cart": {"window_start": "2024-01-01T00:00:00.000Z", "page": "/cart", "views": 1,
                  "users": 1},
    }

    views.pipe_input("u4", view("/home", "u4", 10))  # late: its window has been written
    driver.process_all_available()
    assert counts.is_empty()
    assert driver.batches[-1].num_rows_dropped_by_watermark == 1


def test_a_minute_closes_when_a_view_30_seconds_past_its_end_arrives(topology_driver):
    """Added for survivors of ``--streamtest-mutate`` (the 30-second watermark): minute
    0 is written once the watermark, the latest view's time less 30 seconds, reaches its
    end, 60 s; a view at 89 s leaves it open, one at 90 s closes it."""
    driver = topology_driver(topology)
    views = driver.create_input_topic("page-views", key_serializer="string",
                                      value_serializer="json")
    counts = driver.create_output_topic("page-counts", key_deserializer="string",
                                        value_deserializer="json")
    views.pipe_input("u1", view("/home", "u1", 5))
    views.pipe_input("u1", view("/cart", "u1", 89))
    driver.process_all_available()
    assert counts.is_empty()  # the watermark is 59 s

    views.pipe_input("u1", view("/cart", "u1", 90))
    driver.process_all_available()
    assert [key for key, _ in counts.read_key_values_to_list()] == ["/home"]
