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
from itertools import zip_longest
from typing import Any

from ..errors import InvalidArgumentError, hide_our_frames
from ._compare import (
    NONE,
    Comparison,
    Row,
    check_columns,
    equal,
    in_order,
    is_number,
    matched,
    normal,
    text_of,
    without,
)

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
    batches: list[int | None] = list(batch_ids) if batch_ids is not None else [None] * len(actual)
    if len(batches) != len(actual):
        raise InvalidArgumentError(f"batch_ids has {len(batches)} entries for "
                                   f"{len(actual)} values")
    got, want = [normal(v) for v in actual], [normal(v) for v in expected]
    if how.ignore_columns:
        check_columns(how.ignore_columns, got, want, keyed)
        got = [without(v, how.ignore_columns, keyed) for v in got]
        want = [without(v, how.ignore_columns, keyed) for v in want]
    rows = (matched if how.ignore_order else in_order)(want, got, batches, how)
    if all(row.same for row in rows):
        return
    raise OutputMismatchError(_report(rows, title, how, len(want), len(got),
                                      show_batches=batch_ids is not None))


# --- the report --------------------------------------------------------------------------------
_LINE_WIDTH = 100
"""Widest line of the side-by-side table; wider values are shown a field per line."""
_CELL_WIDTH = 38


def _report(rows: list[Row], title: str, how: Comparison, expected: int, read: int,
            *, show_batches: bool) -> str:
    width = min(60, max([len("expected"), *(len(text_of(row.expected)) for row in rows
                                             if row.expected is not NONE)]))
    lines = []
    for index, row in enumerate(rows):
        left = text_of(row.expected) if row.expected is not NONE else "-"
        right = text_of(row.actual) if row.actual is not NONE else "-"
        if row.actual is not NONE and show_batches:
            right = f"(batch {row.batch}) {right}"
        note = ""
        if not row.same and row.expected is not NONE and row.actual is not NONE:
            note = _differences(row.expected, row.actual, how)
        mark = " " if row.same else "*"
        lines.append(f"  {mark} {index:>3}  {left:<{width}}  {right}"
                     + (f"    {note}" if note else ""))
    differing = sum(not row.same for row in rows)
    header = (f"{title}: {expected} values expected, {read} read; {differing} differ"
              + (" (order ignored)" if how.ignore_order else ""))
    table = [f"    {'#':>3}  {'expected':<{width}}  actual", *lines]
    if max(map(len, table)) > _LINE_WIDTH:
        header += " (wide values: a field per line)"
        table = _field_per_line(rows, how, show_batches)
    return "\n".join([header + how.note, *table])


def _off_by(expected: Any, actual: Any, how: Comparison) -> str:
    """For two numbers (one a float) under a tolerance: how far apart, and how far
    ``math.isclose`` allows."""
    if not (how.tolerant and is_number(expected) and is_number(actual)
            and (isinstance(expected, float) or isinstance(actual, float))):
        return ""
    allowed = max(how.rtol * max(abs(expected), abs(actual)), how.atol)
    return f" (off by {abs(expected - actual):.3g}, allowed {allowed:.3g})"


def _differences(expected: Any, actual: Any, how: Comparison) -> str:
    if not isinstance(expected, dict) or not isinstance(actual, dict):
        return _off_by(expected, actual, how).strip(" ()")
    notes = []
    for key in sorted(set(expected) | set(actual)):
        if key not in actual:
            notes.append(f"{key}: missing")
        elif key not in expected:
            notes.append(f"{key}: unexpected")
        elif not equal(expected[key], actual[key], how):
            notes.append(f"{key}: {text_of(expected[key])} != {text_of(actual[key])}"
                         + _off_by(expected[key], actual[key], how))
    return ", ".join(notes)


def _fields(value: Any, prefix: str = "") -> dict[str, Any]:
    """A value's fields, nested mappings (a window's ``start`` and ``end``) as dotted
    names; a value that is not a mapping is one field, ``value``."""
    if not isinstance(value, dict):
        return {prefix or "value": value}
    fields: dict[str, Any] = {}
    for key in sorted(value):
        name = f"{prefix}{key}"
        if isinstance(value[key], dict) and value[key]:
            fields.update(_fields(value[key], name + "."))
        else:
            fields[name] = value[key]
    return fields


def _wrap(text: str) -> list[str]:
    return [text[i:i + _CELL_WIDTH] for i in range(0, len(text), _CELL_WIDTH)] or [""]


def _field_per_line(rows: list[Row], how: Comparison, show_batches: bool) -> list[str]:
    """Each position as a block: one line per field, expected and actual side by side,
    long texts wrapped at the column width; equal positions as one line."""
    lines = []
    for index, row in enumerate(rows):
        left = _fields(row.expected) if row.expected is not NONE else {}
        right = _fields(row.actual) if row.actual is not NONE else {}
        batch = f"  (batch {row.batch})" if show_batches and row.actual is not NONE else ""
        if row.same:
            summary = text_of(row.actual)
            if len(summary) > _LINE_WIDTH - 20:
                summary = summary[:_LINE_WIDTH - 23] + "..."
            lines.append(f"    {index:>3}{batch}  {summary}")
            continue
        head = (f"  * {index:>3}{batch}"
                + ("  (not expected)" if row.expected is NONE else "")
                + ("  (not read)" if row.actual is NONE else ""))
        if row.expected is not NONE and row.actual is not NONE:
            note = _differences(row.expected, row.actual, how)
            if len(head) + 4 + len(note) > _LINE_WIDTH:
                note = note[:_LINE_WIDTH - len(head) - 7] + "..."
            head += f"    {note}" if note else ""
        lines.append(head)
        names = sorted(set(left) | set(right))
        name_width = max(len("field"), *map(len, names))
        lines.append(f"          {'field':<{name_width}}  {'expected':<{_CELL_WIDTH}}  actual")
        for name in names:
            want = text_of(left[name]) if name in left else "-"
            got = text_of(right[name]) if name in right else "-"
            same = name in left and name in right and equal(left[name], right[name], how)
            mark = " " if same else "*"
            pairs = zip_longest(_wrap(want), _wrap(got), fillvalue="")
            for line, (w, g) in enumerate(pairs):
                label = f"{mark} {name:<{name_width}}" if line == 0 else " " * (name_width + 2)
                lines.append(f"        {label}  {w:<{_CELL_WIDTH}}  {g}".rstrip())
    return lines
