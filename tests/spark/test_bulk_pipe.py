"""The bulk pipe's column path (whole tuples, checked a column at a time) gives a real
query the batches the per-row path gives for the same values as dicts: the same input
records with their event times and partitions, outputs, late drops and watermarks."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest
from pyspark.sql import functions as F

from pyspark_streamtest import SchemaMismatchError, Topology
from pyspark_streamtest.core import _columns

UTC = timezone.utc
T0 = datetime(2024, 1, 1, tzinfo=UTC)
SCHEMA = "k STRING, n INT, x DOUBLE, ok BOOLEAN, ts TIMESTAMP"
NAMES = ("k", "n", "x", "ok", "ts")


def windowed_and_raw(t: Topology) -> None:
    events = t.input("in", schema=SCHEMA, timestamp_column="ts", partitions=2, key="k")
    t.output("raw", events)
    t.output("counts", events.withWatermark("ts", "5 seconds")
             .groupBy(F.window("ts", "10 seconds"), "k").agg(F.count("*").alias("c"),
                                                             F.sum("n").alias("total")))


def _steps() -> list[list[tuple[object, ...]]]:
    return [
        [(f"k{i % 6}", i, i / 3, i % 2 == 0, T0 + timedelta(seconds=i)) for i in range(12)],
        [("k1", 99, -0.5, True, T0 + timedelta(seconds=30)),
         ("k2", 7, 1e300, False, T0 + timedelta(seconds=4))],
        [(f"k{i}", -i, 0.0, True, T0 + timedelta(seconds=40 + i)) for i in range(3)],
        # late: its window ends at 10 s, and Spark drops late rows by the watermark of the
        # batch before (25 s here)
        [("k0", 5, 2.5, False, T0 + timedelta(seconds=5)),
         ("k1", 6, 3.5, True, T0 + timedelta(seconds=50))],
    ]


def _run(topology_driver, as_dicts: bool):
    driver = topology_driver(windowed_and_raw)
    topic = driver.create_input_topic("in")
    for rows in _steps():
        topic.pipe_value_list([dict(zip(NAMES, row, strict=True)) for row in rows]
                              if as_dicts else rows)
        driver.advance_wall_clock(timedelta(seconds=1))
    return driver.batches


def test_whole_tuples_give_the_batches_dicts_give(topology_driver, monkeypatch):
    taken = []
    lines = _columns.ColumnLines.lines

    def spy(self, values):
        out = lines(self, values)
        taken.append(out is not None)
        return out

    monkeypatch.setattr(_columns.ColumnLines, "lines", spy)
    by_columns = _run(topology_driver, as_dicts=False)
    assert taken == [True] * 4
    by_rows = _run(topology_driver, as_dicts=True)
    assert taken == [True] * 4 + [False] * 4

    def seen(batches):
        return [(b.output, b.batch_id, b.watermark, b.num_input_rows,
                 b.num_rows_dropped_by_watermark,
                 [(r.value, r.timestamp, r.partition) for r in b.input_records],
                 sorted(map(repr, (r.value for r in b.output_records)))) for b in batches]

    assert seen(by_columns) == seen(by_rows)
    assert any(b.num_rows_dropped_by_watermark for b in by_columns)
    assert {r.partition for b in by_columns for r in b.input_records} == {0, 1}


def test_a_bad_row_among_whole_tuples_is_named_and_nothing_is_piped(topology_driver):
    driver = topology_driver(windowed_and_raw)
    topic = driver.create_input_topic("in")
    good = ("a", 1, 0.5, True, T0)
    with pytest.raises(SchemaMismatchError, match=r"values\[1\]: .*'n' expects INT"):
        topic.pipe_value_list([good, ("b", "2", 0.5, True, T0)])
    driver.process_all_available()
    assert all(not b.input_records for b in driver.batches)
