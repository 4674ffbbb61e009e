"""Values into the JVM, checked against the schema.

Each piped value (dict, Row or tuple) is checked field by field and turned into
one JSON object whose text Spark's ``from_json`` parses back to exactly the same
values (timestamps as UTC ISO 8601 strings, binary as base64, decimals
as strings). Converters are compiled once per schema; the per-value path does no
schema lookups. (The way out, collected Rows to plain dicts: :mod:`._decoding`.)

A value Spark would change on the way in is refused (:class:`SchemaMismatchError`
naming the field) rather than silently altered: a decimal with more digits after the
point than its column's scale (Spark would round it) or too many before it; a FLOAT
(32-bit) value that overflows to infinity or underflows to zero (infinities, NaN and
zero given as such pass); a string holding a surrogate code point (not valid Unicode:
Spark's UTF-8 strings would make it ``?``). A TIMESTAMP outside the range Spark holds
and PySpark gives back is a :class:`TimeOutOfRangeError` (see
:mod:`pyspark_streamtest.core.time`).
"""

from __future__ import annotations

import base64
import datetime as _dt
import difflib
import json
import math
import re
import struct
from collections.abc import Callable, Mapping
from decimal import Decimal
from json.encoder import encode_basestring_ascii as _quote
from typing import Any

from pyspark.sql import Row
from pyspark.sql import types as T

from ..errors import (
    NaiveDatetimeError,
    SchemaMismatchError,
    UnsupportedSchemaError,
    hide_our_frames,
)
from .time import check_instant, is_plain_utc

__tracebackhide__ = hide_our_frames

Encoder = Callable[[Any, str], Any]
TextEncoder = Callable[[Any, str], str]
"""Checks one value and returns its JSON text, exactly as :func:`to_json_line` writes it."""
_FLOAT32 = struct.Struct("<f")
_SURROGATE = re.compile("[\ud800-\udfff]")

INT_RANGES: dict[type, tuple[int, int]] = {
    T.ByteType: (-(2**7), 2**7 - 1),
    T.ShortType: (-(2**15), 2**15 - 1),
    T.IntegerType: (-(2**31), 2**31 - 1),
    T.LongType: (-(2**63), 2**63 - 1),
}


def _fail(path: str, expected: str, value: Any) -> SchemaMismatchError:
    return SchemaMismatchError(
        f"field {path!r} expects {expected}, got {type(value).__name__} {value!r}"
    )


def _int_encoder(dtype: T.DataType) -> Encoder:
    low, high = INT_RANGES[type(dtype)]
    name = dtype.simpleString().upper()

    def encode(value: Any, path: str) -> Any:
        if type(value) is bool or not isinstance(value, int):
            raise _fail(path, f"{name} (a Python int)", value)
        if not low <= value <= high:
            raise SchemaMismatchError(f"field {path!r}: {value} is out of range for {name}")
        return value

    return encode


def _float_encoder(dtype: T.DataType) -> Encoder:
    name = dtype.simpleString().upper()
    single = isinstance(dtype, T.FloatType)

    def encode(value: Any, path: str) -> Any:
        if type(value) is bool or not isinstance(value, (int, float)):
            raise _fail(path, f"{name} (a Python float)", value)
        try:
            value = float(value)
        except OverflowError:  # an int past the largest double
            raise SchemaMismatchError(
                f"field {path!r}: {value} is too large for {name}") from None
        if math.isnan(value):
            return "NaN"
        if math.isinf(value):
            return "Infinity" if value > 0 else "-Infinity"
        if single:
            _check_float32(value, path)
        return value

    return encode


def _check_float32(value: float, path: str) -> None:
    """Refuses a finite double that a FLOAT (32-bit) column would turn into an infinity
    (overflow) or into zero (underflow); ordinary rounding to 24 bits passes."""
    try:
        single = _FLOAT32.unpack(_FLOAT32.pack(value))[0]
    except OverflowError:
        raise SchemaMismatchError(
            f"field {path!r}: {value!r} is too large for FLOAT (32-bit, at most "
            "±3.4028235e+38): Spark would make it Infinity. Declare the column DOUBLE, "
            "or pass float('inf') if infinity is meant"
        ) from None
    if single == 0.0 and value != 0.0:
        raise SchemaMismatchError(
            f"field {path!r}: {value!r} is too small for FLOAT (32-bit, the smallest "
            "nonzero magnitude is 1.4e-45): Spark would make it 0.0. Declare the column "
            "DOUBLE, or pass 0.0 if zero is meant"
        )


def _check_text(value: str, where: str) -> None:
    """Refuses a str holding surrogate code points (U+D800..U+DFFF): not Unicode text,
    so not valid UTF-8, and Spark's strings are UTF-8 (it would write ``?``). ``where``
    names the field (``field 'a.b'``, ``a key of field 'm'``)."""
    if value.isascii():
        return
    found = _SURROGATE.search(value)
    if found is not None:
        raise SchemaMismatchError(
            f"{where}: {value!r} holds the surrogate code point "
            f"U+{ord(found.group()):04X} at index {found.start()}, which is not valid "
            "Unicode (a lone half of a UTF-16 pair); Spark's strings are UTF-8 and would "
            "turn it into '?'. Decode the text properly (e.g. errors='replace') or pipe "
            "it as BINARY"
        )


def _string(value: Any, path: str) -> Any:
    if not isinstance(value, str):
        raise _fail(path, "STRING (a Python str)", value)
    _check_text(value, f"field {path!r}")
    return value


def _boolean(value: Any, path: str) -> Any:
    if not isinstance(value, bool):
        raise _fail(path, "BOOLEAN (a Python bool)", value)
    return value


def _binary(value: Any, path: str) -> Any:
    if not isinstance(value, (bytes, bytearray, memoryview)):
        raise _fail(path, "BINARY (Python bytes)", value)
    return base64.b64encode(bytes(value)).decode("ascii")


def _date(value: Any, path: str) -> Any:
    if isinstance(value, _dt.datetime) or not isinstance(value, _dt.date):
        raise _fail(path, "DATE (a datetime.date)", value)
    return value.isoformat()


def _timestamp(value: Any, path: str) -> Any:
    # ISO 8601 with a +00:00 offset (fraction only when non-zero), which from_json reads
    # exactly; isoformat() is C code and the common UTC case skips astimezone().
    # The first and last days of the range are checked (check_instant): PySpark cannot
    # give every instant there back.
    if not isinstance(value, _dt.datetime):
        raise _fail(path, "TIMESTAMP (a timezone-aware datetime)", value)
    if is_plain_utc(value):
        return value.isoformat()
    if value.tzinfo is None or value.utcoffset() is None:
        raise NaiveDatetimeError(
            f"field {path!r} is a naive datetime ({value.isoformat()}); TIMESTAMP values must "
            "be timezone-aware, e.g. datetime(..., tzinfo=timezone.utc)"
        )
    return check_instant(value, f"field {path!r}").isoformat()


def _timestamp_ntz(value: Any, path: str) -> Any:
    if not isinstance(value, _dt.datetime):
        raise _fail(path, "TIMESTAMP_NTZ (a naive datetime)", value)
    if value.tzinfo is not None:
        raise _fail(path, "TIMESTAMP_NTZ (a naive datetime, without tzinfo)", value)
    # isoformat pads years to 4 digits; strftime("%Y") does not (year 1 is "1").
    return value.isoformat(timespec="microseconds")


def _decimal_encoder(dtype: T.DecimalType) -> Encoder:
    name = dtype.simpleString().upper()
    whole_digits = dtype.precision - dtype.scale

    def encode(value: Any, path: str) -> Any:
        if type(value) is bool or not isinstance(value, (Decimal, int)):
            raise _fail(path, f"{name} (a decimal.Decimal)", value)
        number = Decimal(value)  # exact: no context rounding
        if not number.is_finite():
            raise SchemaMismatchError(f"field {path!r}: {value} is not a finite decimal")
        decimals, integer_digits = _digits(number)
        if decimals > dtype.scale:
            raise SchemaMismatchError(
                f"field {path!r}: {value} does not fit {name}: it has {decimals} digits "
                f"after the point, more decimals than the scale allows ({dtype.scale}), and "
                "Spark would round it. Round it first (e.g. "
                f"value.quantize(Decimal('1e-{dtype.scale}'))) or widen the column's scale"
            )
        if integer_digits > whole_digits:
            raise SchemaMismatchError(
                f"field {path!r}: {value} does not fit {name}: it has {integer_digits} "
                f"digits before the point, and {name} holds at most {whole_digits} (its "
                f"precision {dtype.precision} minus its scale {dtype.scale}); widen the "
                "column's precision"
            )
        return format(number, "f")  # plain notation, never an exponent

    return encode


def _digits(number: Decimal) -> tuple[int, int]:
    """(digits after the point, digits before it) of a finite ``number``'s value, exactly:
    trailing zeros do not count (``1.50`` has 1 decimal), and zero has none."""
    _, digits, raw_exponent = number.as_tuple()
    exponent = int(raw_exponent)  # an int for every finite Decimal
    significant = len(digits)
    while significant and digits[significant - 1] == 0:
        significant -= 1
        exponent += 1
    if significant == 0:
        return 0, 0
    return max(-exponent, 0), max(significant + exponent, 0)


def _array_encoder(dtype: T.ArrayType) -> Encoder:
    element = _nullable(encoder_for(dtype.elementType), dtype.containsNull)

    def encode(value: Any, path: str) -> Any:
        if isinstance(value, (str, bytes, Mapping)) or not isinstance(value, (list, tuple)):
            raise _fail(path, f"{dtype.simpleString().upper()} (a list)", value)
        return [element(item, f"{path}[{i}]") for i, item in enumerate(value)]

    return encode


def _map_encoder(dtype: T.MapType) -> Encoder:
    if not isinstance(dtype.keyType, T.StringType):
        raise UnsupportedSchemaError(
            f"{dtype.simpleString()} has {dtype.keyType.simpleString()} keys; driver inputs "
            "support maps with STRING keys only. Declare the input with STRING keys and cast "
            "in the topology."
        )
    value_encoder = _nullable(encoder_for(dtype.valueType), dtype.valueContainsNull)

    def encode(value: Any, path: str) -> Any:
        if not isinstance(value, Mapping):
            raise _fail(path, f"{dtype.simpleString().upper()} (a dict)", value)
        out = {}
        for key, item in value.items():
            if not isinstance(key, str):
                raise _fail(f"{path} key", "STRING", key)
            _check_text(key, f"a key of field {path!r}")
            out[key] = value_encoder(item, f"{path}[{key}]")
        return out

    return encode


def _nullable(encoder: Encoder, nullable: bool) -> Encoder:
    def encode(value: Any, path: str) -> Any:
        if value is None:
            if not nullable:
                raise SchemaMismatchError(f"field {path!r} is not nullable, got None")
            return None
        return encoder(value, path)

    return encode


class StructEncoder:
    """Checks a dict / Row / tuple against a struct and returns a JSON-ready dict."""

    def __init__(self, schema: T.StructType, prefix: str = "") -> None:
        self.schema = schema
        self.names = [f.name for f in schema.fields]
        self._prefix = prefix
        self._fields = [
            (f.name, _nullable(encoder_for(f.dataType, f"{prefix}{f.name}."), f.nullable))
            for f in schema.fields
        ]
        self._index = frozenset(self.names)
        self._names_except: dict[str, list[str]] = {}
        self._texts = [
            (f.name, _quote(f.name) + ":", f"{prefix}{f.name}",
             _field_text(f.dataType, f"{prefix}{f.name}.", f.nullable))
            for f in schema.fields
        ]

    def names_except(self, column: str) -> list[str]:
        """The field names in order without ``column`` (computed once per column)."""
        names = self._names_except.get(column)
        if names is None:
            names = self._names_except[column] = [n for n in self.names if n != column]
        return names

    def as_mapping(self, value: Any, path: str) -> Mapping[str, Any]:
        kind = type(value)  # the common cases first, without isinstance chains
        if kind is dict:
            return value  # type: ignore[no-any-return]
        if kind is tuple and len(value) == len(self.names):
            return dict(zip(self.names, value, strict=True))
        if isinstance(value, Row) and hasattr(value, "__fields__"):
            return value.asDict(recursive=False)
        if isinstance(value, Mapping):
            return value
        if isinstance(value, (tuple, list)):
            if len(value) != len(self.names):
                raise SchemaMismatchError(
                    f"{path or 'value'} has {len(value)} positional fields, the schema has "
                    f"{len(self.names)} ({', '.join(self.names)}); pass all of them in "
                    "order, or a dict by name"
                )
            return dict(zip(self.names, value, strict=True))
        raise SchemaMismatchError(
            f"{path or 'value'} must be a dict, a Row or a tuple matching the schema "
            f"({self.schema.simpleString()}), got {type(value).__name__} {value!r}"
        )

    def encode_mapping(self, value: Mapping[str, Any]) -> dict[str, Any]:
        if not self._index.issuperset(value):
            self._refuse_unknown(value)
        return {
            name: encode(value.get(name), f"{self._prefix}{name}")
            for name, encode in self._fields
        }

    def json_line(self, value: Mapping[str, Any]) -> str:
        """``to_json_line(self.encode_mapping(value))``, the same checks and the same
        text, built field by field without the intermediate dict (the bulk pipe's path)."""
        if not self._index.issuperset(value):
            self._refuse_unknown(value)
        get = value.get
        return "{" + ",".join([
            key + text(get(name), path) for name, key, path, text in self._texts
        ]) + "}"

    def _refuse_unknown(self, value: Mapping[Any, Any]) -> None:
        key = next(key for key in value if key not in self._index)
        close = difflib.get_close_matches(str(key), self.names, n=1)
        hint = f"; did you mean {self._prefix + close[0]!r}?" if close else ""
        raise SchemaMismatchError(
            f"field {self._prefix + str(key)!r} is not in the schema "
            f"({self.schema.simpleString()}){hint}"
        )

    def __call__(self, value: Any, path: str) -> Any:
        return self.encode_mapping(self.as_mapping(value, path))


def encoder_for(dtype: T.DataType, prefix: str = "") -> Encoder:
    if isinstance(dtype, T.StringType):
        return _string
    if isinstance(dtype, (T.ByteType, T.ShortType, T.IntegerType, T.LongType)):
        return _int_encoder(dtype)
    if isinstance(dtype, (T.FloatType, T.DoubleType)):
        return _float_encoder(dtype)
    if isinstance(dtype, T.BooleanType):
        return _boolean
    if isinstance(dtype, T.BinaryType):
        return _binary
    if isinstance(dtype, T.DateType):
        return _date
    if isinstance(dtype, T.TimestampNTZType):
        return _timestamp_ntz
    if isinstance(dtype, T.TimestampType):
        return _timestamp
    if isinstance(dtype, T.DecimalType):
        return _decimal_encoder(dtype)
    if isinstance(dtype, T.ArrayType):
        return _array_encoder(dtype)
    if isinstance(dtype, T.MapType):
        return _map_encoder(dtype)
    if isinstance(dtype, T.StructType):
        return StructEncoder(dtype, prefix)
    raise UnsupportedSchemaError(
        f"driver inputs do not support {dtype.simpleString()} columns; supported: strings, "
        "numbers, booleans, binary, decimals, dates, timestamps, arrays, structs and maps "
        "with string keys"
    )


_DUMPS = json.JSONEncoder(separators=(",", ":"), allow_nan=False).encode


def to_json_line(encoded: Mapping[str, Any]) -> str:
    """One line of JSON (json.dumps escapes newlines inside strings)."""
    return _DUMPS(encoded)


# JSON text per column: a line built from these is the same text as to_json_line of the
# encoded dict (json writes each value of a dict as it writes the value alone).
def _nullable_text(text: TextEncoder, nullable: bool) -> TextEncoder:
    def encode(value: Any, path: str) -> str:
        if value is None:
            if not nullable:
                raise SchemaMismatchError(f"field {path!r} is not nullable, got None")
            return "null"
        return text(value, path)

    return encode


def _field_text(dtype: T.DataType, prefix: str, nullable: bool) -> TextEncoder:
    """A column's text encoder: the usual values of the common types take a shortcut
    that gives the same text; everything else, None included, goes the full way."""
    full = _nullable_text(text_encoder_for(dtype, prefix), nullable)
    if isinstance(dtype, T.StringType):
        def text(value: Any, path: str) -> str:
            if type(value) is str and value.isascii():  # no surrogates possible
                return _quote(value)
            return full(value, path)
    elif isinstance(dtype, (T.ByteType, T.ShortType, T.IntegerType, T.LongType)):
        low, high = INT_RANGES[type(dtype)]

        def text(value: Any, path: str) -> str:
            if type(value) is int and low <= value <= high:
                return int.__repr__(value)
            return full(value, path)
    elif isinstance(dtype, T.DoubleType):
        def text(value: Any, path: str) -> str:
            if type(value) is float and math.isfinite(value):
                return float.__repr__(value)
            return full(value, path)
    elif isinstance(dtype, T.TimestampType):
        def text(value: Any, path: str) -> str:
            # isoformat() is ASCII without quotes or backslashes: nothing to escape
            if is_plain_utc(value):
                return '"' + value.isoformat() + '"'
            return full(value, path)
    else:
        return full
    return text


def text_encoder_for(dtype: T.DataType, prefix: str = "") -> TextEncoder:
    """Like :func:`encoder_for`, but returning the value's JSON text."""
    encode = encoder_for(dtype, prefix)
    return lambda value, path: _DUMPS(encode(value, path))
