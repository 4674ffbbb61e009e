"""All the comparing of two lists of values, done once: :func:`compare` gives an
:class:`~._outcome.Outcome` that holds every decision (which expected value pairs with which
actual one, in order or as multisets, under the options of :class:`Comparison`; which
positions and fields differ, and by how much). Turning it into text is
:mod:`._report`'s, which this module never calls."""

from __future__ import annotations

import math
from collections import defaultdict, deque
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal
from itertools import zip_longest
from numbers import Real
from typing import Any

from ...errors import InvalidArgumentError, InvalidArgumentTypeError, hide_our_frames
from ..stable import plain, stable_json
from ._outcome import NONE, Difference, Field, OffBy, Outcome, Row
from ._shown import is_approx, text_of

__tracebackhide__ = hide_our_frames


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

    def check_columns(self, actual: Sequence[Any], expected: Sequence[Any],
                      *, keyed: bool = False) -> None:
        """Raise ``InvalidArgumentError`` when a name of ``ignore_columns`` is a field of
        no value on either side (nothing to check when both sides are empty)."""
        if self.ignore_columns:
            check_columns(self.ignore_columns, [normal(v) for v in actual],
                           [normal(v) for v in expected], keyed)


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


def normal(value: Any) -> Any:
    """``value`` as compared: mappings (and Spark ``Row`` objects with field names) as dicts
    with text keys, lists and tuples as lists, other values as :func:`plain` gives them
    (datetimes and ISO-instant strings as UTC text, NaN as ``"NaN"``); pytest.approx
    objects are kept."""
    if is_approx(value):
        return value
    if hasattr(value, "asDict") and hasattr(value, "__fields__"):
        value = value.asDict(recursive=False)  # a pyspark.sql.Row with field names
    if isinstance(value, Mapping):
        return {str(key): normal(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [normal(item) for item in value]
    return plain(value)


def is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _within_tolerance(expected: Any, actual: Any, how: Comparison) -> bool:
    """Whether these two compare by ``math.isclose``: numbers, one a float, under a
    tolerance."""
    return (how.tolerant and is_number(expected) and is_number(actual)
            and (isinstance(expected, float) or isinstance(actual, float)))


def equal(expected: Any, actual: Any, how: Comparison) -> bool:
    """Whether two normal values are equal: approx objects by their own ``==``; dicts by
    keys and values, lists item by item; under a tolerance two numbers (one a float) by
    ``math.isclose``; two decimals by value (Spark gives ``Decimal("1.00E-10")`` back for
    ``Decimal("1E-10")``); anything else by its JSON text (so ``1 != 1.0`` exactly)."""
    if isinstance(expected, Decimal) and isinstance(actual, Decimal):
        return expected == actual
    if is_approx(expected) or is_approx(actual):
        try:
            return bool(expected == actual)
        except Exception:  # an approx that cannot compare with this value
            return False
    if isinstance(expected, dict):
        return (isinstance(actual, dict) and expected.keys() == actual.keys()
                and all(equal(expected[key], actual[key], how) for key in expected))
    if isinstance(expected, list):
        return (isinstance(actual, list) and len(expected) == len(actual)
                and all(equal(e, a, how) for e, a in zip(expected, actual, strict=True)))
    if _within_tolerance(expected, actual, how):
        return math.isclose(expected, actual, rel_tol=how.rtol, abs_tol=how.atol)
    return stable_json(expected) == stable_json(actual)


def _shape(value: Any, tolerant: bool) -> str | None:
    """A text two values share whenever they are :func:`same` (numbers masked under a
    tolerance); None for a value holding an approx object, which may equal anything."""
    def masked(item: Any) -> Any:
        if is_approx(item):
            raise LookupError
        if isinstance(item, dict):
            return {key: masked(inner) for key, inner in item.items()}
        if isinstance(item, list):
            return [masked(inner) for inner in item]
        if isinstance(item, Decimal):  # one text for every way to write the value
            return f"decimal {'0' if item.is_zero() else item.normalize()}"
        return "#" if tolerant and is_number(item) else item
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
    return [value] if is_number(value) else []


# --- ignored columns ---------------------------------------------------------------------------
def _row_part(value: Any, keyed: bool) -> Any:
    return value[1] if keyed and isinstance(value, list) and len(value) == 2 else value


def check_columns(names: frozenset[str], got: list[Any], want: list[Any], keyed: bool) -> None:
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


def without(value: Any, names: frozenset[str], keyed: bool) -> Any:
    row = _row_part(value, keyed)
    if not isinstance(row, dict):
        return value
    kept = {key: item for key, item in row.items() if key not in names}
    return [value[0], kept] if row is not value else kept


# --- pairing expected with actual --------------------------------------------------------------
def in_order(want: list[Any], got: list[Any], batches: list[int | None],
              how: Comparison) -> list[Row]:
    size = max(len(want), len(got))
    want, got = want + [NONE] * (size - len(want)), got + [NONE] * (size - len(got))
    batches = batches + [None] * (size - len(batches))
    return [Row(e, a, b, e is not NONE and a is not NONE and equal(e, a, how))
            for e, a, b in zip(want, got, batches, strict=True)]


def _matching(want: list[Any], got: list[Any], how: Comparison) -> dict[int, int]:
    """A largest pairing of expected to actual positions where each pair is
    :func:`same`: a first-fit pass, then augmenting paths (Kuhn's method, breadth
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
            known[i, j] = equal(want[i], got[j], how)
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


def matched(want: list[Any], got: list[Any], batches: list[int | None],
             how: Comparison) -> list[Row]:
    """Multisets: the pairs :func:`_matching` found (sorted by the expected value's
    text), then what is left of each side, each sorted, side by side."""
    pairs = _matching(want, got, how)
    rows = [Row(want[i], got[j], batches[j], True)
            for i, j in sorted(pairs.items(), key=lambda pair: text_of(want[pair[0]]))]
    rest_w = sorted((i for i in range(len(want)) if i not in pairs),
                    key=lambda i: text_of(want[i]))
    taken = set(pairs.values())
    rest_g = sorted((j for j in range(len(got)) if j not in taken), key=lambda j: text_of(got[j]))
    rows += [Row(NONE if i is None else want[i], NONE if j is None else got[j],
                  None if j is None else batches[j], False)
             for i, j in zip_longest(rest_w, rest_g)]
    return rows


# --- what differs in a position ----------------------------------------------------------------
def _off_by(expected: Any, actual: Any, how: Comparison) -> OffBy | None:
    """For two numbers (one a float) under a tolerance: how far apart, and how far
    ``math.isclose`` allows."""
    if not _within_tolerance(expected, actual, how):
        return None
    return OffBy(abs(expected - actual), max(how.rtol * max(abs(expected), abs(actual)), how.atol))


def _differences(expected: Any, actual: Any, how: Comparison) -> tuple[Difference, ...]:
    """Two mappings: their top-level fields that are missing, not expected or unequal, by
    name; other values: the pair itself."""
    if not isinstance(expected, dict) or not isinstance(actual, dict):
        return (Difference(None, expected, actual, _off_by(expected, actual, how)),)
    return tuple(
        Difference(key, expected.get(key, NONE), actual.get(key, NONE),
                   _off_by(expected[key], actual[key], how)
                   if key in expected and key in actual else None)
        for key in sorted(set(expected) | set(actual))
        if key not in expected or key not in actual or not equal(expected[key], actual[key], how))


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


def _described(row: Row, how: Comparison) -> Row:
    """A position that differs, with what differs (both sides there) and its fields side
    by side."""
    left = _fields(row.expected) if row.expected is not NONE else {}
    right = _fields(row.actual) if row.actual is not NONE else {}
    fields = tuple(Field(name, left.get(name, NONE), right.get(name, NONE),
                         name in left and name in right and equal(left[name], right[name], how))
                   for name in sorted(set(left) | set(right)))
    both = row.expected is not NONE and row.actual is not NONE
    return row._replace(differences=_differences(row.expected, row.actual, how) if both else (),
                        fields=fields)


# --- two lists of values -----------------------------------------------------------------------
def compare(actual: Sequence[Any], expected: Sequence[Any], how: Comparison, *,
            batch_ids: Sequence[int | None] | None = None, keyed: bool = False) -> Outcome:
    """``actual`` against ``expected`` as ``how`` asks: every value made :func:`normal`,
    ``ignore_columns`` left out (``keyed``: of the value of each ``[key, value]`` pair),
    then paired in order or as multisets; what differs in each position that differs.
    ``batch_ids``: the micro-batch of each actual value."""
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
    return Outcome(tuple(row if row.same else _described(row, how) for row in rows),
                   len(want), len(got), how.ignore_order,
                   (how.rtol, how.atol) if how.tolerant else None,
                   tuple(sorted(how.ignore_columns)))
