"""Kafka record shapes, serializers, deserializers and the default partitioner
(the face is :mod:`pyspark_streamtest.kafka`).

The ``string``, ``json`` and ``auto`` serializers write text as UTF-8; a str holding a
surrogate code point (U+D800..U+DFFF, not Unicode text) has no UTF-8 bytes and is refused
with :class:`~pyspark_streamtest.errors.SchemaMismatchError` naming where it is."""

from __future__ import annotations

import datetime as _dt
import json
import struct
from collections.abc import Callable
from decimal import Decimal
from typing import Any, Literal, cast

from pyspark.sql.types import (
    ArrayType,
    BinaryType,
    IntegerType,
    LongType,
    StringType,
    StructField,
    StructType,
    TimestampType,
)

from ..errors import (
    InvalidArgumentError,
    InvalidArgumentTypeError,
    SchemaMismatchError,
    hide_our_frames,
)

__tracebackhide__ = hide_our_frames

__all__ = [
    "CREATE_TIME",
    "KAFKA_HEADERS_TYPE",
    "KAFKA_SOURCE_SCHEMA",
    "LOG_APPEND_TIME",
    "Deserializer",
    "Serializer",
    "TimestampTypeName",
    "default_partition",
    "deserializer",
    "murmur2",
    "serializer",
]

CREATE_TIME = 0
"""``timestampType`` of a record whose timestamp the producer set (the record's time)."""
LOG_APPEND_TIME = 1
"""``timestampType`` of a record stamped by the broker when appended (the driver's
processing time when the record was piped)."""

KAFKA_HEADERS_TYPE = ArrayType(
    StructType([StructField("key", StringType()), StructField("value", BinaryType())])
)
"""``headers``: ``array<struct<key: string, value: binary>>``, as Spark's Kafka source."""

KAFKA_SOURCE_SCHEMA = StructType([
    StructField("key", BinaryType()),
    StructField("value", BinaryType()),
    StructField("topic", StringType()),
    StructField("partition", IntegerType()),
    StructField("offset", LongType()),
    StructField("timestamp", TimestampType()),
    StructField("timestampType", IntegerType()),
])
"""The columns of Spark's Kafka source (all nullable, as there), without headers."""

TimestampTypeName = Literal["CreateTime", "LogAppendTime"]

Serializer = Callable[[Any], bytes]
Deserializer = Callable[[bytes], Any]
SerializerSpec = str | Serializer
DeserializerSpec = str | Deserializer | None

_INT = struct.Struct(">i")
_LONG = struct.Struct(">q")
_DOUBLE = struct.Struct(">d")


# --- murmur2 and the default partitioner ------------------------------------------------------
def murmur2(data: bytes) -> int:
    """Kafka's 32-bit murmur2 hash of ``data`` (seed ``0x9747b28c``), as a signed int.

    The same value ``org.apache.kafka.common.utils.Utils.murmur2`` returns, e.g.
    ``murmur2(b"21") == -973932308``.
    """
    m = 0x5BD1E995
    length = len(data)
    h = (0x9747B28C ^ length) & 0xFFFFFFFF
    whole = length - length % 4
    for i in range(0, whole, 4):
        k = int.from_bytes(data[i : i + 4], "little")
        k = (k * m) & 0xFFFFFFFF
        k ^= k >> 24
        k = (k * m) & 0xFFFFFFFF
        h = ((h * m) & 0xFFFFFFFF) ^ k
    tail = length % 4
    if tail:
        if tail == 3:
            h ^= data[whole + 2] << 16
        if tail >= 2:
            h ^= data[whole + 1] << 8
        h ^= data[whole]
        h = (h * m) & 0xFFFFFFFF
    h ^= h >> 13
    h = (h * m) & 0xFFFFFFFF
    h ^= h >> 15
    return h - (1 << 32) if h & 0x80000000 else h


def default_partition(key: bytes, partitions: int) -> int:
    """The partition Kafka's default partitioner gives a record with serialized ``key``:
    ``(murmur2(key) & 0x7fffffff) % partitions``."""
    if partitions < 1:
        raise InvalidArgumentError(f"partitions must be at least 1, got {partitions}")
    return (murmur2(key) & 0x7FFFFFFF) % partitions


# --- serializers -----------------------------------------------------------------------------
def _json_default(value: Any) -> Any:
    if isinstance(value, (_dt.datetime, _dt.date)):
        return value.isoformat()
    if isinstance(value, Decimal):
        return str(value)
    if isinstance(value, (bytes, bytearray)):
        raise InvalidArgumentTypeError(
            "bytes cannot be written as JSON; use the 'bytes' serializer"
        )
    raise InvalidArgumentTypeError(f"{type(value).__name__} is not JSON serializable")


def _to_json(value: Any) -> bytes:
    text = json.dumps(
        value, separators=(",", ":"), ensure_ascii=False, default=_json_default, allow_nan=False
    )
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError:
        path, bad = _first_unencodable(value, "value")
        raise _not_unicode("json", f"the string at {path}", bad) from None


def _first_unencodable(value: Any, path: str) -> tuple[str, str]:
    """(path, string) of the first string in a JSON-ready ``value`` (keys included) that
    has no UTF-8 encoding."""
    if isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            return path, value
    elif isinstance(value, dict):
        for key, item in value.items():
            if isinstance(key, str):
                found = _first_unencodable(key, f"{path} key {key!r}")
                if found[0]:
                    return found
            found = _first_unencodable(item, f"{path}[{key!r}]")
            if found[0]:
                return found
    elif isinstance(value, (list, tuple)):
        for index, item in enumerate(value):
            found = _first_unencodable(item, f"{path}[{index}]")
            if found[0]:
                return found
    return "", ""


def _not_unicode(name: str, where: str, text: str) -> SchemaMismatchError:
    """The refusal of a str holding a surrogate code point (U+D800..U+DFFF), which is not
    Unicode text and has no UTF-8 bytes (a Kafka serializer must write bytes)."""
    index, char = next((i, c) for i, c in enumerate(text) if 0xD800 <= ord(c) <= 0xDFFF)
    return SchemaMismatchError(
        f"the {name!r} serializer: {where} ({text!r}) holds the surrogate code point "
        f"U+{ord(char):04X} at index {index}, which is not valid Unicode (a lone half of a "
        "UTF-16 pair) and has no UTF-8 encoding. Decode the text properly (e.g. "
        "errors='replace') or pipe bytes"
    )


def _utf8_text(value: str, name: str) -> bytes:
    try:
        return value.encode("utf-8")
    except UnicodeEncodeError:
        raise _not_unicode(name, "the str", value) from None


def _to_string(value: Any) -> bytes:
    if not isinstance(value, str):
        raise InvalidArgumentTypeError(
            f"the 'string' serializer takes str, got {type(value).__name__}"
        )
    return _utf8_text(value, "string")


def _to_bytes(value: Any) -> bytes:
    if not isinstance(value, (bytes, bytearray, memoryview)):
        raise InvalidArgumentTypeError(
            f"the 'bytes' serializer takes bytes, got {type(value).__name__}"
        )
    return bytes(value)


def _to_int(value: Any) -> bytes:
    if type(value) is bool or not isinstance(value, int):
        raise InvalidArgumentTypeError(
            f"the 'int' serializer takes int, got {type(value).__name__}"
        )
    try:
        return _INT.pack(value)
    except struct.error:
        raise InvalidArgumentError(
            f"{value} does not fit in 4 bytes; use the 'long' serializer"
        ) from None


def _to_long(value: Any) -> bytes:
    if type(value) is bool or not isinstance(value, int):
        raise InvalidArgumentTypeError(
            f"the 'long' serializer takes int, got {type(value).__name__}"
        )
    try:
        return _LONG.pack(value)
    except struct.error:
        raise InvalidArgumentError(f"{value} does not fit in 8 bytes") from None


def _to_double(value: Any) -> bytes:
    if type(value) is bool or not isinstance(value, (int, float)):
        raise InvalidArgumentTypeError(
            f"the 'double' serializer takes float, got {type(value).__name__}"
        )
    return _DOUBLE.pack(float(value))


def _auto(value: Any) -> bytes:
    if isinstance(value, (bytes, bytearray, memoryview)):
        return bytes(value)
    if isinstance(value, str):
        return _utf8_text(value, "auto")
    if isinstance(value, (dict, list)):
        return _to_json(value)
    raise InvalidArgumentTypeError(
        f"cannot serialize {type(value).__name__} {value!r} automatically (bytes, str, dict "
        "and list only); create the topic with key_serializer=/value_serializer= 'int', "
        "'long', 'double', 'json' or a function returning bytes"
    )


_SERIALIZERS: dict[str, Serializer] = {
    "auto": _auto,
    "string": _to_string,
    "bytes": _to_bytes,
    "json": _to_json,
    "int": _to_int,
    "long": _to_long,
    "double": _to_double,
}


def _from_int(data: bytes) -> int:
    return cast(int, _INT.unpack(data)[0])


def _from_long(data: bytes) -> int:
    return cast(int, _LONG.unpack(data)[0])


def _from_double(data: bytes) -> float:
    return cast(float, _DOUBLE.unpack(data)[0])


_DESERIALIZERS: dict[str, Deserializer] = {
    "string": lambda data: data.decode("utf-8"),
    "bytes": bytes,
    "json": lambda data: json.loads(data.decode("utf-8")),
    "int": _from_int,
    "long": _from_long,
    "double": _from_double,
}


def serializer(spec: SerializerSpec) -> Serializer:
    """The serializer named ``spec`` (see the module doc), or ``spec`` if it is callable.
    Unknown names raise :class:`~pyspark_streamtest.errors.InvalidArgumentError` (a
    ``ValueError``) listing the known ones."""
    if callable(spec):
        return _checked_callable(spec)
    if isinstance(spec, str) and spec in _SERIALIZERS:
        return _SERIALIZERS[spec]
    raise InvalidArgumentError(
        f"unknown serializer {spec!r}; use one of {', '.join(map(repr, _SERIALIZERS))} or a "
        "function returning bytes"
    )


def _checked_callable(function: Serializer) -> Serializer:
    def serialize(value: Any) -> bytes:
        out = function(value)
        if not isinstance(out, (bytes, bytearray, memoryview)):
            raise InvalidArgumentTypeError(
                f"serializer {getattr(function, '__name__', function)!r} returned "
                f"{type(out).__name__}; a serializer must return bytes"
            )
        return bytes(out)

    return serialize


def deserializer(spec: DeserializerSpec) -> Deserializer:
    """The deserializer named ``spec``, ``spec`` itself if callable, or ``bytes`` for None."""
    if spec is None:
        return bytes
    if callable(spec):
        return spec
    if isinstance(spec, str) and spec in _DESERIALIZERS:
        return _DESERIALIZERS[spec]
    raise InvalidArgumentError(
        f"unknown deserializer {spec!r}; use one of {', '.join(map(repr, _DESERIALIZERS))}, a "
        "function taking bytes, or None for raw bytes"
    )
