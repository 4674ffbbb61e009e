from datetime import datetime, timedelta, timezone

from sessions_job import sessions

T0 = datetime(2024, 1, 1, tzinfo=timezone.utc)


def at(seconds):
    return T0 + timedelta(seconds=seconds)


def test_a_session_closes_after_its_gap(topology_driver):
    driver = topology_driver(sessions, start_time=T0)
    events = driver.create_input_topic("events")
    for s in (0, 4):
        events.pipe_input(("u", at(s)))
    driver.process_all_available()
    assert driver.create_output_topic("sessions").read_values_to_list() == []
    events.pipe_input(("u", at(19)))  # watermark 9 s: the session [0, 9) closes
    driver.process_all_available()
    assert driver.create_output_topic("sessions").read_values_to_list() == [
        {"session_window": {"start": at(0), "end": at(9)}, "user": "u", "count": 2}]
