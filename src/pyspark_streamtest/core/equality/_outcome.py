"""What comparing two lists of values found, as plain data: :class:`Outcome`.

:func:`._compare.compare` makes it (every equality decision is taken there, once);
:func:`._report.report` turns it into the side-by-side text without comparing anything
again."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, NamedTuple

from ...errors import hide_our_frames

__tracebackhide__ = hide_our_frames

NONE: Any = object()
"""No value on this side (of a position: more values on the other side; of a field: the
other side's value has it, this side's has not)."""


class OffBy(NamedTuple):
    """Two numbers (one a float) under a tolerance: how far apart they are, and how far
    ``math.isclose`` allows."""

    distance: float
    allowed: float


class Difference(NamedTuple):
    """One way the two values of a position differ: ``name`` a top-level field of two
    mappings (``expected`` :data:`NONE`: a field not expected; ``actual`` :data:`NONE`: a
    field missing; both there: unequal), or None for two values not both mappings.
    ``off_by`` for two numbers under a tolerance."""

    name: str | None
    expected: Any
    actual: Any
    off_by: OffBy | None


class Field(NamedTuple):
    """One field of a position that differs, nested mappings' fields by dotted names (a
    value that is not a mapping is one field, ``value``): each side's value
    (:data:`NONE` where that side lacks it) and whether they are equal."""

    name: str
    expected: Any
    actual: Any
    same: bool


class Row(NamedTuple):
    """One position: the expected and the actual value (:data:`NONE` where a side has no
    more), the micro-batch that emitted the actual one, whether they are equal; for a
    position that differs, how (``differences``, when both sides have a value) and every
    field side by side (``fields``)."""

    expected: Any
    actual: Any
    batch: int | None
    same: bool
    differences: tuple[Difference, ...] = ()
    fields: tuple[Field, ...] = ()


@dataclass(frozen=True)
class Outcome:
    """Two lists of values compared: the positions, in the order the report shows them
    (with ``ignore_order`` the pairs, then what is left on each side), how many values
    each side had, and the options in force."""

    rows: tuple[Row, ...]
    expected: int
    read: int
    ignore_order: bool = False
    tolerances: tuple[float, float] | None = None
    """``(rtol, atol)`` where floats compared within them; None: exactly."""
    ignored_columns: tuple[str, ...] = ()
    """The top-level fields left out of every mapping, sorted."""

    @property
    def same(self) -> bool:
        """Every position is equal: nothing to report."""
        return all(row.same for row in self.rows)

    @property
    def differing(self) -> int:
        return sum(not row.same for row in self.rows)
