"""The stream-stream join model against real Spark: schedules drawn by
``joined_schedules`` (right events drawn from the left ones' keys and times, with
disorder, late events, copies and restarts) run through the model's own join pipeline,
and every batch, watermark, row and late drop is checked against ``StreamJoin``.

Pinned examples hold the boundaries random schedules rarely hit: a match at each end
of the time range, an unmatched row kept at its state watermark and emitted one
millisecond past it, a row already past it when it arrives, a late row exactly at the
previous batch's watermark, and a restart that forgets the inputs' newest event times.
Examples per test: ``STREAMTEST_EXAMPLES`` (default 15).

Every line holds the model: the whole file passed on PySpark 3.5.9, 4.0.5, 4.1.4 and
4.2.1 (8 derandomized examples per test; 4.0.5 with 30 too), as on 4.3, so no test asks
for a feature. CI runs the whole file on 4.3 and the row already past its bound
(``past-left_outer``, which the model once said older lines did not emit) on 4.0 to 4.2,
under the oracle (tox.ini's ``[oracle] lines``).
"""

from __future__ import annotations

import os
from datetime import timedelta

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from pyspark_streamtest import DEFAULT_START_TIME as T0
from pyspark_streamtest.testing import strategies as sst
from pyspark_streamtest.testing.invariants import (
    assert_matches_model,
    assert_watermark_never_goes_back,
)
from pyspark_streamtest.testing.model import (
    Drain,
    Event,
    JoinDedup,
    JoinKind,
    Pipe,
    Restart,
    Schedule,
    StreamJoin,
    Tick,
    simulate,
)

EXAMPLES = int(os.environ.get("STREAMTEST_EXAMPLES", "15"))
S = timedelta(seconds=1)
LOWER, UPPER = -2 * S, 3 * S


def join(how: JoinKind, dedup: JoinDedup | None = None) -> StreamJoin:
    return StreamJoin(how=how, lower=LOWER, upper=UPPER, left_delay=1 * S,
                      right_delay=2 * S, dedup=dedup)


MODELS = {how: join(how) for how in ("inner", "left_outer", "right_outer", "full_outer")}
DEDUPED = {dedup: join("left_outer", dedup)
           for dedup in ("dropDuplicates", "dropDuplicatesWithinWatermark")}
# one topology function per join, so that run_topology keeps one driver for each
TOPOLOGIES = {model: model.topology() for model in [*MODELS.values(), *DEDUPED.values()]}
JOINED = sst.joined_schedules(between=(LOWER, UPPER), max_size=8, max_step=2 * S,
                              max_disorder=2 * S, late=0.25, late_by=8 * S, outside=0.3,
                              orphans=0.2, duplicates=0.1)


def check(spark, how: JoinKind | StreamJoin, schedule: Schedule) -> None:
    model = how if isinstance(how, StreamJoin) else MODELS[how]
    expected = simulate(schedule, model)  # the model first: no Spark
    batches = sst.run_topology(TOPOLOGIES[model], schedule, spark=spark, input=None)
    context = f"{model}\nschedule:\n{schedule}"
    assert_matches_model(batches, expected, context=context)
    dropped = [b.num_rows_dropped_by_watermark for b in batches]
    assert dropped == [len(b.late) for b in expected], f"late drops {dropped}\n{context}"
    assert_watermark_never_goes_back(batches)


def at(seconds: float, key: str = "a", value: str = "x") -> Event:
    return Event(key, value, T0 + timedelta(seconds=seconds))


def left(*events: Event) -> Pipe:
    return Pipe(events, input="left")


def right(*events: Event) -> Pipe:
    return Pipe(events, input="right")


# Right rows at the ends of the range [left - 2 s, left + 3 s] meet it, one second
# beyond them do not.
BOUNDS = Schedule((left(at(10)), right(at(8), at(13), at(7, value="y"), at(14, value="y")),
                   Tick(), Drain()))
# The query's watermark becomes min(6 - 1, 6 - 2) = 4 s, past the unmatched left row at
# 0 s + 3 s (evicted when 0 < W - 3 s): the no-data batch emits it with nulls. The
# right row at 0 s (evicted when 0 < W - 2 s) too, in a right or full outer join.
PADDED = Schedule((left(at(0)), right(at(0, "b")), Tick(), left(at(6, "c")),
                   right(at(6, "c")), Tick(), Tick(), Drain()))
# The watermark stops at exactly 3 s: neither the left row at 0 s (0 + 3 s is not
# before it) nor the right row at 1 s (1 s + 2 s is not) is evicted.
KEPT = Schedule((left(at(0)), right(at(1, "b")), Tick(), left(at(4, "c")),
                 right(at(5, "c")), Tick(), Tick(), Drain()))
# Batch 1 runs with watermark 8 s but drops late rows by batch 0's (the epoch): the
# left row at 4 s is not late, yet already past its state watermark (4 < 8 - 3): kept
# and evicted in its own batch, it comes out padded in that batch.
PAST = Schedule((left(at(10, "b")), right(at(10, "b")), Tick(), left(at(4)),
                 right(at(5, "c")), Tick(), Drain()))
# Batch 2 drops by batch 1's watermark, 8 s: rows at 8 s are late on either input, a
# row at 9 s is not.
LATE = Schedule((left(at(10, "b")), right(at(10, "b")), Tick(), Tick(),
                 left(at(8), at(9)), right(at(8), at(9, "c")), Tick(), Drain()))
# After a restart only the right input has data: the left input counts as the epoch
# again, so the watermark stays at 8 s (not min(9, 18) = 9 s) until the left has data.
RESTARTED = Schedule((left(at(10)), right(at(10)), Tick(), Tick(), Restart(),
                      right(at(20, "b")), Tick(), Tick(), left(at(20, "c")), Tick(),
                      Drain()))
# Copies: the left row at 1 s twice (both deduplications drop the second), and at 1 s
# again with key and value of the row at 0 s (dropDuplicatesWithinWatermark drops it
# while the row at 0 s is held, until 0 s + 1 s <= W), then at 5 s once W = 4 s.
COPIES = Schedule((left(at(0)), right(at(4, "c")), Tick(), left(at(1), at(1)),
                   right(at(2)), Tick(), left(at(6, "b")), right(at(6, "b")), Tick(),
                   Tick(), left(at(5)), right(at(5)), Tick(), Drain()))
PINNED = {"bounds": BOUNDS, "padded": PADDED, "kept": KEPT, "past": PAST, "late": LATE,
          "restarted": RESTARTED}


@pytest.mark.parametrize("how", list(MODELS))
@pytest.mark.parametrize("name", list(PINNED))
def test_the_pinned_boundaries_match_spark(spark, how, name):
    check(spark, how, PINNED[name])


def test_the_pinned_boundaries_say_what_they_pin():
    """The model's own answers for the pinned schedules, so that a change of the model
    that Spark would also accept cannot quietly empty a pin (no Spark)."""
    def rows(how, schedule):
        return [[(r["key"], r["left_ts"] is not None, r["right_ts"] is not None)
                 for r in b.rows] for b in simulate(schedule, MODELS[how])]

    assert sum(map(len, rows("inner", BOUNDS))) == 2
    assert rows("full_outer", PADDED) == [[], [("c", True, True)],
                                          [("a", True, False), ("b", False, True)]]
    assert rows("full_outer", KEPT)[-1] == []
    assert rows("left_outer", PAST)[1] == [("a", True, False)]
    assert [len(b.late) for b in simulate(LATE, MODELS["inner"])] == [0, 0, 2]
    watermarks = [b.watermark_after for b in simulate(RESTARTED, MODELS["inner"])]
    assert watermarks[2] == T0 + 8 * S and watermarks[-1] == T0 + 18 * S


@pytest.mark.parametrize("dedup", list(DEDUPED))
def test_deduplicated_inputs_join_as_the_model_says(spark, dedup):
    check(spark, DEDUPED[dedup], COPIES)

    @sst.spark_settings(max_examples=max(3, EXAMPLES // 2), derandomize=True,
                        database=None)
    @given(schedule=sst.joined_schedules(between=(LOWER, UPPER), max_size=6,
                                         max_step=2 * S, max_disorder=2 * S,
                                         duplicates=0.4, values=st.sampled_from("xy")))
    def matches(schedule):
        check(spark, DEDUPED[dedup], schedule)

    matches()


@sst.spark_settings(max_examples=EXAMPLES, derandomize=True, database=None)
@given(schedule=JOINED)
def test_an_inner_join_matches_the_model(spark, schedule):
    check(spark, "inner", schedule)


@sst.spark_settings(max_examples=EXAMPLES, derandomize=True, database=None)
@given(schedule=JOINED)
@example(schedule=PADDED)
def test_a_left_outer_join_matches_the_model(spark, schedule):
    check(spark, "left_outer", schedule)


@sst.spark_settings(max_examples=max(3, EXAMPLES // 2), derandomize=True, database=None)
@given(schedule=JOINED)
def test_a_right_outer_join_matches_the_model(spark, schedule):
    check(spark, "right_outer", schedule)


@sst.spark_settings(max_examples=EXAMPLES, derandomize=True, database=None)
@given(schedule=sst.joined_schedules(between=(LOWER, UPPER), max_size=8, max_step=2 * S,
                                     max_disorder=2 * S, late=0.25, late_by=8 * S,
                                     restarts=0.4))
def test_a_full_outer_join_with_restarts_matches_the_model(spark, schedule):
    check(spark, "full_outer", schedule)
