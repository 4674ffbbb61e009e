"""Assertions that show the difference, side by side, not just that there is one.

:func:`assert_values_equal` compares what a topic emitted with what a test expects and,
on a mismatch, raises :class:`OutputMismatchError` with one line per position: the
expected value, the actual one, a ``*`` where they differ, and which fields differ::

    output 'counts': 2 values expected, 3 read; 2 differ
         #  expected                     actual
         0  {"count":2,"user":"a"}       {"count":2,"user":"a"}
       * 1  {"count":1,"user":"b"}       {"count":2,"user":"b"}    count: 1 != 2
       * 2  -                            {"count":1,"user":"c"}

With tolerances or ignored columns in force the first line names them
(``compared with rtol=1e-09, atol=0.0; ignoring columns: id``), and a float that is off
shows by how much (``avg: 0.3 != 0.31 (off by 0.01, allowed 3.1e-10)``).

``TestOutputTopic.assert_values(expected)`` reads the topic and asserts this way.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from typing import Any

from ...errors import hide_our_frames
from ._compare import Comparison, compare
from ._diff import report

__tracebackhide__ = hide_our_frames

__all__ = ["OutputMismatchError", "assert_values_equal"]


class OutputMismatchError(AssertionError):
    """What a topic emitted differs from what the test expected (the message shows both)."""


# --- the assertion -----------------------------------------------------------------------------
def assert_values_equal(
    actual: Sequence[Any],
    expected: Sequence[Any],
    *,
    ignore_order: bool = False,
    rtol: float = 0.0,
    atol: float = 0.0,
    ignore_columns: Collection[str] | None = None,
    title: str = "values",
    batch_ids: Sequence[int | None] | None = None,
) -> None:
    """Assert that ``actual`` equals ``expected``, position by position, or as multisets
    with ``ignore_order`` (rows of one micro-batch have no order in Spark).

    Values compare structurally: mappings (and ``Row`` objects with field names) by their
    fields, lists and tuples item by item, datetimes and ISO-instant strings with a zone
    as instants, decimals by value (``1.50`` equals ``1.5``), NaN equal to NaN. Floats
    compare exactly by default (``1`` and ``1.0`` differ); with ``rtol`` or ``atol``
    every number anywhere in a value, one of a pair a float, compares as
    ``math.isclose(a, b, rel_tol=rtol, abs_tol=atol)`` (PySpark's
    ``assertDataFrameEqual``: within ``atol + rtol * abs(b)``, 1e-8 and 1e-5 by default). A
    ``pytest.approx(...)`` placed anywhere in an expected value compares with its own
    tolerance. ``ignore_columns`` (field names) leaves those top-level fields out of
    every mapping on both sides before comparing; a name that no value has is an error
    listing the fields there are. With ``ignore_order`` each expected value is paired
    with an actual one so that as many pairs as possible are equal (within a tolerance
    too, where a value close to two others cannot hide a mismatch); the table shows the
    pairs, then what is left on each side.

    Raises :class:`OutputMismatchError` with a side-by-side table whose first line names
    the tolerances and ignored columns in force; ``batch_ids`` (one per actual value)
    adds the micro-batch that emitted each actual value to it. Options it cannot use
    (a negative tolerance, a string for ``ignore_columns``, ...) raise
    :class:`~pyspark_streamtest.errors.InvalidArgumentError` or
    :class:`~pyspark_streamtest.errors.InvalidArgumentTypeError`."""
    how = Comparison.of(ignore_order=ignore_order, rtol=rtol, atol=atol,
                        ignore_columns=ignore_columns)
    compare_values(actual, expected, how, title=title, batch_ids=batch_ids)


def compare_values(
    actual: Sequence[Any],
    expected: Sequence[Any],
    how: Comparison,
    *,
    title: str = "values",
    batch_ids: Sequence[int | None] | None = None,
    keyed: bool = False,
) -> None:
    """:func:`assert_values_equal` with its options as a :class:`Comparison`. ``keyed``:
    each value is a ``[key, value]`` pair (a Kafka record, a table entry) whose value is
    the row ``ignore_columns`` applies to."""
    outcome = compare(actual, expected, how, batch_ids=batch_ids, keyed=keyed)
    if not outcome.same:
        raise OutputMismatchError(report(outcome, title, show_batches=batch_ids is not None))
