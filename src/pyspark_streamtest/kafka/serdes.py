"""Kafka record shapes, serializers, deserializers and the default partitioner
(the face is :mod:`pyspark_streamtest.kafka`)."""

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
        raise ValueError(f"partitions must be at least 1, got {partitions}")
    return (murmur2(key) & 0x7FFFFFFF) % partitions


# --- serializers -----------------------------------------------------------------------------
def _json_default(value: Any) -> Any:
    if isinstance(value, (_dt.datetime, _dt.date)):
        return value.isoformat()
    if isinstance(value, Decimal):
        return str(value)
    if isinstance(value, (bytes, bytearray)):
        raise TypeError("bytes cannot be written as JSON; use the 'bytes' serializer")
    raise TypeError(f"{type(value).__name__} is not JSON serializable")


def _to_json(value: Any) -> bytes:
    return json.dumps(
        value, separators=(",", ":"), ensure_ascii=False, default=_json_default, allow_nan=False
    ).encode("utf-8")


def _to_string(value: Any) -> bytes:
    if not isinstance(value, str):
        raise TypeError(f"the 'string' serializer takes str, got {type(value).__name__}")
    return value.encode("utf-8")


def _to_bytes(value: Any) -> bytes:
    if not isinstance(value, (bytes, bytearray, memoryview)):
        raise TypeError(f"the 'bytes' serializer takes bytes, got {type(value).__name__}")
    return bytes(value)


def _to_int(value: Any) -> bytes:
    if type(value) is bool or not isinstance(value, int):
        raise TypeError(f"the 'int' serializer takes int, got {type(value).__name__}")
    try:
        return _INT.pack(value)
    except struct.error:
        raise ValueError(f"{value} does not fit in 4 bytes; use the 'long' serializer") from None


def _to_long(value: Any) -> bytes:
    if type(value) is bool or not isinstance(value, int):
        raise TypeError(f"the 'long' serializer takes int, got {type(value).__name__}")
    try:
        return _LONG.pack(value)
    except struct.error:
        raise ValueError(f"{value} does not fit in 8 bytes") from None


def _to_double(value: Any) -> bytes:
    if type(value) is bool or not isinstance(value, (int, float)):
        raise TypeError(f"the 'double' serializer takes float, got {type(value).__name__}")
    return _DOUBLE.pack(float(value))


def _auto(value: Any) -> bytes:
    if isinstance(value, (bytes, bytearray, memoryview)):
        return bytes(value)
    if isinstance(value, str):
        return value.encode("utf-8")
    if isinstance(value, (dict, list)):
        return _to_json(value)
    raise TypeError(
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
    Unknown names raise ``ValueError`` listing the known ones."""
    if callable(spec):
        return _checked_callable(spec)
    if isinstance(spec, str) and spec in _SERIALIZERS:
        return _SERIALIZERS[spec]
    raise ValueError(
        f"unknown serializer {spec!r}; use one of {', '.join(map(repr, _SERIALIZERS))} or a "
        "function returning bytes"
    )


def _checked_callable(function: Serializer) -> Serializer:
    def serialize(value: Any) -> bytes:
        out = function(value)
        if not isinstance(out, (bytes, bytearray, memoryview)):
            raise TypeError(
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
    raise ValueError(
        f"unknown deserializer {spec!r}; use one of {', '.join(map(repr, _DESERIALIZERS))}, a "
        "function taking bytes, or None for raw bytes"
    )
