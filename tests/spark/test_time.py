"""Processing time: timeouts fire exactly when the clock passes them; Python's clock follows."""

from __future__ import annotations

import time
from datetime import datetime, timedelta, timezone

import pandas as pd
from pyspark.sql import functions as F
from pyspark.sql.streaming.state import GroupStateTimeout

from pyspark_streamtest import Topology
from tests.helpers import T0


def _session_timeout(key, frames, state):
    if state.hasTimedOut:
        (count,) = state.get
        state.remove()
        yield pd.DataFrame({"user": [key[0]], "count": [count], "kind": ["expired"]})
        return
    count = state.get[0] if state.exists else 0
    for frame in frames:
        count += len(frame)
    state.update((count,))
    state.setTimeoutDuration(5000)
    yield pd.DataFrame({"user": [key[0]], "count": [count], "kind": ["active"]})


def expiring_sessions(t: Topology) -> None:
    clicks = t.input("clicks", schema="user STRING")
    t.output(
        "sessions",
        clicks.groupBy("user").applyInPandasWithState(
            _session_timeout,
            "user STRING, count LONG, kind STRING",
            "count LONG",
            "Update",
            GroupStateTimeout.ProcessingTimeTimeout,
        ),
        output_mode="update",
    )


def test_processing_time_timeout_fires_at_the_first_trigger_after_it(topology_driver):
    driver = topology_driver(expiring_sessions)
    clicks = driver.create_input_topic("clicks")
    sessions = driver.create_output_topic("sessions")

    clicks.pipe_value_list([("a",), ("a",)])
    driver.process_all_available()  # batch at T0: timeout due at T0 + 5 s
    assert sessions.read_values_to_list() == [{"user": "a", "count": 2, "kind": "active"}]

    # Spark fires a processing-time timeout in the first batch whose timestamp is
    # strictly after it. With 1 s triggers and processing-time timeouts, every trigger
    # runs a batch: T0+1 s ... T0+5 s fire nothing.
    ran = driver.advance_wall_clock(timedelta(seconds=5))
    assert [b.processing_time - T0 for b in ran] == [timedelta(seconds=s) for s in range(1, 6)]
    assert sessions.is_empty()

    ran = driver.advance_wall_clock(timedelta(milliseconds=999))  # no trigger in this span
    assert ran == []
    assert sessions.is_empty()

    ran = driver.advance_wall_clock(timedelta(milliseconds=1))  # trigger at T0 + 6 s
    assert [b.processing_time for b in ran] == [T0 + timedelta(seconds=6)]
    assert sessions.read_records_to_list()[0].value == {
        "user": "a", "count": 2, "kind": "expired"
    }
    assert ran[0].num_state_rows_total == 0


def test_process_all_available_does_not_move_the_clock_or_spin(topology_driver):
    driver = topology_driver(expiring_sessions)
    driver.create_input_topic("clicks").pipe_input(("a",))
    ran = driver.process_all_available()
    # A data batch, then one timeout-only no-data batch at the same time; then it stops.
    assert [(b.num_input_rows, b.processing_time) for b in ran] == [(1, T0), (0, T0)]
    assert driver.current_time == T0
    assert driver.process_all_available()[-1].processing_time == T0


def stamped(t: Topology) -> None:
    events = t.input("events", schema="id INT")
    t.output("stamped", events.withColumn("now", F.current_timestamp()))


def test_current_timestamp_is_the_driver_processing_time(topology_driver):
    driver = topology_driver(stamped, start_time=datetime(2030, 5, 1, 12, tzinfo=timezone.utc))
    events = driver.create_input_topic("events")
    events.pipe_input({"id": 1})
    driver.advance_wall_clock(timedelta(milliseconds=1500))
    (record,) = driver.create_output_topic("stamped").read_records_to_list()
    assert record.value["now"] == datetime(2030, 5, 1, 12, 0, 1, tzinfo=timezone.utc)
    assert record.processing_time == record.value["now"]


def test_freeze_python_clock_follows_processing_time(topology_driver):
    driver = topology_driver(stamped, freeze_python_clock=True)
    assert datetime.now(timezone.utc) == T0
    assert time.time() == T0.timestamp()
    driver.advance_wall_clock(timedelta(seconds=90))
    assert datetime.now(timezone.utc) == T0 + timedelta(seconds=90)
    driver.close()
    assert datetime.now(timezone.utc).year >= 2025  # real time again
