"""Assertions that show the difference, side by side, not just that there is one.

:func:`assert_values_equal` compares what a topic emitted with what a test expects and,
on a mismatch, raises :class:`OutputMismatchError` with one line per position: the
expected value, the actual one, a ``*`` where they differ, and which fields differ::

    output 'counts': 2 values expected, 3 read; 2 differ
         #  expected                     actual
         0  {"count":2,"user":"a"}       {"count":2,"user":"a"}
       * 1  {"count":1,"user":"b"}       {"count":2,"user":"b"}    count: 1 != 2
       * 2  -                            {"count":1,"user":"c"}

``TestOutputTopic.assert_values(expected)`` reads the topic and asserts this way.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ..errors import InvalidArgumentError
from ._stable import stable_json

__all__ = ["OutputMismatchError", "assert_values_equal"]


class OutputMismatchError(AssertionError):
    """What a topic emitted differs from what the test expected (the message shows both)."""


def _field_differences(expected: Any, actual: Any) -> str:
    if not isinstance(expected, Mapping) or not isinstance(actual, Mapping):
        return ""
    notes = []
    for key in sorted(set(expected) | set(actual), key=str):
        if key not in actual:
            notes.append(f"{key}: missing")
        elif key not in expected:
            notes.append(f"{key}: unexpected")
        elif stable_json(expected[key]) != stable_json(actual[key]):
            notes.append(f"{key}: {stable_json(expected[key])} != {stable_json(actual[key])}")
    return ", ".join(notes)


def assert_values_equal(
    actual: Sequence[Any],
    expected: Sequence[Any],
    *,
    ignore_order: bool = False,
    title: str = "values",
    batch_ids: Sequence[int | None] | None = None,
) -> None:
    """Assert ``actual == expected`` position by position (after sorting both by their
    JSON text when ``ignore_order``; rows of one micro-batch have no order in Spark).
    Datetimes compare as instants. Raises :class:`OutputMismatchError` with a
    side-by-side table; ``batch_ids`` (one per actual value) adds the micro-batch that
    emitted each actual value to it."""
    got = [stable_json(v) for v in actual]
    want = [stable_json(v) for v in expected]
    pairs_actual, pairs_expected = list(actual), list(expected)
    batches = list(batch_ids) if batch_ids is not None else [None] * len(got)
    if len(batches) != len(got):
        raise InvalidArgumentError(f"batch_ids has {len(batches)} entries for {len(got)} values")
    if ignore_order:
        order_a = sorted(range(len(got)), key=got.__getitem__)
        order_e = sorted(range(len(want)), key=want.__getitem__)
        got, pairs_actual = [got[i] for i in order_a], [pairs_actual[i] for i in order_a]
        batches = [batches[i] for i in order_a]
        want, pairs_expected = [want[i] for i in order_e], [pairs_expected[i] for i in order_e]
    if got == want:
        return
    width = min(60, max([len("expected"), *map(len, want)]))
    rows = []
    differing = 0
    for index in range(max(len(got), len(want))):
        left = want[index] if index < len(want) else "-"
        right = got[index] if index < len(got) else "-"
        same = left == right
        if index < len(got) and batch_ids is not None:
            right = f"(batch {batches[index]}) {right}"
        differing += not same
        note = ""
        if not same and index < len(want) and index < len(got):
            note = _field_differences(pairs_expected[index], pairs_actual[index])
        mark = " " if same else "*"
        rows.append(f"  {mark} {index:>3}  {left:<{width}}  {right}" + (f"    {note}" if note
                                                                         else ""))
    header = (f"{title}: {len(want)} values expected, {len(got)} read; {differing} differ"
              + (" (order ignored)" if ignore_order else ""))
    raise OutputMismatchError("\n".join(
        [header, f"    {'#':>3}  {'expected':<{width}}  actual", *rows]))
