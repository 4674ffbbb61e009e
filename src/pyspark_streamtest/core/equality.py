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
from itertools import zip_longest
from typing import Any

from ..errors import InvalidArgumentError, hide_our_frames
from ._stable import stable_json

__tracebackhide__ = hide_our_frames

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
    batches: list[int | None] = list(batch_ids) if batch_ids is not None else [None] * len(got)
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
    table = [f"    {'#':>3}  {'expected':<{width}}  actual", *rows]
    if max(map(len, table)) > _LINE_WIDTH:
        header += " (wide values: a field per line)"
        table = _field_per_line(pairs_expected, pairs_actual, batches if batch_ids is not None
                                else None)
    raise OutputMismatchError("\n".join([header, *table]))


_LINE_WIDTH = 100
"""Widest line of the side-by-side table; wider values are shown a field per line."""
_CELL_WIDTH = 38


def _fields(value: Any, prefix: str = "") -> dict[str, str]:
    """A value's fields as JSON texts, nested mappings (a window's ``start`` and ``end``)
    as dotted names; a value that is not a mapping is one field, ``value``."""
    if not isinstance(value, Mapping):
        return {prefix or "value": stable_json(value)}
    fields: dict[str, str] = {}
    for key in sorted(value, key=str):
        name = f"{prefix}{key}"
        if isinstance(value[key], Mapping) and value[key]:
            fields.update(_fields(value[key], name + "."))
        else:
            fields[name] = stable_json(value[key])
    return fields


def _wrap(text: str) -> list[str]:
    return [text[i:i + _CELL_WIDTH] for i in range(0, len(text), _CELL_WIDTH)] or [""]


def _field_per_line(
    expected: list[Any], actual: list[Any], batches: list[int | None] | None
) -> list[str]:
    """Each position as a block: one line per field, expected and actual side by side,
    long texts wrapped at the column width; equal positions as one line."""
    lines = []
    missing: dict[str, str] = {}
    for index in range(max(len(expected), len(actual))):
        left = _fields(expected[index]) if index < len(expected) else missing
        right = _fields(actual[index]) if index < len(actual) else missing
        batch = (f"  (batch {batches[index]})"
                 if batches is not None and index < len(actual) else "")
        if index < len(expected) and index < len(actual) and left == right:
            summary = stable_json(actual[index])
            if len(summary) > _LINE_WIDTH - 20:
                summary = summary[:_LINE_WIDTH - 23] + "..."
            lines.append(f"    {index:>3}{batch}  {summary}")
            continue
        head = (f"  * {index:>3}{batch}"
                + ("  (not expected)" if index >= len(expected) else "")
                + ("  (not read)" if index >= len(actual) else ""))
        if index < len(expected) and index < len(actual):
            note = _field_differences(expected[index], actual[index])
            if len(head) + 4 + len(note) > _LINE_WIDTH:
                note = note[:_LINE_WIDTH - len(head) - 7] + "..."
            head += f"    {note}" if note else ""
        lines.append(head)
        names = sorted(set(left) | set(right))
        name_width = max(len("field"), *map(len, names))
        lines.append(f"          {'field':<{name_width}}  {'expected':<{_CELL_WIDTH}}  actual")
        for name in names:
            want, got = left.get(name, "-"), right.get(name, "-")
            mark = " " if want == got else "*"
            pairs = zip_longest(_wrap(want), _wrap(got), fillvalue="")
            for line, (w, g) in enumerate(pairs):
                label = f"{mark} {name:<{name_width}}" if line == 0 else " " * (name_width + 2)
                lines.append(f"        {label}  {w:<{_CELL_WIDTH}}  {g}".rstrip())
    return lines
