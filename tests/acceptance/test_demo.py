"""The demo (the README's main command) on the shared session."""

from __future__ import annotations

from pyspark_streamtest.gates._demo import run_demo
from pyspark_streamtest.gates.canned import clickstream


def test_demo_prints_the_documented_timeline(spark):
    text = run_demo(spark)
    rows = [line.split() for line in text.splitlines() if line.strip()[:1].isdigit()]
    # batch, date, time, wm date, wm time, after date, after time, in, out, dropped, state
    assert [(r[0], r[3], r[5], r[8], r[9], r[10], r[11]) for r in rows] == [
        ("0", "00:00:01.000", "00:00:00.000", "2", "0", "0", "2"),
        ("1", "00:00:02.000", "23:59:52.000", "2", "0", "0", "2"),
        ("2", "00:00:03.000", "23:59:57.000", "1", "0", "0", "3"),
        ("3", "00:00:04.000", "00:00:06.000", "1", "0", "0", "4"),
        ("4", "00:00:05.000", "00:00:17.000", "0", "2", "0", "2"),
        ("5", "00:00:06.000", "00:00:17.000", "1", "0", "1", "2"),
    ]
    assert "batch 4: window [00:00:00, 00:00:10) user=alice count=2" in text
    assert "batch 4: window [00:00:00, 00:00:10) user=bob count=2" in text


def test_canned_clickstream_has_out_of_order_and_late_clicks():
    events = clickstream().records
    assert [e.value["url"] for e in events if e.value["user"] == "bob"] == [
        "/home", "/help", "/late"]
    times = [e.timestamp for e in events]
    assert times != sorted(times)
