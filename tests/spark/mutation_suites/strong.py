from datetime import datetime, timedelta, timezone

from windows_job import windowed_counts

T0 = datetime(2024, 1, 1, tzinfo=timezone.utc)


def at(seconds):
    return T0 + timedelta(seconds=seconds)


def window(start, count):
    return {"window": {"start": at(start), "end": at(start + 10)}, "user": "u", "count": count}


def test_a_window_closes_when_the_watermark_passes_its_end(topology_driver):
    driver = topology_driver(windowed_counts, start_time=T0)
    events = driver.create_input_topic("events")
    counts = driver.create_output_topic("counts")
    events.pipe_input(("u", at(0)))
    events.pipe_input(("u", at(19)))  # watermark 19 - 10 = 9 s: [0, 10) stays open
    driver.process_all_available()
    assert counts.is_empty()
    events.pipe_input(("u", at(20)))  # watermark 10 s: [0, 10) closes
    driver.process_all_available()
    assert counts.read_values_to_list() == [window(0, 1)]


def test_a_record_on_a_window_s_edge_counts_in_the_next(topology_driver):
    driver = topology_driver(windowed_counts, start_time=T0)
    events = driver.create_input_topic("events")
    for s in (0, 9.999, 10, 30):
        events.pipe_input(("u", at(s)))
    driver.process_all_available()
    assert driver.create_output_topic("counts").read_values_to_list() == [
        window(0, 2), window(10, 1)]
