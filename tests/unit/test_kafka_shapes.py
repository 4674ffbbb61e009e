"""Kafka's encodings without Spark: murmur2, the default partitioner, serializers, headers."""

from __future__ import annotations

import math
from datetime import datetime, timezone

import pytest

from pyspark_streamtest.kafka import default_partition, deserializer, murmur2, serializer
from pyspark_streamtest.kafka.broker import normalize_headers

# Kafka's own test vectors (clients/src/test/java/org/apache/kafka/common/utils/UtilsTest.java,
# testMurmur2): murmur2 of these byte strings as the Java client computes them.
KAFKA_MURMUR2 = [
    (b"21", -973932308),
    (b"foobar", -790332482),
    (b"a-little-bit-long-string", -985981536),
    (b"a-little-bit-longer-string", -1486304829),
    (b"lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8", -58897971),
    (b"abc", 479470107),
]


@pytest.mark.parametrize(("data", "expected"), KAFKA_MURMUR2)
def test_murmur2_matches_kafka(data, expected):
    assert murmur2(data) == expected


def test_default_partition_is_positive_murmur2_modulo():
    # -973932308 & 0x7fffffff = 1173551340; 1173551340 % 3 = 0, % 7 = 3, % 12 = 0
    assert [default_partition(b"21", n) for n in (1, 3, 7, 12)] == [0, 0, 3, 0]
    # 479470107 is positive: abc -> 479470107 % 10 = 7
    assert default_partition(b"abc", 10) == 7
    with pytest.raises(ValueError, match="partitions must be at least 1"):
        default_partition(b"abc", 0)


@pytest.mark.parametrize(("name", "value", "encoded"), [
    ("string", "héllo", "héllo".encode()),
    ("bytes", b"\x00\xff", b"\x00\xff"),
    ("json", {"b": [1, None], "a": "é"}, '{"b":[1,null],"a":"é"}'.encode()),
    ("json", {"at": datetime(2024, 1, 1, tzinfo=timezone.utc)}, b'{"at":"2024-01-01T00:00:00+00:00"}'),
    ("int", 1, b"\x00\x00\x00\x01"),
    ("int", -1, b"\xff\xff\xff\xff"),
    ("int", 2**31 - 1, b"\x7f\xff\xff\xff"),
    ("long", 1, b"\x00\x00\x00\x00\x00\x00\x00\x01"),
    ("long", -2, b"\xff\xff\xff\xff\xff\xff\xff\xfe"),
    ("double", 1.0, bytes.fromhex("3ff0000000000000")),
    ("double", -0.5, bytes.fromhex("bfe0000000000000")),
    ("auto", b"raw", b"raw"),
    ("auto", "text", b"text"),
    ("auto", [1, 2], b"[1,2]"),
])
def test_serializers_use_kafkas_encodings(name, value, encoded):
    assert serializer(name)(value) == encoded
    if name in ("string", "bytes", "int", "long", "double"):
        assert deserializer(name)(encoded) == value


def test_json_and_double_round_trips():
    assert deserializer("json")(serializer("json")({"b": [1, None], "a": "é"})) == {
        "b": [1, None], "a": "é"}
    assert deserializer("double")(serializer("double")(math.inf)) == math.inf


@pytest.mark.parametrize(("name", "value", "error", "message"), [
    ("int", 2**31, ValueError, "does not fit in 4 bytes; use the 'long' serializer"),
    ("int", "1", TypeError, "the 'int' serializer takes int, got str"),
    ("int", True, TypeError, "the 'int' serializer takes int, got bool"),
    ("string", b"x", TypeError, "the 'string' serializer takes str, got bytes"),
    ("auto", 42, TypeError, "cannot serialize int 42 automatically"),
    ("json", {"b": b"x"}, TypeError, "bytes cannot be written as JSON"),
])
def test_serializers_refuse_what_they_cannot_encode(name, value, error, message):
    with pytest.raises(error, match=message):
        serializer(name)(value)


def test_unknown_names_and_bad_callables():
    with pytest.raises(ValueError, match="unknown serializer 'avro'; use one of 'auto', "):
        serializer("avro")
    with pytest.raises(ValueError, match="unknown deserializer 'auto'"):
        deserializer("auto")
    with pytest.raises(TypeError, match="serializer 'str' returned str; a serializer must "
                                        "return bytes"):
        serializer(str)(1)
    assert serializer(lambda v: str(v).encode())(7) == b"7"
    assert deserializer(None)(b"x") == b"x"


def test_headers_keep_order_and_repeats():
    assert normalize_headers([("a", "1"), ("a", b"2"), ("b", None)]) == (
        ("a", b"1"), ("a", b"2"), ("b", None))
    assert normalize_headers({"x": "y"}) == (("x", b"y"),)
    assert normalize_headers(None) == ()
    with pytest.raises(TypeError, match="header keys must be str"):
        normalize_headers([(1, b"x")])
    with pytest.raises(TypeError, match="header 'a': values must be bytes, str or None"):
        normalize_headers({"a": 1})
    with pytest.raises(TypeError, match="headers must be a dict or a list"):
        normalize_headers("a=b")
