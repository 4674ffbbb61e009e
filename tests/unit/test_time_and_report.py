"""Time conversions and the timeline table (no Spark needed)."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest

from pyspark_streamtest import BatchRecord, TestRecord, format_timeline
from pyspark_streamtest.core.time import duration_ms, from_ms, require_aware, to_ms
from pyspark_streamtest.errors import (
    InvalidDurationError,
    NaiveDatetimeError,
    TimeOutOfRangeError,
    TimeWentBackwardsError,
)

T = datetime(2024, 1, 1, tzinfo=timezone.utc)


def test_milliseconds_round_trip_exactly():
    for ms in (0, 1, 1_704_067_200_123, -5):
        assert to_ms(from_ms(ms)) == ms
    assert to_ms(T + timedelta(microseconds=999)) == to_ms(T)  # truncated like Spark


@pytest.mark.parametrize(
    ("value", "error", "message"),
    [
        (timedelta(seconds=-1), TimeWentBackwardsError, "negative"),
        (timedelta(microseconds=1500), InvalidDurationError, "whole number of milliseconds"),
        (timedelta.max, TimeOutOfRangeError, "longer than the whole range of datetimes"),
        (5, TypeError, "datetime.timedelta"),
    ],
    ids=["negative", "sub-millisecond", "longer-than-datetimes", "not-timedelta"],
)
def test_bad_durations(value, error, message):
    with pytest.raises(error, match=message):
        duration_ms(value, "delta")


def test_naive_datetimes_are_refused():
    with pytest.raises(NaiveDatetimeError, match="give it a time zone"):
        require_aware(datetime(2024, 1, 1), "start_time")


def test_timeline_table():
    batch = BatchRecord(
        output="counts", batch_id=3, processing_time=T + timedelta(seconds=2), watermark=T,
        watermark_after=T + timedelta(seconds=5),
        input_records=(TestRecord({"a": 1}),), output_records=(), num_input_rows=1,
        num_rows_dropped_by_watermark=1, num_state_rows_total=4,
    )
    assert format_timeline([batch]).splitlines() == [
        "batch  output  processing time          watermark                wm after"
        "                 in  out  dropped  state",
        "-----  ------  -----------------------  -----------------------  -----------------------"
        "  --  ---  -------  -----",
        "    3  counts  2024-01-01 00:00:02.000  2024-01-01 00:00:00.000  2024-01-01 00:00:05.000"
        "   1    0        1      4",
    ]
    assert format_timeline([]).endswith("(no batches)")


def test_timeline_can_show_the_rows_each_batch_emitted():
    emitted = tuple(TestRecord({"user": u, "url": "/" + "x" * 120}) for u in "abcd")
    batch = BatchRecord(
        output="counts", batch_id=0, processing_time=T, watermark=T, watermark_after=T,
        input_records=(), output_records=emitted, num_input_rows=4,
        num_rows_dropped_by_watermark=0, num_state_rows_total=0,
    )
    kafka = BatchRecord(
        output="sink", batch_id=1, processing_time=T, watermark=T, watermark_after=T,
        input_records=(), output_records=(TestRecord(b"v", key=b"k"),), num_input_rows=1,
        num_rows_dropped_by_watermark=0, num_state_rows_total=0,
    )
    lines = format_timeline([batch, kafka], show_rows=3).splitlines()
    assert lines[3].startswith('      -> {"url":"/xxx') and lines[3].endswith("...")
    assert len(lines[3]) == len("      -> ") + 96
    assert lines[5].startswith('      -> {"url":"/xxx')
    assert lines[6] == "      -> ... 1 more"
    assert lines[7].startswith("    1  sink")
    assert lines[8].startswith("      -> ") and "k" in lines[8] and "v" in lines[8]
    assert format_timeline([batch]) == "\n".join(format_timeline([batch], show_rows=3)
                                                 .splitlines()[:3])
    with pytest.raises(ValueError, match="show_rows must be an int >= 0"):
        format_timeline([batch], show_rows=-1)
