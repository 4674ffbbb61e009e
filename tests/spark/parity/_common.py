"""Helpers shared by the Spark parity tests: Spark's row tuples as our dict values."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime, timedelta, timezone
from typing import Any

import pyspark

from pyspark_streamtest import TestInputTopic, TestOutputTopic, assert_values_equal

SPARK = tuple(int(part) for part in pyspark.__version__.split(".")[:2])
"""The PySpark line the tests run on, as (major, minor): some Spark behaviours changed."""

EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)
"""Spark's StreamManualClock starts at 0, and timestamp_seconds(n) is n s after it."""


def secs(seconds: float) -> datetime:
    """``timestamp_seconds(seconds)``: an instant ``seconds`` after the epoch."""
    return EPOCH + timedelta(seconds=seconds)


def rows(columns: str, *tuples: Iterable[Any]) -> list[dict[str, Any]]:
    """Spark's expected rows, given as tuples, as values keyed by ``columns``."""
    names = columns.split()
    out = []
    for row in tuples:
        values = tuple(row)
        assert len(values) == len(names), f"{values!r} does not match columns {names!r}"
        out.append(dict(zip(names, values, strict=True)))
    return out


def add_ints(topic: TestInputTopic, *values: int) -> None:
    """``AddData(memoryStream, values*)`` for a ``MemoryStream[Int]`` (column ``value``)."""
    topic.pipe_value_list([{"value": v} for v in values])


def check_new_answer(out: TestOutputTopic, columns: str, *tuples: Iterable[Any]) -> None:
    """``CheckNewAnswer(rows*)``: the rows written since the previous read, any order."""
    out.assert_values(rows(columns, *tuples), ignore_order=True)


def check_answer(out: TestOutputTopic, columns: str, *tuples: Iterable[Any]) -> None:
    """``CheckAnswer(rows*)``: everything the memory sink holds (complete mode: the last
    result), any order. Like every fetch of StreamTest it also marks the rows as read,
    so a later ``CheckNewAnswer`` sees only rows written after it."""
    assert_values_equal(out.all_rows(), rows(columns, *tuples), ignore_order=True,
                        title=f"all rows of {out.name!r}")
    out.read_values_to_list()


def check_last_batch(out: TestOutputTopic, columns: str, *tuples: Iterable[Any],
                     is_sorted: bool = False) -> None:
    """``CheckLastBatch(rows*)`` (``isSorted`` keeps the order); marks rows as read, as
    ``check_answer`` does."""
    assert_values_equal(out.last_batch_rows(), rows(columns, *tuples),
                        ignore_order=not is_sorted, title=f"last batch of {out.name!r}")
    out.read_values_to_list()
