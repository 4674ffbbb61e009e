"""Tests of ``examples/sessions_job.py``, the job unchanged: a session closes only once
the watermark is past its timeout, the nightly backfill ends and the next run goes on,
a retried batch upserts the same rows, and no event is lost (a property over
generated out-of-order streams)."""

from __future__ import annotations

import itertools
import os
import sqlite3
from datetime import datetime, timedelta, timezone

import pytest
from hypothesis import given
from hypothesis import strategies as st

from examples.sessions_job import main
from pyspark_streamtest import TopologyTestDriver
from pyspark_streamtest.testing import strategies as sst

T0 = datetime(2024, 1, 1, tzinfo=timezone.utc)
M = timedelta(minutes=1)


@pytest.fixture(scope="module")
def users(spark):
    spark.createDataFrame([("a", "pro")], "user STRING, plan STRING") \
        .createOrReplaceTempView("users")
    yield
    spark.catalog.dropTempView("users")


def event(user: str, minute: float, page: str = "/") -> dict[str, str]:
    return {"user": user, "page": page, "at": (T0 + minute * M).isoformat()}


def stored(database) -> list[tuple]:
    if not os.path.exists(database):
        return []
    with sqlite3.connect(database) as db:
        return db.execute("SELECT user, plan, start, end, events FROM sessions "
                          "ORDER BY user, start").fetchall()


def test_a_session_closes_only_once_the_watermark_is_past_its_timeout(
        topology_driver, users, tmp_path):
    database = str(tmp_path / "sessions.db")
    driver = topology_driver.from_app(main, start_time=T0, argv=["--database", database])
    events = driver.create_input_topic("app-events", value_serializer="json")
    events.pipe_value_list([event("a", 0), event("a", 5), event("b", 6)])
    driver.advance_wall_clock(M)
    # a's session times out at 5 + 30 = 35 min; the watermark is the latest event
    # time minus 10 minutes. At 45 min it is 35 min: at the timeout, not past it.
    events.pipe_input(None, event("c", 45))
    driver.advance_wall_clock(2 * M)
    assert driver.watermark("sessions") == T0 + 35 * M
    assert stored(database) == []
    # one millisecond later the watermark passes it: a closes (b's timeout, 36 min, not
    # yet), in the batch after the one that moved the watermark
    events.pipe_input(None, {**event("c", 45), "at": (T0 + 45 * M + timedelta(
        milliseconds=1)).isoformat()})
    ran = driver.advance_wall_clock(2 * M)
    assert [b.is_data_batch for b in ran] == [True, False]
    assert stored(database) == [("a", "pro", "2024-01-01T00:00:00", "2024-01-01T00:05:00", 2)]


def test_the_backfill_reads_in_limited_batches_ends_and_the_next_run_goes_on(
        topology_driver, users, tmp_path):
    database = str(tmp_path / "sessions.db")
    driver = topology_driver.from_app(main, start_time=T0, argv=[
        "--trigger", "availableNow", "--max-offsets", "2", "--database", database])
    assert driver.ended_outputs == ("sessions",)  # the first run found an empty topic
    events = driver.create_input_topic("app-events", value_serializer="json")
    events.pipe_value_list([event("a", 0), event("b", 1), event("a", 2), event("b", 50),
                            event("a", 51)])
    ran = driver.restart()  # the next night's run
    assert [b.num_input_rows for b in ran if b.is_data_batch] == [2, 2, 1]
    assert not driver.is_running
    # the watermark reached 41 min: a's first session (last event at 2 min) closed, and
    # b's (1 min), each with the events before the gap
    assert [(u, n) for u, _, _, _, n in stored(database)] == [("a", 2), ("b", 1)]
    events.pipe_value_list([event("a", 120)])
    driver.restart()
    assert [(u, n) for u, _, _, _, n in stored(database)] == [
        ("a", 2), ("a", 1), ("b", 1), ("b", 1)]


def test_a_retried_batch_upserts_the_same_rows(topology_driver, users, tmp_path):
    database = str(tmp_path / "sessions.db")
    driver = topology_driver.from_app(main, start_time=T0, argv=["--database", database])
    events = driver.create_input_topic("app-events", value_serializer="json")
    events.pipe_value_list([event("a", 0), event("a", 1)])
    driver.advance_wall_clock(M)
    events.pipe_input(None, event("z", 60))  # the watermark to 50 min
    driver.advance_wall_clock(M)
    # the batch that closes a's session upserts it, then dies before its commit; Spark
    # runs the same batch again and its upsert writes the same row, not a second one
    driver.crash_before_commit("sessions")
    ran = driver.advance_wall_clock(M)
    assert [(b.batch_id, b.attempt, b.crashed) for b in ran] == [
        (ran[0].batch_id, 1, "before_commit"), (ran[0].batch_id, 2, None)]
    assert [(u, n) for u, _, _, _, n in stored(database)] == [("a", 2)]


# A stream of app events (users, minutes within three hours) in the order they arrive,
# and where the batches cut it.
streams = st.lists(st.tuples(st.sampled_from(["a", "b", "c"]),
                             st.integers(min_value=0, max_value=180)),
                   min_size=1, max_size=12)
cuts = st.lists(st.integers(min_value=1, max_value=11), max_size=2, unique=True)


@pytest.fixture(scope="module")
def sessions_driver(spark, users, tmp_path_factory):
    """One driver for every example, reset at the start of each (the property-testing
    guide's advice: a new driver per example would start the job's query each time)."""
    database = str(tmp_path_factory.mktemp("sessions") / "sessions.db")
    with TopologyTestDriver.from_app(main, spark=spark, start_time=T0,
                                     argv=["--database", database]) as driver:
        yield driver, database


@sst.spark_settings(max_examples=int(os.environ.get("STREAMTEST_EXAMPLES", "15")))
@given(stream=streams, cut_at=cuts)
def test_every_event_is_in_one_closed_session_or_named_late(sessions_driver, stream, cut_at):
    """Whatever the order the events arrive in and the batches they come in, once the
    watermark has passed every session's timeout, each event is counted in exactly one
    stored session or is one of the driver's late records: none is lost and none
    counted twice. (Its first versions lost events: Spark admits a row behind the
    watermark when the batch before had a lower one, and the job merged such a
    straggler into a later session, or set a timeout Spark refuses.)"""
    driver, database = sessions_driver
    driver.reset()
    if os.path.exists(database):
        os.remove(database)
    events = driver.create_input_topic("app-events", value_serializer="json")
    bounds = [0, *sorted(c for c in cut_at if c < len(stream)), len(stream)]
    for start, end in itertools.pairwise(bounds):
        events.pipe_value_list([event(user, minute) for user, minute in stream[start:end]])
        driver.advance_wall_clock(M)
    events.pipe_input(None, event("zz", 24 * 60))  # a day later: every session closes
    driver.advance_wall_clock(2 * M)
    late = driver.late_records("sessions")
    sessions = [s for s in stored(database) if s[0] != "zz"]
    assert sum(n for _, _, _, _, n in sessions) + len(late) == len(stream)
    assert all(start <= end for _, _, start, end, _ in sessions)
