"""The reference model's rules on hand-made schedules, and the strategies' contracts
(no Spark: the differential tests against Spark are in tests/spark/test_properties.py)."""

from __future__ import annotations

from datetime import timedelta

import pytest
from hypothesis import find, given, settings
from hypothesis.errors import InvalidArgument

from pyspark_streamtest import DEFAULT_START_TIME as T0
from pyspark_streamtest.core.time import to_ms
from pyspark_streamtest.testing import strategies as sst
from pyspark_streamtest.testing.model import (
    AdvanceWatermark,
    Deduplicate,
    Drain,
    Event,
    LatestValueTable,
    Pipe,
    Restart,
    Schedule,
    SessionCount,
    Tick,
    WindowedCount,
    global_watermark,
    last_values,
    simulate,
    windows_of,
)

S = timedelta(seconds=1)


def e(key, seconds, value="x"):
    return Event(key, value, T0 + seconds * S)


def test_window_assignment():
    assert windows_of(7_000, 5_000, 5_000) == [(5_000, 10_000)]
    assert windows_of(5_000, 5_000, 5_000) == [(5_000, 10_000)]  # start inclusive
    assert windows_of(7_000, 6_000, 2_000) == [(2_000, 8_000), (4_000, 10_000),
                                               (6_000, 12_000)]


def test_multiple_watermark_policy():
    assert global_watermark([5, 9]) == 5
    assert global_watermark([5, None, 9]) == 0  # an input without data counts as the epoch
    assert global_watermark([5, None, 9], policy="max") == 9
    assert global_watermark([None, None]) == 0


def test_append_windows_wait_for_the_watermark_and_a_no_data_batch_emits_them():
    op = WindowedCount(size=5 * S, delay=2 * S)
    batches = simulate(Schedule((Pipe((e("a", 1), e("a", 8))), Tick(), Tick(), Tick())), op)
    assert [(b.batch_id, len(b.events), [r["count"] for r in b.rows]) for b in batches] == [
        (0, 2, []), (1, 0, [1])]  # watermark 00:06 reached window end 00:05
    assert batches[1].watermark == T0 + 6 * S


def test_late_rows_use_the_previous_batch_watermark():
    op = WindowedCount(size=5 * S, delay=2 * S)
    # batch 1 runs with watermark 00:06 but drops by batch 0's (epoch): 00:03 counts
    counted = simulate(Schedule((Pipe((e("a", 8),)), Tick(), Pipe((e("a", 3),)), Tick())), op)
    assert counted[1].late == () and counted[1].rows[0]["count"] == 1
    # one no-data batch later the late-row watermark is 00:06: 00:03 is dropped
    dropped = simulate(Schedule((Pipe((e("a", 8),)), Tick(), Tick(), Pipe((e("a", 3),)),
                                 Tick())), op)
    assert dropped[2].late == (e("a", 3),)


def test_update_mode_emits_changed_windows_each_batch():
    op = WindowedCount(size=5 * S, delay=10 * S, mode="update")
    batches = simulate(Schedule((Pipe((e("a", 1),)), Tick(), Pipe((e("a", 2),)), Tick())), op)
    assert [[r["count"] for r in b.rows] for b in batches] == [[1], [2]]


def test_a_restart_forgets_the_owed_no_data_batch():
    op = WindowedCount(size=5 * S, delay=2 * S)
    kept = simulate(Schedule((Pipe((e("a", 1), e("a", 8))), Tick(), Tick())), op)
    restarted = simulate(Schedule((Pipe((e("a", 1), e("a", 8))), Tick(), Restart(), Drain())),
                         op)
    assert len(kept) == 2 and len(restarted) == 1


def test_a_forced_watermark_runs_a_no_data_batch_and_never_moves_back():
    op = WindowedCount(size=5 * S, delay=2 * S)
    batches = simulate(Schedule((Pipe((e("a", 1),)), Tick(), AdvanceWatermark(T0 + 30 * S),
                                 AdvanceWatermark(T0 + 10 * S))), op)
    epoch = T0.replace(year=1970)
    # the owed no-data batch runs first (drain), then one with the forced watermark
    assert [b.watermark for b in batches] == [epoch, T0 - 1 * S, T0 + 30 * S]
    assert [len(b.rows) for b in batches] == [0, 0, 1]  # the lower advance only drained


def test_sessions_merge_when_touching_and_emit_at_their_end():
    op = SessionCount(gap=3 * S, delay=0 * S)
    batches = simulate(Schedule((Pipe((e("a", 0), e("a", 3), e("a", 10))), Tick(), Drain())),
                       op)
    (emitted,) = [r for b in batches for r in b.rows]
    assert emitted["session_window"] == {"start": T0, "end": T0 + 6 * S}
    assert emitted["count"] == 2


def test_dedup_keeps_first_copies_until_the_watermark_passes():
    op = Deduplicate(delay=5 * S)
    batches = simulate(Schedule((Pipe((e("a", 1), e("a", 1))), Tick(), Pipe((e("a", 1),)),
                                 Tick())), op)
    assert [len(b.rows) for b in batches] == [1, 0]


def test_the_table_model_emits_tombstones_and_folds_to_last_values():
    changes = (e("a", 1, "x"), e("b", 1, "y"), e("a", 2, None))
    (batch,) = simulate(Schedule((Pipe(changes), Tick())), LatestValueTable())
    assert list(batch.rows) == [{"key": "a", "value": None}, {"key": "b", "value": "y"}]
    assert last_values(changes) == {"b": "y"}


@settings(max_examples=60)
@given(sst.events(max_disorder=3 * S, max_size=15))
def test_events_respect_the_disorder_bound(events):
    newest = None
    for event in events:
        if newest is not None:
            assert event.timestamp >= newest - 3 * S
        newest = event.timestamp if newest is None else max(newest, event.timestamp)


@settings(max_examples=60)
@given(sst.schedules(sst.events(max_size=12), max_batches=4, restarts=0.5))
def test_schedules_pipe_every_event_once_and_end_drained(schedule):
    pipes = [s for s in schedule.steps if isinstance(s, Pipe)]
    assert len(pipes) <= 4 and all(p.events for p in pipes)
    assert isinstance(schedule.steps[-1], Drain)
    assert str(schedule).count("\n") == len(schedule.steps) - 1


def test_a_counterexample_shrinks_to_a_few_records():
    """Look for a schedule where deduplication drops a record as late (out of up to 12
    records in up to 4 batches): hypothesis shrinks it to a few records and steps. Two
    records and an idle tick is the least; derandomized (as in CI) it stops at five in
    two batches: deleting a record shifts which records the schedule's batch splits
    (drawn one per record, after the records) fall before, which the shrinker cannot
    always undo."""
    op = Deduplicate(delay=2 * S)
    found = find(sst.schedules(sst.events(late=0.3, late_by=2 * S, max_size=12),
                               max_batches=4),
                 lambda s: any(b.late for b in simulate(s, op)),
                 settings=settings(max_examples=2000, database=None, derandomize=True))
    assert len(found.events) <= 5, str(found)
    assert len(found.steps) <= 8, str(found)


@pytest.mark.parametrize(("call", "message"), [
    (lambda: sst.events(late=1.5), "late=1.5 must be a fraction"),
    (lambda: sst.events(max_disorder=-S), "must be >= 0"),
    (lambda: sst.events(min_size=3, max_size=1), "need 0 <= min_size <= max_size"),
    (lambda: sst.events(resolution=timedelta(0)), "must be positive"),
    (lambda: sst.events(max_step=timedelta(milliseconds=1500)), "multiple of resolution"),
    (lambda: sst.events(late=0.1, late_by=timedelta(milliseconds=2500)),
     "late_by=.* must be a multiple of resolution"),
    (lambda: sst.events(resolution=30 * S, max_disorder=45 * S),
     r"max_disorder=.* must be a multiple of resolution=datetime.timedelta\(seconds=30\)"),
    (lambda: sst.events(start=T0.replace(tzinfo=None)), "timezone-aware"),
    (lambda: sst.schedules(max_batches=0), "max_batches=0 must be an int >= 1"),
    (lambda: sst.event_keys(count=0), "count=0 must be an int from 1 to 26"),
])
def test_bad_arguments_are_refused_up_front(call, message):
    with pytest.raises(InvalidArgument, match=message):
        call()


@pytest.mark.parametrize("resolution", [30 * S, timedelta(minutes=7), timedelta(milliseconds=3)],
                         ids=["30s", "7min", "3ms"])
def test_every_default_works_with_a_coarse_resolution(resolution):
    """A resolution that divides none of the defaults still works: max_step defaults to two
    steps, late_by to 10 s rounded up, and late_by is checked only when late > 0."""
    strategy = sst.events(resolution=resolution, min_size=5, max_size=5, late=0.5)
    events = find(strategy, lambda e: len({x.timestamp for x in e}) > 2,
                  settings=settings(database=None, derandomize=True))
    step = resolution // timedelta(milliseconds=1)
    assert all((to_ms(e.timestamp) - to_ms(T0)) % step == 0 for e in events)
    sst.events(resolution=resolution, late_by=timedelta(milliseconds=1))  # late=0: unused


def test_spark_settings_leave_out_what_costs_spark_runs_without_shrinking():
    from hypothesis import HealthCheck, Phase

    chosen = sst.spark_settings()
    assert chosen.deadline is None
    assert HealthCheck.too_slow in chosen.suppress_health_check
    assert Phase.explain not in chosen.phases
    assert Phase.shrink in chosen.phases and Phase.generate in chosen.phases
    assert chosen.report_multiple_bugs is False
    assert chosen.max_examples == 25
    changed = sst.spark_settings(max_examples=3, derandomize=True, database=None)
    assert (changed.max_examples, changed.derandomize, changed.database) == (3, True, None)
    assert changed.deadline is None  # the rest stays
    with pytest.raises(InvalidArgument):
        sst.spark_settings(max_examples=0)
