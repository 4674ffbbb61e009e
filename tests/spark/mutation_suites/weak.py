from datetime import datetime, timedelta, timezone

from windows_job import windowed_counts

T0 = datetime(2024, 1, 1, tzinfo=timezone.utc)


def at(seconds):
    return T0 + timedelta(seconds=seconds)


def test_every_click_is_counted(topology_driver):
    driver = topology_driver(windowed_counts, start_time=T0)
    events = driver.create_input_topic("events")
    for s in (0, 3, 9.5, 12):
        events.pipe_input(("u", at(s)))
    events.pipe_input(("u", at(1000)))  # moves the watermark past every window
    driver.process_all_available()
    rows = driver.create_output_topic("counts").read_values_to_list()
    final = {r["window"]["start"]: r["count"] for r in rows}
    assert sum(final.values()) == 4
