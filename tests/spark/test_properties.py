"""Property tests: the reference model against real Spark on generated schedules.

Every test builds the model's own pipeline (``Operator.topology()``), runs a generated
schedule through a fresh driver and checks the batches against :func:`simulate`, plus
the invariants that hold whatever the input. Examples per test: ``STREAMTEST_EXAMPLES``
(default 15; the tox matrix runs 8 per Spark line).
"""

from __future__ import annotations

import os
from datetime import timedelta

import pytest
from hypothesis import example, given, settings

from pyspark_streamtest import DEFAULT_START_TIME as T0
from pyspark_streamtest import TopologyTestDriver
from pyspark_streamtest.testing import strategies as sst
from pyspark_streamtest.testing.invariants import (
    assert_matches_model,
    assert_no_late_rows,
    assert_same_final_results,
    assert_same_history,
    assert_table_matches_changelog,
    assert_watermark_never_goes_back,
)
from pyspark_streamtest.testing.model import (
    AdvanceWatermark,
    Deduplicate,
    Event,
    LatestValueTable,
    Operator,
    Pipe,
    Restart,
    Schedule,
    SessionCount,
    Tick,
    WindowedCount,
    global_watermark,
    simulate,
)

EXAMPLES = int(os.environ.get("STREAMTEST_EXAMPLES", "15"))
examples = settings(max_examples=EXAMPLES)
S = timedelta(seconds=1)


def run(spark, operator: Operator, schedule: Schedule):
    with TopologyTestDriver(operator.topology(), spark=spark) as driver:
        batches = sst.run_schedule(driver, schedule)
        table = None
        if isinstance(operator, LatestValueTable):
            table = driver.create_output_topic(
                "out", key_deserializer="string",
                value_deserializer="string").read_key_values_to_map(tombstones="delete")
    return batches, table


def check(spark, operator: Operator, schedule: Schedule):
    batches, table = run(spark, operator, schedule)
    assert_matches_model(batches, simulate(schedule, operator),
                         context=f"{operator}\nschedule:\n{schedule}")
    assert_watermark_never_goes_back(batches)
    return batches, table


def _at_the_late_watermark(newest_s: int, boundary_s: int) -> Schedule:
    """An event at ``newest_s`` sets the watermark; a no-data batch runs with it; then
    an event at ``boundary_s`` (the event time or window end that equals the previous
    batch's watermark) arrives in the next batch: late, as Spark's ``<=`` says."""
    return Schedule((Pipe((Event("a", "x", T0 + newest_s * S),)), Tick(), Tick(),
                     Pipe((Event("b", "y", T0 + boundary_s * S),)), Tick(), Tick()))


disordered = sst.events(max_disorder=4 * S, late=0.15, late_by=4 * S, max_size=10)


@examples
@given(schedule=sst.schedules(disordered, max_batches=4, watermark_advances=0.2))
@example(schedule=_at_the_late_watermark(9, 4))  # window [0, 5) ends at watermark 5
def test_tumbling_windows_append(spark, schedule):
    operator = WindowedCount(size=5 * S, delay=4 * S, mode="append")
    batches, _ = check(spark, operator, schedule)
    assert_no_late_rows(batches, lambda row: row["window"]["end"])


@examples
@given(schedule=sst.schedules(disordered, max_batches=4))
def test_tumbling_windows_update(spark, schedule):
    operator = WindowedCount(size=5 * S, delay=4 * S, mode="update")
    batches, _ = check(spark, operator, schedule)
    assert_no_late_rows(batches, lambda row: row["window"]["end"])


@examples
@given(schedule=sst.schedules(disordered, max_batches=4))
@example(schedule=Schedule((  # 00:00:01 is behind the previous batch's watermark 00:06
    Pipe((Event("a", "x", T0 + 10 * S),)), Tick(), Pipe((Event("b", "x", T0 + 10 * S),)),
    Tick(), Pipe((Event("c", "x", T0 + 1 * S),)), Tick())))
def test_tumbling_windows_complete_drop_nothing(spark, schedule):
    """Complete mode counts rows that append or update mode would drop as late."""
    operator = WindowedCount(size=5 * S, delay=4 * S, mode="complete")
    with TopologyTestDriver(operator.topology(), spark=spark) as driver:
        batches = sst.run_schedule(driver, schedule)
        assert driver.late_records("out") == []
    assert_matches_model(batches, simulate(schedule, operator),
                         context=f"{operator}\nschedule:\n{schedule}")
    assert all(b.num_rows_dropped_by_watermark == 0 for b in batches)


@examples
@given(schedule=sst.schedules(disordered, max_batches=4))
def test_sliding_windows_append(spark, schedule):
    check(spark, WindowedCount(size=6 * S, slide=2 * S, delay=3 * S, mode="append"), schedule)


def _touching(split: bool) -> Schedule:
    """Two events of one key exactly one gap (3 s) apart, in one batch or two."""
    first, second = Event("a", "x", T0), Event("a", "x", T0 + 3 * S)
    steps = ((Pipe((first,)), Tick(), Pipe((second,))) if split
             else (Pipe((first, second)),))
    return Schedule((*steps, Tick(), AdvanceWatermark(T0 + 20 * S)))


@examples
@given(schedule=sst.schedules(sst.events(max_disorder=3 * S, late=0.15, late_by=3 * S,
                                         max_step=3 * S, max_size=10), max_batches=4))
@example(schedule=_touching(split=False))
@example(schedule=_touching(split=True))
def test_session_windows_append(spark, schedule):
    check(spark, SessionCount(gap=3 * S, delay=2 * S), schedule)


@examples
@given(schedule=sst.schedules(sst.events(max_disorder=3 * S, late=0.15, late_by=3 * S,
                                         duplicates=0.3, max_size=10), max_batches=4))
@example(schedule=_at_the_late_watermark(10, 7))  # event time 7 == watermark 7
def test_deduplication(spark, schedule):
    batches, _ = check(spark, Deduplicate(delay=3 * S), schedule)
    assert_no_late_rows(batches, lambda row: row["ts"])


@examples
@given(schedule=sst.schedules(sst.events(tombstones=0.3, key_skew=0.5, max_size=10),
                              max_batches=4))
def test_latest_value_table_with_tombstones(spark, schedule):
    _, table = check(spark, LatestValueTable(), schedule)
    assert_table_matches_changelog(table, schedule.events)


@examples
@given(first=sst.schedules(sst.events(max_size=10), max_batches=4),
       second_split=sst.schedules(sst.events(max_size=0), max_batches=1))
def test_in_order_results_do_not_depend_on_batching(spark, first, second_split):
    """The same in-order events in one batch or in several: the same final windows."""
    operator = WindowedCount(size=5 * S, delay=2 * S, mode="update")
    one_batch = Schedule((Pipe(first.events), *second_split.steps)) if first.events \
        else second_split
    many, _ = run(spark, operator, first)
    single, _ = run(spark, operator, one_batch)
    assert_same_final_results(many, single, key=lambda r: (r["key"], r["window"]["start"]))


@examples
@given(schedule=sst.schedules(disordered, max_batches=4, restarts=0.5))
def test_restarts_change_nothing_unless_a_no_data_batch_was_owed(spark, schedule):
    """A restart at a batch boundary changes no batch, watermark or row, except where
    Spark owed a no-data batch at the restart (model rule 4): then Spark forgets it
    until data arrives, and both runs still match the model."""
    operator = WindowedCount(size=5 * S, delay=4 * S, mode="append")
    with_restarts, _ = check(spark, operator, schedule)
    without, _ = check(spark, operator, schedule.without_restarts())
    predicted = [(b.batch_id, b.watermark, b.rows) for b in simulate(schedule, operator)]
    unrestarted = [(b.batch_id, b.watermark, b.rows)
                   for b in simulate(schedule.without_restarts(), operator)]
    if predicted == unrestarted:
        assert_same_history(with_restarts, without)


def test_a_restart_forgets_the_owed_no_data_batch_until_data_arrives(spark):
    """Pinned: the window [00:00, 00:05) is due after batch 0 (watermark 00:08). Without
    a restart the next trigger runs a no-data batch that emits it; after a restart no
    batch runs until new data, whose batch then emits it."""
    due = Pipe((Event("a", "x", T0), Event("a", "x", T0 + 12 * S)))
    later = Pipe((Event("b", "y", T0 + 13 * S),))
    operator = WindowedCount(size=5 * S, delay=4 * S, mode="append")
    window = {"key": "a", "window": {"start": T0, "end": T0 + 5 * S}, "count": 1}
    restarted = Schedule((due, Tick(), Restart(), Tick(), Tick(), later, Tick()))
    batches, _ = check(spark, operator, restarted)
    assert [(b.batch_id, b.is_data_batch, b.output_values) for b in batches] == [
        (0, True, []), (1, True, [window])]
    kept = Schedule((due, Tick(), Tick(), Tick(), later, Tick()))
    batches, _ = check(spark, operator, kept)
    assert [(b.batch_id, b.is_data_batch, b.output_values) for b in batches] == [
        (0, True, []), (1, False, [window]), (2, True, [])]


def two_watermarks(t):
    """Two inputs with their own delays, unioned: Spark keeps one watermark per input
    and combines them with the multiple-watermark policy."""
    schema = "key STRING, value STRING, ts TIMESTAMP"
    fast = t.input("fast", schema=schema, timestamp_column="ts").withWatermark("ts", "2 seconds")
    slow = t.input("slow", schema=schema, timestamp_column="ts").withWatermark("ts", "5 seconds")
    t.output("out", fast.unionByName(slow).dropDuplicates(["key", "value", "ts"]))


@pytest.mark.parametrize("policy", ["min", "max"])
def test_the_multiple_watermark_policy_matches_the_model(spark, policy):
    """global_watermark against Spark: per input max event time minus its delay, an
    input without event time yet counting as the epoch, the global value never going
    back; and the driver reports each batch's watermark after as the next one's."""
    steps = [("fast", 20), ("slow", 10), ("slow", 30), ("fast", 40), ("slow", 50)]
    delays = {"fast": 2, "slow": 5}
    epoch, ms = T0.replace(year=1970), timedelta(milliseconds=1)
    per_input: dict[str, int] = {}
    expected, current = [], 0
    for name, seconds in steps:
        at = (T0 + (seconds - delays[name]) * S - epoch) // ms
        per_input[name] = max(per_input.get(name, 0), at)
        combined = global_watermark([per_input.get("fast"), per_input.get("slow")],
                                    policy=policy)
        current = max(current, combined)
        expected.append(epoch + current * ms)
    conf = {"spark.sql.streaming.multipleWatermarkPolicy": policy}
    with TopologyTestDriver(two_watermarks, spark=spark, sql_conf=conf) as driver:
        after_each_step = []
        for name, seconds in steps:
            driver.create_input_topic(name).pipe_input(
                {"key": "k", "value": name}, timestamp=T0 + seconds * S)
            driver.advance_wall_clock(S)
            after_each_step.append(driver.watermark("out"))
        batches = driver.batches
    assert after_each_step == expected
    assert [b.watermark_after for b in batches[:-1]] == [b.watermark for b in batches[1:]]
    assert expected == ([T0 + 18 * S, T0 + 18 * S, T0 + 25 * S, T0 + 38 * S, T0 + 45 * S]
                        if policy == "max" else
                        [epoch, T0 + 5 * S, T0 + 18 * S, T0 + 25 * S, T0 + 38 * S])
