"""The bulk pipe's fast path: a list of whole tuples, checked and written column by column.

Piping many values spends its time in per-row Python. When every value is a tuple with
one item per column, and every column is of a type whose usual values have a check and
a JSON form that run in C (STRING, the integer types, DOUBLE, BOOLEAN, TIMESTAMP), the
rows are checked a column at a time (``map``, ``min``, ``max`` over the column) and each
line is one ``%`` format of a template. The text is exactly what
:meth:`~pyspark_streamtest.core.values.StructEncoder.json_line` writes for each row.

Any column that fails its quick check (a None, a value of another type or out of its
type's range, a string that is not ASCII, a timestamp not in UTC or in the first or last
year of the range) sends the whole list down the per-row path instead, which writes the
same text or raises the precise error for the first bad row.
"""

from __future__ import annotations

import datetime as _dt
import math
from collections.abc import Callable, Sequence
from json.encoder import encode_basestring_ascii as _quote
from operator import attrgetter
from typing import Any

from pyspark.sql import types as T

from ..errors import hide_our_frames
from .values import INT_RANGES

__tracebackhide__ = hide_our_frames

_UTC = _dt.timezone.utc
_TZINFO = attrgetter("tzinfo")
_BOOLEAN_TEXT = {True: "true", False: "false"}.__getitem__

# A column's quick check: its values as they go into the line's template (for a "%s"
# or "%d" / "%r" slot), or None when the column needs the per-row path.
_Column = Callable[[tuple[Any, ...]], Sequence[Any] | None]


def _strings(column: tuple[Any, ...]) -> Sequence[Any] | None:
    if set(map(type, column)) != {str} or not all(map(str.isascii, column)):
        return None
    return list(map(_quote, column))


def _integers(low: int, high: int) -> _Column:
    def check(column: tuple[Any, ...]) -> Sequence[Any] | None:
        if set(map(type, column)) != {int} or min(column) < low or max(column) > high:
            return None
        return column  # "%d" of an int is its repr, as json writes it

    return check


def _doubles(column: tuple[Any, ...]) -> Sequence[Any] | None:
    if set(map(type, column)) != {float} or not all(map(math.isfinite, column)):
        return None
    return column  # "%r" of a float is its repr, as json writes it


def _booleans(column: tuple[Any, ...]) -> Sequence[Any] | None:
    if set(map(type, column)) != {bool}:
        return None
    return list(map(_BOOLEAN_TEXT, column))


def _timestamps(column: tuple[Any, ...]) -> Sequence[Any] | None:
    if set(map(type, column)) != {_dt.datetime} or set(map(_TZINFO, column)) != {_UTC}:
        return None
    if not (min(column).year > 1 and max(column).year < 9999):
        return None
    # ASCII, nothing to escape. A time repeated across rows (whole seconds, a burst of
    # events) is written once: about 0.7 us a call, against 0.02 us a set/dict lookup.
    distinct = set(column)
    if len(distinct) * 2 > len(column):
        return list(map(_dt.datetime.isoformat, column))
    return list(map({time: time.isoformat() for time in distinct}.__getitem__, column))


def _column_for(dtype: T.DataType) -> tuple[_Column, str] | None:
    """A column's quick check and its template slot; None for types without one."""
    kind = type(dtype)
    if kind is T.StringType:
        return _strings, "%s"
    if kind in INT_RANGES:
        return _integers(*INT_RANGES[kind]), "%d"
    if kind is T.DoubleType:
        return _doubles, "%r"
    if kind is T.BooleanType:
        return _booleans, "%s"
    if kind is T.TimestampType:
        return _timestamps, '"%s"'
    return None


class ColumnLines:
    """The fast path for one flat schema (see the module doc)."""

    def __init__(self, schema: T.StructType) -> None:
        columns = [_column_for(field.dataType) for field in schema.fields]
        self._checks: list[_Column] | None = None
        self._template = ""
        if columns and all(column is not None for column in columns):
            self._checks = [column[0] for column in columns if column is not None]
            slots = [column[1] for column in columns if column is not None]
            self._template = "{" + ",".join(
                _quote(field.name).replace("%", "%%") + ":" + slot
                for field, slot in zip(schema.fields, slots, strict=True)
            ) + "}"
        self._width = len(schema.fields)

    def lines(self, values: Sequence[Any]) -> list[str] | None:
        """The JSON line of each value, or None when the per-row path must run."""
        checks = self._checks
        if checks is None or not values:
            return None
        width = self._width
        if set(map(type, values)) != {tuple} or set(map(len, values)) != {width}:
            return None
        texts = []
        for check, column in zip(checks, zip(*values, strict=True), strict=True):
            text = check(column)
            if text is None:
                return None
            texts.append(text)
        return list(map(self._template.__mod__, zip(*texts, strict=True)))
