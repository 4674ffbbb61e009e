"""Kafka shapes without Kafka: record schemas, serializers, the default partitioner.

Spark's Kafka source gives every query the same columns (:data:`KAFKA_SOURCE_SCHEMA`,
plus ``headers`` with ``includeHeaders``); its sink takes ``value`` and optionally
``key``, ``topic``, ``partition`` and ``headers``. Topologies declare Kafka-shaped inputs
and outputs with :meth:`Topology.kafka_input <pyspark_streamtest.Topology.kafka_input>`
and :meth:`Topology.kafka_output <pyspark_streamtest.Topology.kafka_output>`; the
driver then plays the broker's part in memory: it serializes keys and values, assigns
partitions and offsets, stamps timestamps, and reads what the sink wrote.

**Serializers** (``key_serializer=`` / ``value_serializer=`` of input topics) turn a
Python value into the bytes Spark sees. By name:

``"string"``  UTF-8 text (Kafka's ``StringSerializer``).
``"bytes"``   bytes as they are (``ByteArraySerializer``).
``"json"``    compact JSON, UTF-8 (``{"a":1}``), datetimes as ISO-8601 strings.
``"int"``     4-byte big-endian two's complement (``IntegerSerializer``).
``"long"``    8-byte big-endian two's complement (``LongSerializer``).
``"double"``  8-byte big-endian IEEE 754 (``DoubleSerializer``).
``"auto"``    the default: bytes as they are, ``str`` as UTF-8, dicts and lists as JSON;
              anything else is refused with a hint to pick a serializer.

or any callable ``value -> bytes``. ``None`` is never serialized: a null key stays
null, and a null value is a *tombstone* (Spark's ``value`` column is null).

**Deserializers** (``key_deserializer=`` / ``value_deserializer=`` of output topics)
are the same names (``"auto"`` is not one: reading needs to know) or any callable
``bytes -> value``; without one, keys and values are returned as ``bytes``.

**Partitions.** A record piped with ``partition=`` goes there. Otherwise a record
with a key goes to ``murmur2(serialized key) & 0x7fffffff % partitions``, exactly as
Kafka's default partitioner places keyed records, so keys land where a real producer
would put them. Records without a key go round-robin over the partitions, starting at
partition 0 for each topic (Kafka's own producers use a "sticky" choice for them,
which is not deterministic; a test wants determinism). Offsets start at 0 in every
partition and grow by one per record.
"""

from ..errors import hide_our_frames
from .serdes import (
    CREATE_TIME,
    KAFKA_HEADERS_TYPE,
    KAFKA_SOURCE_SCHEMA,
    LOG_APPEND_TIME,
    Deserializer,
    Serializer,
    TimestampTypeName,
    default_partition,
    deserializer,
    murmur2,
    serializer,
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
