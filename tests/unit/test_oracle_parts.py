"""The oracle's parts that need no Spark: its list of deliberate differences (the one
the guarantees page shows), how it compares rows, and its summary."""

from __future__ import annotations

from datetime import datetime, timezone
from pathlib import Path

from pyspark.sql import Row

from pyspark_streamtest.core.records import BatchRecord
from pyspark_streamtest.driver.oracle import DELIBERATE, deliberate_table, differences
from pyspark_streamtest.plugin._oracle import delta, summary

GUARANTEES = Path(__file__).parents[2] / "docs" / "guarantees.md"


def test_the_guarantees_page_shows_the_oracles_list_of_deliberate_differences():
    assert deliberate_table() in GUARANTEES.read_text(encoding="utf-8")
    assert len({d.name for d in DELIBERATE}) == len(DELIBERATE)


def _batch(**fields):
    base = dict(output="o", batch_id=3, processing_time=datetime(2024, 1, 1, tzinfo=timezone.utc),
                watermark=None, watermark_after=None, input_records=(), output_records=(),
                num_input_rows=2, new_data=True, num_rows_dropped_by_watermark=0,
                num_state_rows_total=0, state_operators=(), late_records=None)
    return BatchRecord(**{**base, **fields})


def _progress(**fields):
    return {"batchId": 3, "numInputRows": 2, "stateOperators": [], **fields}


def test_rows_are_compared_as_multisets_with_maps_and_nan_by_value():
    ours = [Row(k="a", m={"x": 1, "y": 2}, f=float("nan")), Row(k="b", m={}, f=1.0)]
    theirs = [Row(k="b", m={}, f=1.0), Row(k="a", m={"y": 2, "x": 1}, f=float("nan"))]
    assert differences(_batch(), ours, _progress(), theirs, None) == []
    assert [name for name, _, _ in differences(_batch(), ours, _progress(), theirs[:1], None)
            ] == ["rows out"]


def test_without_value_comparison_only_the_number_of_rows_counts():
    assert differences(_batch(), [Row(u="1")], _progress(), [Row(u="2")], None,
                       compare_values=False) == []


def test_every_field_that_differs_is_named_in_reading_order():
    operators = ({"operatorName": "stateStoreSave", "numRowsTotal": 1, "numRowsUpdated": 1,
                  "numRowsRemoved": 0, "numRowsDroppedByWatermark": 0},)
    found = differences(
        _batch(state_operators=operators), [], _progress(
            batchId=4, numInputRows=4,
            stateOperators=[{**operators[0], "numRowsDroppedByWatermark": 1}]), [], None)
    assert [name for name, _, _ in found] == [
        "batch id", "numInputRows",
        "state operators (rows total/updated/removed/dropped by watermark)"]
    assert found[1][1:] == (2, 4)


def test_the_summary_counts_tests_that_compared_batches():
    before = {"queries": 0, "batches": 0, "state_stores": 0, "same_time_triggers": 0,
              "input_only_batches": 0, "not_followed": {}}
    after = {"queries": 2, "batches": 5, "state_stores": 1, "same_time_triggers": 1,
             "input_only_batches": 1, "not_followed": {"a batch failed": 1}}
    figures = [delta(before, after), delta(after, after)]
    lines, compared = summary(figures, ["tests/x.py::test_y"])
    assert compared == 1
    assert lines[0].startswith("1 tests compared 5 batches of 2 queries and 1 state stores")
    assert lines[0].endswith("1 differed")
    assert "a batch failed (1)" in lines[2]
    assert lines[-1] == "DIFFERED: tests/x.py::test_y"
