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
    # a long row wraps (96 characters a line) instead of losing its end
    assert lines[3].startswith('      -> {"url":"/xxx') and len(lines[3]) == len("      -> ") + 96
    assert lines[4].startswith("         xxx") and lines[4].endswith('"user":"a"}')
    assert lines[7].startswith('      -> {"url":"/xxx')
    assert lines[9] == "      -> ... 1 more"
    assert lines[10].startswith("    1  sink")
    assert lines[11] == '      -> "k": "v"'  # UTF-8 bytes shown as text
    assert format_timeline([batch]) == "\n".join(format_timeline([batch], show_rows=3)
                                                 .splitlines()[:3])
    with pytest.raises(ValueError, match="show_rows must be an int >= 0"):
        format_timeline([batch], show_rows=-1)


def _kafka_batch(*records: TestRecord) -> BatchRecord:
    return BatchRecord(
        output="alerts", batch_id=0, processing_time=T, watermark=T, watermark_after=T,
        input_records=(), output_records=records, num_input_rows=1,
        num_rows_dropped_by_watermark=0, num_state_rows_total=0,
    )


def test_timeline_decodes_kafka_records_readably_or_with_the_tests_deserializers():
    value = b'{"device_id":"d1","alert":"offline","at":"2024-01-01T00:00:05Z"}'
    batch = _kafka_batch(
        TestRecord(value, key=b"d1", topic="alerts"),
        TestRecord(b"\xff\x00", key=None, topic="raw"),
        TestRecord(b"x" * 400, key=b"k", topic="long"),
    )
    lines = format_timeline([batch], show_rows=3).splitlines()
    # JSON values are shown as the JSON they hold, not as escaped text
    assert lines[3] == ('      -> "d1": {"alert":"offline","at":"2024-01-01T00:00:05.000Z",'
                        '"device_id":"d1"}')
    assert lines[4] == '      -> {"base64":"/wA="}'  # not UTF-8
    assert [len(line) for line in lines[5:8]] == [9 + 96] * 3 and lines[7].endswith("...")
    assert len(lines) == 8  # three lines at most per row

    upper = {"alerts": (lambda b: b.decode().upper(), "string"),
             "raw": (None, lambda b: 1 / 0)}  # a deserializer that raises: shown readably
    lines = format_timeline([batch], show_rows=2, deserializers=upper).splitlines()
    assert lines[3].startswith('      -> "D1": "{\\"device_id\\":\\"d1\\"')
    assert lines[4] == '      -> {"base64":"/wA="}'
