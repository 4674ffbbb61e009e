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

import math
from collections import defaultdict, deque
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from itertools import zip_longest
from numbers import Real
from typing import Any, NamedTuple

from ..errors import InvalidArgumentError, InvalidArgumentTypeError, hide_our_frames
from ._stable import plain, stable_json

__tracebackhide__ = hide_our_frames

__all__ = ["OutputMismatchError", "assert_values_equal"]


class OutputMismatchError(AssertionError):
    """What a topic emitted differs from what the test expected (the message shows both)."""


# --- how values compare ------------------------------------------------------------------------
@dataclass(frozen=True)
class Comparison:
    """How two lists of values compare: in order or as multisets, with which float
    tolerances, leaving out which top-level fields. Made (and checked) by :meth:`of`."""

    ignore_order: bool = False
    rtol: float = 0.0
    atol: float = 0.0
    ignore_columns: frozenset[str] = frozenset()

    @classmethod
    def of(cls, *, ignore_order: bool = False, rtol: float = 0.0, atol: float = 0.0,
           ignore_columns: Collection[str] | None = None) -> Comparison:
        """The comparison the options ask for; an option it cannot use raises
        ``InvalidArgumentError`` (``InvalidArgumentTypeError`` for a wrong type)."""
        if not isinstance(ignore_order, bool):
            raise InvalidArgumentTypeError("ignore_order must be True or False, got "
                                           f"{type(ignore_order).__name__} {ignore_order!r}")
        return cls(ignore_order, _tolerance("rtol", rtol), _tolerance("atol", atol),
                   _column_names(ignore_columns))

    @property
    def tolerant(self) -> bool:
        """Floats compare within a tolerance (not exactly)."""
        return self.rtol > 0 or self.atol > 0

    @property
    def note(self) -> str:
        """What the first line of a mismatch adds: the tolerances and ignored columns."""
        parts = [f"compared with rtol={self.rtol!r}, atol={self.atol!r}"] if self.tolerant else []
        if self.ignore_columns:
            parts.append("ignoring columns: " + ", ".join(sorted(self.ignore_columns)))
        return "".join(f"; {part}" for part in parts)

    def check_columns(self, actual: Sequence[Any], expected: Sequence[Any],
                      *, keyed: bool = False) -> None:
        """Raise ``InvalidArgumentError`` when a name of ``ignore_columns`` is a field of
        no value on either side (nothing to check when both sides are empty)."""
        if self.ignore_columns:
            _check_columns(self.ignore_columns, [_normal(v) for v in actual],
                           [_normal(v) for v in expected], keyed)


def _tolerance(name: str, value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, Real):
        raise InvalidArgumentTypeError(f"{name} must be a number >= 0 such as {name}=1e-9, "
                                       f"got {type(value).__name__} {value!r}")
    if not math.isfinite(value) or value < 0:
        raise InvalidArgumentError(f"{name} must be a finite number >= 0, got {value!r}; pass "
                                   f"e.g. {name}=1e-9 (0, the default, compares exactly)")
    return float(value)


def _column_names(names: Any) -> frozenset[str]:
    if names is None:
        return frozenset()
    if isinstance(names, (str, bytes, Mapping)) or not isinstance(names, Collection):
        raise InvalidArgumentTypeError("ignore_columns must be a collection of field names "
                                       f"such as ['id'], got {type(names).__name__} {names!r}")
    for name in names:
        if not isinstance(name, str):
            raise InvalidArgumentTypeError(f"ignore_columns holds {name!r} ({type(name).__name__});"
                                           " field names are strings, such as ['id']")
        if not name:
            raise InvalidArgumentError("ignore_columns holds an empty name; give field "
                                       "names, such as ignore_columns=['id']")
    return frozenset(names)


_APPROX: dict[type, bool] = {}


def _is_approx(value: Any) -> bool:
    """Whether ``value`` is a ``pytest.approx(...)`` object (known by its classes' names
    and modules, so that pytest is never imported here)."""
    kind = type(value)
    if kind not in _APPROX:
        _APPROX[kind] = any(base.__module__.split(".")[0] in ("pytest", "_pytest")
                            and base.__name__.startswith("Approx") for base in kind.__mro__)
    return _APPROX[kind]


def _normal(value: Any) -> Any:
    """``value`` as compared: mappings (and Spark ``Row`` objects with field names) as dicts
    with text keys, lists and tuples as lists, other values as :func:`plain` gives them
    (datetimes and ISO-instant strings as UTC text, NaN as ``"NaN"``); pytest.approx
    objects are kept."""
    if _is_approx(value):
        return value
    if hasattr(value, "asDict") and hasattr(value, "__fields__"):
        value = value.asDict(recursive=False)  # a pyspark.sql.Row with field names
    if isinstance(value, Mapping):
        return {str(key): _normal(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [_normal(item) for item in value]
    return plain(value)


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _same(expected: Any, actual: Any, how: Comparison) -> bool:
    """Whether two normal values are equal: approx objects by their own ``==``; dicts by
    keys and values, lists item by item; under a tolerance two numbers (one a float) by
    ``math.isclose``; anything else by its JSON text (so ``1 != 1.0`` exactly)."""
    if _is_approx(expected) or _is_approx(actual):
        try:
            return bool(expected == actual)
        except Exception:  # an approx that cannot compare with this value
            return False
    if isinstance(expected, dict):
        return (isinstance(actual, dict) and expected.keys() == actual.keys()
                and all(_same(expected[key], actual[key], how) for key in expected))
    if isinstance(expected, list):
        return (isinstance(actual, list) and len(expected) == len(actual)
                and all(_same(e, a, how) for e, a in zip(expected, actual, strict=True)))
    if (how.tolerant and _number(expected) and _number(actual)
            and (isinstance(expected, float) or isinstance(actual, float))):
        return math.isclose(expected, actual, rel_tol=how.rtol, abs_tol=how.atol)
    return stable_json(expected) == stable_json(actual)


def _shape(value: Any, tolerant: bool) -> str | None:
    """A text two values share whenever they are :func:`_same` (numbers masked under a
    tolerance); None for a value holding an approx object, which may equal anything."""
    def masked(item: Any) -> Any:
        if _is_approx(item):
            raise LookupError
        if isinstance(item, dict):
            return {key: masked(inner) for key, inner in item.items()}
        if isinstance(item, list):
            return [masked(inner) for inner in item]
        return "#" if tolerant and _number(item) else item
    try:
        return stable_json(masked(value))
    except LookupError:
        return None


def _numbers(value: Any) -> list[Any]:
    """The numbers of a normal value, in order: values of one shape sorted by them stand
    near the values they are close to."""
    if isinstance(value, dict):
        return [n for key in sorted(value) for n in _numbers(value[key])]
    if isinstance(value, list):
        return [n for item in value for n in _numbers(item)]
    return [value] if _number(value) else []


def _text(value: Any) -> str:
    """A normal value's JSON text, approx objects as ``approx(2.5 ± 2.5e-06)``."""
    def shown(item: Any) -> Any:
        if _is_approx(item):
            text = repr(item) if repr(item).startswith("approx(") else f"approx({item!r})"
            return f"\0{text}\0"  # unquoted below
        if isinstance(item, (dict, list)):
            return ({key: shown(inner) for key, inner in item.items()}
                    if isinstance(item, dict) else [shown(inner) for inner in item])
        return item
    return stable_json(shown(value)).replace('"\\u0000', "").replace('\\u0000"', "")


# --- ignored columns ---------------------------------------------------------------------------
def _row_part(value: Any, keyed: bool) -> Any:
    return value[1] if keyed and isinstance(value, list) and len(value) == 2 else value


def _check_columns(names: frozenset[str], got: list[Any], want: list[Any], keyed: bool) -> None:
    rows = [_row_part(value, keyed) for value in (*got, *want)]
    fields = {key for row in rows if isinstance(row, dict) for key in row}
    unknown = sorted(names - fields)
    if not rows or not unknown:
        return
    listed = ", ".join(map(repr, unknown))
    raise InvalidArgumentError(
        f"ignore_columns names {listed}, a field of no value compared (expected or actual); "
        + (f"their fields are {', '.join(sorted(fields))}: check the spelling" if fields else
           "no value compared has fields (none is a mapping or Row): leave it out"))


def _without(value: Any, names: frozenset[str], keyed: bool) -> Any:
    row = _row_part(value, keyed)
    if not isinstance(row, dict):
        return value
    kept = {key: item for key, item in row.items() if key not in names}
    return [value[0], kept] if row is not value else kept


# --- pairing expected with actual --------------------------------------------------------------
_NONE: Any = object()
"""No value on this side of a row (more values on the other side)."""


class _Row(NamedTuple):
    expected: Any
    actual: Any
    batch: int | None
    same: bool


def _in_order(want: list[Any], got: list[Any], batches: list[int | None],
              how: Comparison) -> list[_Row]:
    size = max(len(want), len(got))
    want, got = want + [_NONE] * (size - len(want)), got + [_NONE] * (size - len(got))
    batches = batches + [None] * (size - len(batches))
    return [_Row(e, a, b, e is not _NONE and a is not _NONE and _same(e, a, how))
            for e, a, b in zip(want, got, batches, strict=True)]


def _matching(want: list[Any], got: list[Any], how: Comparison) -> dict[int, int]:
    """A largest pairing of expected to actual positions where each pair is
    :func:`_same`: a first-fit pass, then augmenting paths (Kuhn's method, breadth
    first), since equality within a tolerance is not transitive and first fit alone can
    miss a pairing that exists. Only values of one :func:`_shape` are tried together."""
    buckets: dict[str, list[int]] = defaultdict(list)
    wild: list[int] = []
    for j in sorted(range(len(got)), key=lambda j: _numbers(got[j])):  # near ones first
        shape = _shape(got[j], how.tolerant)
        (wild if shape is None else buckets[shape]).append(j)
    tries: list[list[int]] = []
    for value in want:
        shape = _shape(value, how.tolerant)
        tries.append(list(range(len(got))) if shape is None else buckets.get(shape, []) + wild)
    known: dict[tuple[int, int], bool] = {}

    def edge(i: int, j: int) -> bool:
        if (i, j) not in known:
            known[i, j] = _same(want[i], got[j], how)
        return known[i, j]

    left: dict[int, int] = {}
    right: dict[int, int] = {}
    for i in sorted(range(len(want)), key=lambda i: _numbers(want[i])):  # first fit
        first = next((j for j in tries[i] if j not in right and edge(i, j)), None)
        if first is not None:
            left[i], right[first] = first, i
    for root in range(len(want)):
        if root in left:
            continue
        came: dict[int, int] = {}
        queue, end = deque([root]), None  # type: tuple[deque[int], int | None]
        while queue and end is None:
            i = queue.popleft()
            for j in tries[i]:
                if j in came or not edge(i, j):
                    continue
                came[j] = i
                if j not in right:
                    end = j
                    break
                queue.append(right[j])
        while end is not None:  # flip the path: root ... i -> end
            i = came[end]
            previous = left.get(i)  # None at the root
            left[i], right[end] = end, i
            end = previous
    return left


def _matched(want: list[Any], got: list[Any], batches: list[int | None],
             how: Comparison) -> list[_Row]:
    """Multisets: the pairs :func:`_matching` found (sorted by the expected value's
    text), then what is left of each side, each sorted, side by side."""
    pairs = _matching(want, got, how)
    rows = [_Row(want[i], got[j], batches[j], True)
            for i, j in sorted(pairs.items(), key=lambda pair: _text(want[pair[0]]))]
    rest_w = sorted((i for i in range(len(want)) if i not in pairs),
                    key=lambda i: _text(want[i]))
    taken = set(pairs.values())
    rest_g = sorted((j for j in range(len(got)) if j not in taken), key=lambda j: _text(got[j]))
    rows += [_Row(_NONE if i is None else want[i], _NONE if j is None else got[j],
                  None if j is None else batches[j], False)
             for i, j in zip_longest(rest_w, rest_g)]
    return rows


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
    as instants, NaN equal to NaN. Floats compare exactly by default (``1`` and ``1.0``
    differ); with ``rtol`` or ``atol`` every number anywhere in a value, one of a pair a
    float, compares as ``math.isclose(a, b, rel_tol=rtol, abs_tol=atol)`` (PySpark's
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
    got, want = [_normal(v) for v in actual], [_normal(v) for v in expected]
    if how.ignore_columns:
        _check_columns(how.ignore_columns, got, want, keyed)
        got = [_without(v, how.ignore_columns, keyed) for v in got]
        want = [_without(v, how.ignore_columns, keyed) for v in want]
    rows = (_matched if how.ignore_order else _in_order)(want, got, batches, how)
    if all(row.same for row in rows):
        return
    raise OutputMismatchError(_report(rows, title, how, len(want), len(got),
                                      show_batches=batch_ids is not None))


# --- the report --------------------------------------------------------------------------------
_LINE_WIDTH = 100
"""Widest line of the side-by-side table; wider values are shown a field per line."""
_CELL_WIDTH = 38


def _report(rows: list[_Row], title: str, how: Comparison, expected: int, read: int,
            *, show_batches: bool) -> str:
    width = min(60, max([len("expected"), *(len(_text(row.expected)) for row in rows
                                             if row.expected is not _NONE)]))
    lines = []
    for index, row in enumerate(rows):
        left = _text(row.expected) if row.expected is not _NONE else "-"
        right = _text(row.actual) if row.actual is not _NONE else "-"
        if row.actual is not _NONE and show_batches:
            right = f"(batch {row.batch}) {right}"
        note = ""
        if not row.same and row.expected is not _NONE and row.actual is not _NONE:
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
    if not (how.tolerant and _number(expected) and _number(actual)
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
        elif not _same(expected[key], actual[key], how):
            notes.append(f"{key}: {_text(expected[key])} != {_text(actual[key])}"
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


def _field_per_line(rows: list[_Row], how: Comparison, show_batches: bool) -> list[str]:
    """Each position as a block: one line per field, expected and actual side by side,
    long texts wrapped at the column width; equal positions as one line."""
    lines = []
    for index, row in enumerate(rows):
        left = _fields(row.expected) if row.expected is not _NONE else {}
        right = _fields(row.actual) if row.actual is not _NONE else {}
        batch = f"  (batch {row.batch})" if show_batches and row.actual is not _NONE else ""
        if row.same:
            summary = _text(row.actual)
            if len(summary) > _LINE_WIDTH - 20:
                summary = summary[:_LINE_WIDTH - 23] + "..."
            lines.append(f"    {index:>3}{batch}  {summary}")
            continue
        head = (f"  * {index:>3}{batch}"
                + ("  (not expected)" if row.expected is _NONE else "")
                + ("  (not read)" if row.actual is _NONE else ""))
        if row.expected is not _NONE and row.actual is not _NONE:
            note = _differences(row.expected, row.actual, how)
            if len(head) + 4 + len(note) > _LINE_WIDTH:
                note = note[:_LINE_WIDTH - len(head) - 7] + "..."
            head += f"    {note}" if note else ""
        lines.append(head)
        names = sorted(set(left) | set(right))
        name_width = max(len("field"), *map(len, names))
        lines.append(f"          {'field':<{name_width}}  {'expected':<{_CELL_WIDTH}}  actual")
        for name in names:
            want = _text(left[name]) if name in left else "-"
            got = _text(right[name]) if name in right else "-"
            same = name in left and name in right and _same(left[name], right[name], how)
            mark = " " if same else "*"
            pairs = zip_longest(_wrap(want), _wrap(got), fillvalue="")
            for line, (w, g) in enumerate(pairs):
                label = f"{mark} {name:<{name_width}}" if line == 0 else " " * (name_width + 2)
                lines.append(f"        {label}  {w:<{_CELL_WIDTH}}  {g}".rstrip())
    return lines
