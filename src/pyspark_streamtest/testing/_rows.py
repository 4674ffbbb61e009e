"""Rows drawn from a Spark schema: the values a driver's input (or the Kafka ``json``
serializer and Spark's ``from_json``) takes for every column type, with nulls where the
schema allows them and the edge values of each type (the face is
:mod:`pyspark_streamtest.testing.strategies`).

What is drawn is what pipes unchanged: a value the driver would refuse (a FLOAT that
overflows, a string with a surrogate code point, a timestamp PySpark cannot give back,
a decimal with more digits than its column) is never drawn, so a drawn row that comes
back different from Spark is the pipeline's doing.
"""

from __future__ import annotations

import difflib
import sys
from collections.abc import Callable, Mapping
from datetime import date, datetime, timedelta, timezone
from decimal import Decimal
from typing import Any, Literal

from hypothesis import strategies as st
from pyspark.sql import SparkSession
from pyspark.sql import types as T

from ..core.time import DEFAULT_START_TIME, EPOCH
from ..core.values import INT_RANGES
from ..errors import (
    InvalidArgumentError,
    InvalidArgumentTypeError,
    UnsupportedSchemaError,
    hide_our_frames,
)

__tracebackhide__ = hide_our_frames

__all__ = ["Target", "check_fields", "check_row_options", "check_share", "deferred_for",
           "rows", "struct_of"]

Target = Literal["input", "json"]
_TARGETS = ("input", "json")

# The instants PySpark gives back in any time zone (see core.time): a day inside the range.
_TS_MIN = datetime(1, 1, 3, tzinfo=timezone.utc)
_TS_MAX = datetime(9999, 12, 30, 23, 59, 59, 999_999, tzinfo=timezone.utc)
_FLOAT32_MAX = 3.4028234663852886e38
_FLOAT32_TINY = 1.401298464324817e-45  # the smallest subnormal FLOAT
_FLOAT32_NORMAL = 1.1754943508222875e-38
_TEXT_EDGES = ("", " ", "é", "日本語", "😀", "a\nb", '"', "\\", "\x00")


def check_share(name: str, value: object) -> float:
    """``value`` if it is a share from 0 to 1 (an int or a float), else the error that
    says so."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise InvalidArgumentTypeError(
            f"{name}={value!r} must be a share from 0 to 1 (an int or a float)")
    if not 0 <= value <= 1:
        raise InvalidArgumentError(f"{name}={value!r} must be a share from 0 to 1")
    return float(value)


def struct_of(schema: object, spark: object) -> T.StructType:
    """The StructType ``schema`` is (a DDL string is parsed by Spark: ``spark``'s session,
    or the active one)."""
    if isinstance(schema, T.StructType):
        return schema
    if not isinstance(schema, str):
        raise InvalidArgumentTypeError(
            f"schema={schema!r} must be a DDL string such as 'user STRING, ts TIMESTAMP' "
            "or a pyspark.sql.types.StructType")
    if spark is not None and not isinstance(spark, SparkSession):
        raise InvalidArgumentTypeError(f"spark={spark!r} must be a SparkSession or None")
    try:
        parsed = T._parse_datatype_string(schema)
    except Exception as error:  # PySpark's: no session yet, or a parse error
        text = str(error).strip().splitlines()[0] if str(error).strip() else repr(error)
        raise InvalidArgumentError(
            f"schema={schema!r}: Spark cannot parse it ({text}). A DDL string is parsed "
            "by the active SparkSession when the strategy is first drawn from; give a "
            "StructType to draw rows without Spark") from None
    if not isinstance(parsed, T.StructType):
        raise InvalidArgumentError(
            f"schema={schema!r} is a {parsed.simpleString()}, not a list of columns "
            "such as 'user STRING, ts TIMESTAMP'")
    return parsed


def _field_paths(struct: T.StructType, prefix: str = "") -> dict[str, T.StructField]:
    """Every field by its dotted path (struct fields inside structs too)."""
    paths: dict[str, T.StructField] = {}
    for field in struct.fields:
        paths[prefix + field.name] = field
        if isinstance(field.dataType, T.StructType):
            paths.update(_field_paths(field.dataType, f"{prefix}{field.name}."))
    return paths


def check_fields(struct: T.StructType, fields: object, what: str = "fields"
                 ) -> dict[str, st.SearchStrategy[Any]]:
    """``fields`` as a dict of dotted field path to strategy, every path a field."""
    if fields is None:
        return {}
    if not isinstance(fields, Mapping):
        raise InvalidArgumentTypeError(
            f"{what}={fields!r} must be a mapping of column name to strategy")
    paths = _field_paths(struct)
    for name, strategy in fields.items():
        if name not in paths:
            close = difflib.get_close_matches(str(name), list(paths), n=1)
            hint = f"; did you mean {close[0]!r}?" if close else ""
            raise InvalidArgumentError(
                f"{what}: {name!r} is not a column of the schema "
                f"({struct.simpleString()}){hint}")
        if not isinstance(strategy, st.SearchStrategy):
            raise InvalidArgumentTypeError(
                f"{what}[{name!r}]={strategy!r} must be a hypothesis strategy "
                f"(e.g. st.just(...), st.sampled_from([...]))")
    return dict(fields)


class _Options:
    """How values are drawn: checked once, shared by every column."""

    def __init__(self, target: Target, nulls: float, edge_values: float,
                 max_collection_size: int, fields: dict[str, st.SearchStrategy[Any]]
                 ) -> None:
        self.target = target
        self.nulls = round(nulls * 1000)
        self.edges = round(edge_values * 1000)
        self.max_size = max_collection_size
        self.fields = fields


def rows(
    schema: str | T.StructType,
    *,
    spark: SparkSession | None = None,
    target: Target = "input",
    nulls: float = 0.1,
    edge_values: float = 0.1,
    max_collection_size: int = 3,
    fields: Mapping[str, st.SearchStrategy[Any]] | None = None,
) -> st.SearchStrategy[dict[str, Any]]:
    """Rows of ``schema`` (a ``StructType``, or a DDL string such as ``"user STRING,
    amount DECIMAL(10,2), ts TIMESTAMP"``) as dicts of column name to value.

    **A DDL string needs Spark**: PySpark parses DDL in the JVM, so the string is parsed
    with the active SparkSession (``spark``, when given, must be it) the first time the
    strategy is drawn from, inside the test, when the ``spark`` fixture has started
    it; a parse error is raised then. A ``StructType`` needs no Spark at all.

    Every column type a driver's input takes is drawn: STRING (any Unicode text but
    surrogates), BINARY, BOOLEAN, TINYINT/SMALLINT/INT/BIGINT, FLOAT (32-bit values
    only), DOUBLE, DECIMAL(p,s) (at most ``p`` digits, ``s`` after the point), DATE,
    TIMESTAMP (aware, UTC, a day inside Spark's range, as the driver requires),
    TIMESTAMP_NTZ (naive), arrays, maps with STRING keys and nested structs. Any other
    type (intervals, VARIANT, CHAR/VARCHAR, maps with other keys) raises
    :class:`~pyspark_streamtest.errors.UnsupportedSchemaError`, as the driver would.

    ``target`` says where the rows go: ``"input"`` (a plain input's row; every value
    above, NaN and infinities included) or ``"json"`` (a Kafka value written by the
    ``json`` serializer and read with ``from_json``): no NaN or infinities, which JSON
    does not have, and no BINARY column, which the serializer refuses (declare it
    STRING holding base64 instead).

    ``nulls``: the share of nullable values (columns, array elements, map values) drawn
    as None; ``edge_values``: the share drawn from each type's edge values instead
    (bounds, 0, -0.0, the smallest subnormal, NaN and ±infinity where ``target``
    allows them, the first and last days of the time range, empty strings and
    collections, text with accents, CJK, an emoji, a newline, a quote, a backslash, a
    NUL). Both shrink to "no": a failing row shrinks towards plain, simple values.
    ``max_collection_size`` bounds arrays and maps. ``fields`` replaces the strategy
    of a column (dotted paths reach into structs: ``"address.city"``), e.g.
    ``{"user": st.sampled_from(["a", "b"])}`` so that rows share keys.
    """
    shares = check_row_options(target, nulls, edge_values, max_collection_size, fields)

    def build(struct: T.StructType) -> st.SearchStrategy[dict[str, Any]]:
        options = _Options(target, *shares, max_collection_size,
                           check_fields(struct, fields))
        return _struct(struct, options, "")

    return deferred_for(schema, spark, build)


def check_row_options(target: object, nulls: object, edge_values: object,
                      max_collection_size: object, fields: object) -> tuple[float, float]:
    """Checks :func:`rows`' options that do not need the schema; returns the shares
    ``(nulls, edge_values)``."""
    if target not in _TARGETS:
        raise InvalidArgumentError(f"target={target!r} must be 'input' or 'json'")
    shares = (check_share("nulls", nulls), check_share("edge_values", edge_values))
    if shares[0] + shares[1] > 1:
        raise InvalidArgumentError(
            f"nulls={nulls!r} and edge_values={edge_values!r} add up to more than 1")
    if isinstance(max_collection_size, bool) or not isinstance(max_collection_size, int):
        raise InvalidArgumentTypeError(
            f"max_collection_size={max_collection_size!r} must be an int")
    if max_collection_size < 0:
        raise InvalidArgumentError(f"max_collection_size={max_collection_size!r} must be >= 0")
    if fields is not None and not isinstance(fields, Mapping):
        raise InvalidArgumentTypeError(
            f"fields={fields!r} must be a mapping of column name to strategy")
    return shares


def deferred_for(schema: object, spark: object,
                 build: Callable[[T.StructType], st.SearchStrategy[Any]]
                 ) -> st.SearchStrategy[Any]:
    """``build(struct)`` now for a StructType; for a DDL string, a strategy that parses
    it (with Spark) and builds when first drawn from."""
    if isinstance(schema, T.StructType):
        return build(schema)
    if not isinstance(schema, str):
        struct_of(schema, spark)  # raises the type error
    if spark is not None and not isinstance(spark, SparkSession):
        raise InvalidArgumentTypeError(f"spark={spark!r} must be a SparkSession or None")
    return st.deferred(lambda: build(struct_of(schema, spark)))


# --- one value per type ------------------------------------------------------------------------
def _column(dtype: T.DataType, nullable: bool, options: _Options, path: str
            ) -> st.SearchStrategy[Any]:
    """A column's values: its override, or its type's values with nulls and edges mixed
    in at the shares asked for.

    One draw decides which, and it shrinks in one step: its lowest value gives the
    type's simplest value (0, "", the epoch, an empty list...) without drawing anything
    else, so a column that does not matter to a failure becomes plain at the first try
    (one Spark run per column, not one per step of shrinking the value itself)."""
    given = options.fields.get(path)
    if given is not None:
        return given
    base, edges, simplest = _typed(dtype, options, path)
    null_from = 1000 - (options.nulls if nullable else 0)
    edge_from = null_from - (options.edges if edges else 0)

    @st.composite
    def value(draw: Any) -> Any:
        pick = draw(st.integers(0, 999))
        if pick >= null_from:
            return None
        if pick >= edge_from:
            return draw(st.sampled_from(edges))
        if pick == 0 and simplest is not None:
            return simplest()
        return draw(base)

    return value()


def _struct(struct: T.StructType, options: _Options, prefix: str
            ) -> st.SearchStrategy[dict[str, Any]]:
    names = struct.names
    columns = [_column(f.dataType, f.nullable, options, prefix + f.name)
               for f in struct.fields]
    # in the schema's order (fixed_dictionaries may not keep it): rows print as declared
    return st.tuples(*columns).map(lambda values: dict(zip(names, values, strict=True)))


def _typed(dtype: T.DataType, options: _Options, path: str
           ) -> tuple[st.SearchStrategy[Any], list[Any], Callable[[], Any] | None]:
    """(the type's values, its edge values, a function making its simplest value)."""
    json = options.target == "json"
    if isinstance(dtype, T.StringType):
        return _text(), list(_TEXT_EDGES), str
    if isinstance(dtype, T.BooleanType):
        return st.booleans(), [], bool
    if isinstance(dtype, (T.ByteType, T.ShortType, T.IntegerType, T.LongType)):
        low, high = INT_RANGES[type(dtype)]
        return st.integers(low, high), [low, high, 0, -1, 1], int
    if isinstance(dtype, (T.FloatType, T.DoubleType)):
        single = isinstance(dtype, T.FloatType)
        top = _FLOAT32_MAX if single else sys.float_info.max
        tiny = _FLOAT32_TINY if single else 5e-324
        normal = _FLOAT32_NORMAL if single else sys.float_info.min
        edges = [0.0, -0.0, top, -top, tiny, -tiny, normal]
        if not json:
            edges += [float("nan"), float("inf"), float("-inf")]
        return st.floats(width=32 if single else 64, allow_nan=not json,
                         allow_infinity=not json), edges, float
    if isinstance(dtype, T.DecimalType):
        return _decimals(dtype)
    if isinstance(dtype, T.DateType):
        return (st.dates(), [date(1, 1, 1), date(9999, 12, 31), date(1970, 1, 1)],
                lambda: date(1970, 1, 1))
    if isinstance(dtype, T.TimestampNTZType):
        naive = [t.replace(tzinfo=None) for t in _TS_EDGES]
        return (st.datetimes(_TS_MIN.replace(tzinfo=None), _TS_MAX.replace(tzinfo=None)),
                naive, lambda: EPOCH.replace(tzinfo=None))
    if isinstance(dtype, T.TimestampType):
        return (st.datetimes(_TS_MIN.replace(tzinfo=None), _TS_MAX.replace(tzinfo=None),
                             timezones=st.just(timezone.utc)), list(_TS_EDGES), lambda: EPOCH)
    if isinstance(dtype, T.BinaryType):
        if json:
            raise UnsupportedSchemaError(
                f"column {path!r} is BINARY, which the Kafka 'json' serializer cannot "
                "write (JSON has no bytes); declare it STRING holding base64 (from_json "
                "reads base64 text into BINARY), or draw with target='input'")
        return st.binary(max_size=8), [b"", b"\x00", b"\xff\xfe"], bytes
    if isinstance(dtype, T.ArrayType):
        element = _column(dtype.elementType, dtype.containsNull, options, path + "[]")
        return st.lists(element, max_size=options.max_size), [[]], list
    if isinstance(dtype, T.MapType):
        if not isinstance(dtype.keyType, T.StringType):
            raise UnsupportedSchemaError(
                f"column {path!r} is a {dtype.simpleString()}: maps with "
                f"{dtype.keyType.simpleString()} keys are not drawn, since driver inputs "
                "(and JSON objects) have STRING keys only; declare STRING keys and cast "
                "in the pipeline")
        item = _column(dtype.valueType, dtype.valueContainsNull, options, path + "[]")
        return st.dictionaries(_text(), item, max_size=options.max_size), [{}], dict
    if isinstance(dtype, T.StructType):
        # no shortcut of its own: each field has one (and may be given in fields=)
        return _struct(dtype, options, path + "."), [], None
    raise UnsupportedSchemaError(
        f"column {path!r} is a {dtype.simpleString()}, which driver inputs do not take; "
        "rows are drawn for strings, binary, booleans, integers, floats, decimals, "
        "dates, timestamps (and timestamp_ntz), arrays, maps with string keys and structs")


_TS_EDGES = (_TS_MIN, _TS_MAX, EPOCH, EPOCH - timedelta(microseconds=1), DEFAULT_START_TIME)


def _text() -> st.SearchStrategy[str]:
    # UTF-8 encodable: no surrogate code points, which Spark would turn into '?'
    return st.text(st.characters(codec="utf-8"), max_size=12)


def _decimals(dtype: T.DecimalType
              ) -> tuple[st.SearchStrategy[Any], list[Any], Callable[[], Any]]:
    scale, precision = dtype.scale, dtype.precision
    top = Decimal((0, (9,) * precision, -scale))  # exact: no context rounding
    step = Decimal((0, (1,), -scale))
    zero = Decimal((0, (0,), -scale))
    bottom = top.copy_negate()  # exact too (unary minus rounds to the context's 28 digits)
    return (st.decimals(bottom, top, places=scale, allow_nan=False, allow_infinity=False),
            [zero, top, bottom, step, step.copy_negate()], lambda: zero)
