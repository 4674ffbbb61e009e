"""Timers, timeouts, windows with grace and state metrics, at controlled times."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pandas as pd
import pytest
from pyspark.sql import functions as F
from pyspark.sql.streaming.state import GroupStateTimeout

from pyspark_streamtest import Topology, TopologyError, TopologyTestDriver
from tests.helpers import at

EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)


def _expire_after_10s(key, frames, state):
    if state.hasTimedOut:
        (count,) = state.get
        state.remove()
        yield pd.DataFrame({"user": [key[0]], "count": [count], "kind": ["expired"]})
        return
    count = (state.get[0] if state.exists else 0)
    latest = None
    for frame in frames:
        count += len(frame)
        newest = frame["ts"].max()
        latest = newest if latest is None else max(latest, newest)
    state.update((count,))
    state.setTimeoutTimestamp(int(latest.timestamp() * 1000) + 10_000)
    yield pd.DataFrame({"user": [key[0]], "count": [count], "kind": ["seen"]})


def expiring(t: Topology) -> None:
    clicks = t.input("clicks", schema="user STRING, ts TIMESTAMP", timestamp_column="ts")
    t.output("activity", clicks.withWatermark("ts", "5 seconds").groupBy("user")
             .applyInPandasWithState(_expire_after_10s, "user STRING, count LONG, kind STRING",
                                     "count LONG", "Update", GroupStateTimeout.EventTimeTimeout),
             output_mode="update")


def test_event_time_timeout_fires_when_the_watermark_passes_it_not_a_millisecond_before(
    topology_driver,
):
    driver = topology_driver(expiring)
    clicks = driver.create_input_topic("clicks")
    activity = driver.create_output_topic("activity")
    clicks.pipe_input({"user": "a"}, timestamp=at(3))
    driver.process_all_available()
    assert activity.read_values_to_list() == [{"user": "a", "count": 1, "kind": "seen"}]

    # The timeout is 3 s + 10 s = 13 s. Spark fires it once the watermark is past it.
    driver.advance_watermark_to(at(13))
    assert activity.is_empty()
    ran = driver.advance_watermark_to(at(13) + timedelta(milliseconds=1))
    assert [(b.num_input_rows, b.watermark) for b in ran] == [
        (0, at(13) + timedelta(milliseconds=1))]
    assert activity.read_values_to_list() == [{"user": "a", "count": 1, "kind": "expired"}]


def now_and_then(t: Topology) -> None:
    ticks = t.input("ticks", schema="n INT")
    t.output("stamped", ticks.select("n", F.current_timestamp().alias("now")))


def test_current_timestamp_is_the_driver_processing_time(topology_driver):
    driver = topology_driver(now_and_then, start_time=at(100))
    ticks = driver.create_input_topic("ticks")
    ticks.pipe_input({"n": 1})
    driver.process_all_available()
    driver.advance_wall_clock(timedelta(seconds=2, milliseconds=500))
    ticks.pipe_input({"n": 2})
    driver.advance_wall_clock(timedelta(seconds=1))
    stamped = driver.create_output_topic("stamped").read_records_to_list()
    assert [(r.value["n"], r.value["now"], r.processing_time) for r in stamped] == [
        (1, at(100), at(100)), (2, at(103), at(103))]


def sliding_counts(mode: str):
    def topology(t: Topology) -> None:
        clicks = t.input("clicks", schema="user STRING, ts TIMESTAMP", timestamp_column="ts")
        t.output("counts", clicks.withWatermark("ts", "5 seconds")
                 .groupBy(F.window("ts", "10 seconds", "5 seconds")).count(),
                 output_mode=mode)  # type: ignore[arg-type]
    return topology


@pytest.mark.parametrize("mode", ["append", "update"])
def test_sliding_windows_with_grace_emit_exactly_per_batch(topology_driver, mode):
    driver = topology_driver(sliding_counts(mode))
    clicks = driver.create_input_topic("clicks")
    emitted = []
    for seconds in ([1, 6], [12], [4], [30]):  # 4 s arrives after watermark 7 s: late
        clicks.pipe_value_list([{"user": "u"}] * len(seconds),
                               start_timestamp=at(seconds[0]), advance=at(5) - at(0))
        emitted.append([
            (b.batch_id, b.watermark, sorted((v["window"]["start"], v["count"])
                                             for v in b.output_values))
            for b in driver.process_all_available()
        ])
    t = at
    # A click at s seconds counts in the windows starting at s rounded down to 5 s and
    # 5 s before that. The watermark after a batch is its max event time - 5 s.
    if mode == "append":  # a window is emitted once the watermark reaches its end
        assert emitted == [
            [(0, EPOCH, []), (1, t(1), [])],
            [(2, t(1), []), (3, t(7), [(t(-5), 1)])],
            [(4, t(7), [])],
            [(5, t(7), []), (6, t(25), [(t(0), 3), (t(5), 2), (t(10), 1)])],
        ]
    else:  # every window a batch changed is emitted at once
        assert emitted == [
            [(0, EPOCH, [(t(-5), 1), (t(0), 2), (t(5), 1)]), (1, t(1), [])],
            [(2, t(1), [(t(5), 2), (t(10), 1)]), (3, t(7), [])],
            [(4, t(7), [(t(0), 3)])],
            [(5, t(7), [(t(25), 1), (t(30), 1)]), (6, t(25), [])],
        ]
    # The click at 4 s is late for window [-5, 5) (it ended at 5 s, before the previous
    # batch's watermark 7 s) but not for [0, 10): Spark drops the one window's row and
    # counts the other. An input row can be half late.
    assert [b.num_rows_dropped_by_watermark for b in driver.batches] == [0, 0, 0, 0, 1, 0, 0]


def visits(t: Topology) -> None:
    clicks = t.input("clicks", schema="user STRING")
    t.output("visits", clicks.groupBy("user").count(), output_mode="update")


def test_state_metrics_per_batch_and_assert_num_state_rows(topology_driver):
    driver = topology_driver(visits)
    clicks = driver.create_input_topic("clicks")
    clicks.pipe_value_list([("a",), ("b",), ("a",)])
    driver.process_all_available()
    clicks.pipe_value_list([("c",)])
    driver.process_all_available()
    metrics = [b.state_metrics[0] for b in driver.batches]
    assert [(m.rows_total, m.rows_updated, m.rows_removed) for m in metrics] == [
        (2, 2, 0), (3, 1, 0)]
    assert all(m.memory_used_bytes > 0 for m in metrics)
    # As Spark's assertNumStateRows: updates summed since the start (2 + 1).
    driver.assert_num_state_rows("visits", total=3, updated=3, removed=0)
    driver.assert_num_state_rows("visits", total=[2], updated=[2], batch_id=0)
    with pytest.raises(AssertionError) as caught:
        driver.assert_num_state_rows("visits", total=4, updated=1)
    assert str(caught.value).splitlines() == [
        "state rows of output 'visits' differ (total after batch 1; updated, removed and "
        "dropped summed over no batch (none ran since the previous check)):",
        "  operator                       total (exp/act)               updated (exp/act)",
        "  0: stateStoreSave              4/3                           1/0  <-",
    ]
    with pytest.raises(AssertionError, match="output 'visits' has no batch 7"):
        driver.assert_num_state_rows("visits", total=1, batch_id=7)


def windowed(kind: str, mode: str):
    def topology(t: Topology) -> None:
        clicks = t.input("clicks", schema="user STRING, ts TIMESTAMP", timestamp_column="ts")
        column = (F.window("ts", "10 seconds") if kind == "tumbling"
                  else F.session_window("ts", "5 seconds"))
        t.output("counts", clicks.withWatermark("ts", "5 seconds")
                 .groupBy(column.alias("w"), "user").count(),
                 output_mode=mode)  # type: ignore[arg-type]
    return topology


def _run_steps(driver, steps):
    clicks = driver.create_input_topic("clicks")
    per_step = []
    for seconds in steps:
        for second in seconds:
            clicks.pipe_input({"user": "u"}, timestamp=at(second))
        per_step.append([
            (b.batch_id, b.watermark, b.num_rows_dropped_by_watermark,
             sorted((v["w"]["start"], v["w"]["end"], v["count"]) for v in b.output_values))
            for b in driver.process_all_available()
        ])
    return per_step


@pytest.mark.parametrize("mode", ["append", "update"])
def test_tumbling_windows_with_grace(topology_driver, mode):
    t = at
    got = _run_steps(topology_driver(windowed("tumbling", mode)), [[1, 6, 12], [4, 20], [8, 25]])
    # Watermarks after the steps: 12 - 5 = 7 s, 20 - 5 = 15 s, 25 - 5 = 20 s. The 4 s click
    # is in time (its window [0, 10) ends after 7 s); the 8 s click is late (ended by 15 s).
    if mode == "append":
        assert got == [
            [(0, EPOCH, 0, []), (1, t(7), 0, [])],
            [(2, t(7), 0, []), (3, t(15), 0, [(t(0), t(10), 3)])],
            [(4, t(15), 1, []), (5, t(20), 0, [(t(10), t(20), 1)])],
        ]
    else:
        assert got == [
            [(0, EPOCH, 0, [(t(0), t(10), 2), (t(10), t(20), 1)]), (1, t(7), 0, [])],
            [(2, t(7), 0, [(t(0), t(10), 3), (t(20), t(30), 1)]), (3, t(15), 0, [])],
            [(4, t(15), 1, [(t(20), t(30), 2)]), (5, t(20), 0, [])],
        ]


def test_session_windows_with_grace(topology_driver):
    t = at
    got = _run_steps(topology_driver(windowed("session", "append")), [[1, 4, 12], [30], [14, 28]])
    # Sessions close 5 s after their last click. Watermarks after the steps: 7 s, 25 s,
    # 25 s. The 14 s click is late (14 + 5 <= 25); the 28 s click joins [30, 35).
    assert got == [
        [(0, EPOCH, 0, []), (1, t(7), 0, [])],
        [(2, t(7), 0, []), (3, t(25), 0, [(t(1), t(9), 2), (t(12), t(17), 1)])],
        [(4, t(25), 1, [])],
    ]


def test_session_windows_refuse_update_mode_as_spark_does(spark):
    with pytest.raises(TopologyError, match=r"output 'counts': Spark refused to start its query: "
                                            r".*[Uu]pdate.* session window"):
        TopologyTestDriver(windowed("session", "update"), spark=spark)
    assert spark.streams.active == []
