"""The Kafka source's admission control (``pyspark_streamtest.kafka.admission``), on the
arithmetic of the cases in Spark's KafkaMicroBatchSourceSuite (the batches its authors
expect; the same cases run through real queries in
``tests/spark/parity/test_kafka_micro_batch_source_suite.py``) and of the issue's job.
No Spark: the rule alone."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pyspark_streamtest.errors import TopologyError
from pyspark_streamtest.kafka.admission import Admission, ReadLimit, rate_limit


def drain(limit: int, backlog: dict[str, int]) -> list[dict[str, int]]:
    """Batch after batch of ``rate_limit`` until the backlog is gone."""
    batches = []
    left = dict(backlog)
    while sum(left.values()):
        taken = rate_limit(limit, left)
        batches.append({p: n for p, n in taken.items() if n})
        left = {p: left[p] - taken[p] for p in left}
    return batches


def test_two_topics_700_and_500_under_a_limit_of_500_make_499_499_202():
    assert drain(500, {"clicks-0": 700, "views-0": 500}) == [
        {"clicks-0": 291, "views-0": 208}, {"clicks-0": 291, "views-0": 208},
        {"clicks-0": 118, "views-0": 84}]


def test_suite_max_offsets_per_trigger():
    """``maxOffsetsPerTrigger`` = 10 over 101 / 11 / 1 records: 8 + 1 + 1 (shares below 1
    round up), then 9 + 1, 9 + 1, 9 + 1."""
    batches = drain(10, {"p0": 101, "p1": 11, "p2": 1})
    assert batches[:4] == [{"p0": 8, "p1": 1, "p2": 1}, {"p0": 9, "p1": 1},
                           {"p0": 9, "p1": 1}, {"p0": 9, "p1": 1}]


def test_suite_two_sources_each_take_their_own_limit():
    """SPARK-22956: two sources of one partition, each limited to 5."""
    assert drain(5, {"small": 10}) == [{"small": 5}, {"small": 5}]
    assert drain(5, {"big": 100})[:3] == [{"big": 5}] * 3


def test_suite_trigger_available_now_15_records_on_one_of_five_partitions():
    assert drain(5, {"p0": 15, "p1": 0, "p2": 0, "p3": 0, "p4": 0}) == [{"p0": 5}] * 3


def test_a_limit_below_the_partition_count_takes_one_record_from_each_partition():
    """The suite's "custom metrics - with rate limit": a batch may read more than the
    limit (1 over 2 partitions reads 2)."""
    assert drain(1, {"p0": 5, "p1": 5}) == [{"p0": 1, "p1": 1}] * 5


def test_no_backlog_takes_nothing():
    assert rate_limit(10, {"p0": 0, "p1": 0}) == {"p0": 0, "p1": 0}


@given(st.integers(1, 10_000), st.dictionaries(st.sampled_from("abcdef"), st.integers(0, 5_000),
                                               min_size=1))
def test_a_share_is_never_past_the_backlog_and_every_waiting_partition_moves(limit, backlog):
    taken = rate_limit(limit, backlog)
    assert all(0 <= taken[p] <= backlog[p] for p in backlog)
    assert all(taken[p] >= 1 for p in backlog if backlog[p] > 0)
    # at most the limit, but for the shares rounded up from below 1
    assert sum(taken.values()) <= limit + sum(1 for p in backlog if backlog[p] > 0)


def test_suite_composite_read_limit_on_one_clock():
    """``compositeReadLimit`` (min 15, max 20, maxTriggerDelay 5 s), its source clock
    being the trigger's: 19 rows, a skip at 14 waiting, 20 rows of 33, a skip at 13
    waiting, then the 13 once 5 s have passed since the last batch."""
    admission = Admission(ReadLimit(max_offsets=20, min_offsets=15, max_trigger_delay_ms=5000))
    assert admission.admit({"p0": 0, "p1": 0, "p2": 0}, 0) == {"p0": 0, "p1": 0, "p2": 0}
    assert admission.admit({"p0": 21, "p1": 11, "p2": 1}, 100) == {"p0": 12, "p1": 6, "p2": 1}
    assert sum(admission.admit({"p0": 9, "p1": 5, "p2": 0}, 200).values()) == 0
    assert admission.admit({"p0": 17, "p1": 15, "p2": 1}, 300) == {"p0": 10, "p1": 9, "p2": 1}
    assert sum(admission.admit({"p0": 7, "p1": 6, "p2": 0}, 400).values()) == 0
    assert sum(admission.admit({"p0": 7, "p1": 6, "p2": 0}, 5200).values()) == 0
    assert admission.admit({"p0": 7, "p1": 6, "p2": 0}, 5300) == {"p0": 7, "p1": 6, "p2": 0}


def test_the_first_trigger_passes_whatever_the_time_and_the_count():
    """Spark's ``lastTriggerMillis`` starts at 0 against the wall clock: the first
    trigger after a start always passes the delay test."""
    admission = Admission(ReadLimit(min_offsets=100, max_trigger_delay_ms=10**12))
    assert admission.admit({"p0": 3}, 0) == {"p0": 3}
    assert admission.admit({"p0": 3}, 1) == {"p0": 0}


def test_trigger_once_reads_everything_whatever_the_limits():
    admission = Admission(ReadLimit(max_offsets=1, min_offsets=1))
    assert admission.admit({"p0": 7, "p1": 3}, 0, read_all=True) == {"p0": 7, "p1": 3}


@pytest.mark.parametrize(("limit", "message"), [
    ({"max_offsets": 0}, r"positive number.*reads no record"),
    ({"max_offsets": -5}, r"positive number"),
    ({"min_offsets": "15"}, r"minOffsetsPerTrigger must be an int"),
    ({"max_trigger_delay_ms": 1.5}, r"maxTriggerDelay must be an int"),
], ids=["zero", "negative", "text", "float"])
def test_limits_that_read_nothing_or_are_not_numbers_are_refused(limit, message):
    with pytest.raises(TopologyError, match=message):
        ReadLimit(**limit)


def test_a_minimum_of_zero_or_a_negative_delay_never_holds_a_batch_back_as_in_spark():
    for limit in (ReadLimit(min_offsets=0, max_trigger_delay_ms=10_000),
                  ReadLimit(min_offsets=5, max_trigger_delay_ms=-1)):
        admission = Admission(limit)
        assert admission.admit({"p0": 1}, 0) == {"p0": 1}
        assert admission.admit({"p0": 1}, 1) == {"p0": 1}
