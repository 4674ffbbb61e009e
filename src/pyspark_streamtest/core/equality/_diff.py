"""The side-by-side text of an :class:`~._outcome.Outcome`: a header line, then a line per
position (expected, actual, a ``*`` where they differ, what differs), or a block of a line
per field where values are too wide for that. It only renders: every equality decision
is in the outcome already."""

from __future__ import annotations

from itertools import zip_longest
from typing import Any

from ...errors import hide_our_frames
from ._outcome import NONE, Difference, OffBy, Outcome, Row
from ._shown import text_of

__tracebackhide__ = hide_our_frames

_LINE_WIDTH = 100
"""Widest line of the side-by-side table; wider values are shown a field per line."""
_CELL_WIDTH = 38


def report(outcome: Outcome, title: str, *, show_batches: bool) -> str:
    """The mismatch message: ``title``, the counts and the options in force, then the
    table; ``show_batches`` adds the micro-batch of each actual value."""
    rows = outcome.rows
    width = min(60, max([len("expected"), *(len(text_of(row.expected)) for row in rows
                                             if row.expected is not NONE)]))
    lines = []
    for index, row in enumerate(rows):
        left = text_of(row.expected) if row.expected is not NONE else "-"
        right = text_of(row.actual) if row.actual is not NONE else "-"
        if row.actual is not NONE and show_batches:
            right = f"(batch {row.batch}) {right}"
        note = _note(row)
        mark = " " if row.same else "*"
        lines.append(f"  {mark} {index:>3}  {left:<{width}}  {right}"
                     + (f"    {note}" if note else ""))
    header = (f"{title}: {outcome.expected} values expected, {outcome.read} read; "
              f"{outcome.differing} differ" + (" (order ignored)" if outcome.ignore_order else ""))
    table = [f"    {'#':>3}  {'expected':<{width}}  actual", *lines]
    if max(map(len, table)) > _LINE_WIDTH:
        header += " (wide values: a field per line)"
        table = _field_per_line(rows, show_batches)
    return "\n".join([header + _options(outcome), *table])


def _options(outcome: Outcome) -> str:
    """What the first line adds: the tolerances and ignored columns."""
    parts = []
    if outcome.tolerances is not None:
        rtol, atol = outcome.tolerances
        parts.append(f"compared with rtol={rtol!r}, atol={atol!r}")
    if outcome.ignored_columns:
        parts.append("ignoring columns: " + ", ".join(outcome.ignored_columns))
    return "".join(f"; {part}" for part in parts)


def _off_by(off_by: OffBy | None) -> str:
    if off_by is None:
        return ""
    return f" (off by {off_by.distance:.3g}, allowed {off_by.allowed:.3g})"


def _difference(difference: Difference) -> str:
    if difference.name is None:
        return _off_by(difference.off_by).strip(" ()")
    if difference.actual is NONE:
        return f"{difference.name}: missing"
    if difference.expected is NONE:
        return f"{difference.name}: unexpected"
    return (f"{difference.name}: {text_of(difference.expected)} != {text_of(difference.actual)}"
            + _off_by(difference.off_by))


def _note(row: Row) -> str:
    """What differs in a position, as the end of its line (empty for an equal one)."""
    return ", ".join(map(_difference, row.differences))


def _wrap(text: str) -> list[str]:
    return [text[i:i + _CELL_WIDTH] for i in range(0, len(text), _CELL_WIDTH)] or [""]


def _field_per_line(rows: tuple[Row, ...], show_batches: bool) -> list[str]:
    """Each position as a block: one line per field, expected and actual side by side,
    long texts wrapped at the column width; equal positions as one line."""
    lines = []
    for index, row in enumerate(rows):
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
            note = _note(row)
            if len(head) + 4 + len(note) > _LINE_WIDTH:
                note = note[:_LINE_WIDTH - len(head) - 7] + "..."
            head += f"    {note}" if note else ""
        lines.append(head)
        if not row.fields:  # an empty value ({} or []) on one side: nothing to list by field
            lines.append(f"          expected {_side(row.expected)}, actual {_side(row.actual)}")
            continue
        name_width = max(len("field"), *(len(field.name) for field in row.fields))
        lines.append(f"          {'field':<{name_width}}  {'expected':<{_CELL_WIDTH}}  actual")
        for field in row.fields:
            want = text_of(field.expected) if field.expected is not NONE else "-"
            got = text_of(field.actual) if field.actual is not NONE else "-"
            mark = " " if field.same else "*"
            pairs = zip_longest(_wrap(want), _wrap(got), fillvalue="")
            for line, (w, g) in enumerate(pairs):
                label = (f"{mark} {field.name:<{name_width}}" if line == 0
                         else " " * (name_width + 2))
                lines.append(f"        {label}  {w:<{_CELL_WIDTH}}  {g}".rstrip())
    return lines


def _side(value: Any) -> str:
    return "-" if value is NONE else text_of(value)
