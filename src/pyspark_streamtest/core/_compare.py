"""How two lists of values compare (the options of :class:`Comparison`), and how
expected values are paired with actual ones, in order or as multisets; the report of a
mismatch is :mod:`.equality`'s."""

from __future__ import annotations

import math
from collections import defaultdict, deque
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal
from itertools import zip_longest
from numbers import Real
from typing import Any, NamedTuple

from ..errors import InvalidArgumentError, InvalidArgumentTypeError, hide_our_frames
from ._stable import plain, stable_json

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


_APPROX: dict[type, bool] = {}


def _is_approx(value: Any) -> bool:
    """Whether ``value`` is a ``pytest.approx(...)`` object (known by its classes' names
    and modules, so that pytest is never imported here)."""
    kind = type(value)
    if kind not in _APPROX:
        _APPROX[kind] = any(base.__module__.split(".")[0] in ("pytest", "_pytest")
                            and base.__name__.startswith("Approx") for base in kind.__mro__)
    return _APPROX[kind]


def normal(value: Any) -> Any:
    """``value`` as compared: mappings (and Spark ``Row`` objects with field names) as dicts
    with text keys, lists and tuples as lists, other values as :func:`plain` gives them
    (datetimes and ISO-instant strings as UTC text, NaN as ``"NaN"``); pytest.approx
    objects are kept."""
    if _is_approx(value):
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


def equal(expected: Any, actual: Any, how: Comparison) -> bool:
    """Whether two normal values are equal: approx objects by their own ``==``; dicts by
    keys and values, lists item by item; under a tolerance two numbers (one a float) by
    ``math.isclose``; two decimals by value (Spark gives ``Decimal("1.00E-10")`` back for
    ``Decimal("1E-10")``); anything else by its JSON text (so ``1 != 1.0`` exactly)."""
    if isinstance(expected, Decimal) and isinstance(actual, Decimal):
        return expected == actual
    if _is_approx(expected) or _is_approx(actual):
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
    if (how.tolerant and is_number(expected) and is_number(actual)
            and (isinstance(expected, float) or isinstance(actual, float))):
        return math.isclose(expected, actual, rel_tol=how.rtol, abs_tol=how.atol)
    return stable_json(expected) == stable_json(actual)


def _shape(value: Any, tolerant: bool) -> str | None:
    """A text two values share whenever they are :func:`same` (numbers masked under a
    tolerance); None for a value holding an approx object, which may equal anything."""
    def masked(item: Any) -> Any:
        if _is_approx(item):
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


def text_of(value: Any) -> str:
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
NONE: Any = object()
"""No value on this side of a row (more values on the other side)."""


class Row(NamedTuple):
    expected: Any
    actual: Any
    batch: int | None
    same: bool


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
