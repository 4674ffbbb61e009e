"""The bulk pipe's column path (whole tuples, checked a column at a time) gives a real
query the batches the per-row path gives for the same values as dicts: the same input
records with their event times and partitions, outputs, late drops and watermarks."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest
from pyspark.sql import functions as F

from pyspark_streamtest import SchemaMismatchError, StreamingQueryFailedError, Topology
from pyspark_streamtest.core import columns as _columns

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


def _run(topology_driver, as_dicts: bool, topology=windowed_and_raw):
    """A driver that ran the steps, piped as whole tuples or as dicts."""
    driver = topology_driver(topology)
    topic = driver.create_input_topic("in")
    for rows in _steps():
        topic.pipe_value_list([dict(zip(NAMES, row, strict=True)) for row in rows]
                              if as_dicts else rows)
        driver.advance_wall_clock(timedelta(seconds=1))
    return driver


def test_whole_tuples_give_the_batches_dicts_give(topology_driver, monkeypatch):
    taken = []
    lines = _columns.ColumnLines.lines

    def spy(self, values):
        out = lines(self, values)
        taken.append(out is not None)
        return out

    monkeypatch.setattr(_columns.ColumnLines, "lines", spy)
    by_columns = _run(topology_driver, as_dicts=False).batches
    assert taken == [True] * 4
    by_rows = _run(topology_driver, as_dicts=True).batches
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


def one_partition(t: Topology) -> None:
    """Records of a one-partition input are built only when read (``driver._piped``):
    late drops known per batch (the watermark on the input's event-time column) and
    evaluated on request (on a column computed in the query, found by the records'
    JSON lines)."""
    events = t.input("in", schema=SCHEMA, timestamp_column="ts")
    t.output("raw", events.select("k", "n"))
    t.output("counts", events.withWatermark("ts", "5 seconds")
             .groupBy(F.window("ts", "10 seconds"), "k").count())
    shifted = events.withColumn("at", F.col("ts") - F.expr("INTERVAL 1 SECOND"))
    t.output("shifted", shifted.withWatermark("at", "5 seconds")
             .groupBy(F.window("at", "10 seconds")).agg(F.sum("n").alias("total")))


def test_records_built_when_read_are_the_records_the_row_path_builds(topology_driver):
    def run(as_dicts: bool):
        driver = _run(topology_driver, as_dicts, one_partition)
        late = {name: [(r.batch_id, r.record.value, r.watermark)
                       for r in driver.late_records(name)] for name in ("counts", "shifted")}
        return driver.batches, late

    by_columns, late_by_columns = run(as_dicts=False)
    by_rows, late_by_rows = run(as_dicts=True)
    def seen(batches):  # all but the progress's timings and memory (state_operators)
        return [(b.output, b.batch_id, b.processing_time, b.watermark, b.watermark_after,
                 b.input_records, b.num_input_rows, b.new_data, b.late_records,
                 b.num_rows_dropped_by_watermark, b.num_state_rows_total,
                 sorted(map(repr, b.output_records))) for b in batches]

    assert seen(by_columns) == seen(by_rows)
    assert late_by_columns == late_by_rows
    assert late_by_columns["counts"] and late_by_columns["shifted"]
    # the same record objects in every output's batches (late records are found by them)
    raw, counts = ([r for b in by_columns if b.output == name for r in b.input_records]
                   for name in ("raw", "counts"))
    assert len(raw) == 19 and all(a is b for a, b in zip(raw, counts, strict=True))


def test_whole_tuples_in_a_failed_batch_are_retried_and_carried_into_a_new_version(
    topology_driver,
):
    def version(t: Topology, fixed: bool) -> None:
        events = t.input("in", schema=SCHEMA, timestamp_column="ts")
        bad = F.lit(None) if fixed else F.raise_error(F.lit("negative n"))
        t.output("checked", events.select("k", F.when(F.col("n") >= 0, F.col("n"))
                                          .otherwise(bad).alias("n")))

    driver = topology_driver(lambda t: version(t, fixed=False))
    topic = driver.create_input_topic("in")
    first, second = _steps()[2], _steps()[1]
    topic.pipe_value_list(first)  # one row has n < 0
    with pytest.raises(StreamingQueryFailedError) as failed:
        driver.process_all_available()
    assert [r.value["n"] for r in failed.value.records] == [0, -1, -2]
    topic.pipe_value_list(second)  # queued while stopped: the batch after the retry
    ran = driver.restart(topology=lambda t: version(t, fixed=True))
    ran += driver.process_all_available()
    assert [(b.batch_id, [r.value for r in b.input_records], b.output_values) for b in ran] == [
        (0, [dict(zip(NAMES, row, strict=True)) for row in first],
         [{"k": "k0", "n": 0}, {"k": "k1", "n": None}, {"k": "k2", "n": None}]),
        (1, [dict(zip(NAMES, row, strict=True)) for row in second],
         [{"k": "k1", "n": 99}, {"k": "k2", "n": 7}]),
    ]
