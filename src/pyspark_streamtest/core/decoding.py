"""Values out of the JVM: collected Rows become plain dicts, timestamps aware in UTC.

Decoders are compiled once per schema; a column that PySpark already gives as plain
Python gets none.
"""

from __future__ import annotations

import datetime as _dt
from collections.abc import Callable, Sequence
from typing import Any

from pyspark.sql import types as T

from ..errors import hide_our_frames

__tracebackhide__ = hide_our_frames

_UTC = _dt.timezone.utc
Decoder = Callable[[Any], Any]


def _decode_timestamp(value: Any) -> Any:
    # PySpark gives naive datetimes in this process's local time zone; make them aware.
    return value.astimezone(_UTC)


def decoder_for(dtype: T.DataType) -> Decoder | None:
    """A function making a collected value plain Python, or None when it already is."""
    if isinstance(dtype, T.TimestampType) and not isinstance(dtype, T.TimestampNTZType):
        return _decode_timestamp
    if isinstance(dtype, T.StructType):
        return row_decoder(dtype)
    if isinstance(dtype, T.ArrayType):
        inner = decoder_for(dtype.elementType)
        if inner is None:
            return list
        return lambda items: [None if x is None else inner(x) for x in items]
    if isinstance(dtype, T.MapType):
        key = decoder_for(dtype.keyType) or (lambda k: k)
        val = decoder_for(dtype.valueType) or (lambda v: v)
        return lambda items: {key(k): (None if v is None else val(v)) for k, v in items.items()}
    if isinstance(dtype, T.BinaryType):
        return bytes
    return None


def row_decoder(schema: T.StructType) -> Callable[[Sequence[Any]], dict[str, Any]]:
    plan = [(f.name, decoder_for(f.dataType)) for f in schema.fields]

    def decode(row: Sequence[Any]) -> dict[str, Any]:
        return {
            name: (value if decode_field is None or value is None else decode_field(value))
            for (name, decode_field), value in zip(plan, row, strict=True)
        }

    return decode
