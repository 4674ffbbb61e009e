"""Checking and encoding values against a schema (Spark only parses the DDL strings)."""

from __future__ import annotations

import json
from datetime import date, datetime, timedelta, timezone
from decimal import Decimal

import pytest
from pyspark.sql import Row
from pyspark.sql.types import StructType, _parse_datatype_string

from pyspark_streamtest.core._values import StructEncoder, row_decoder, to_json_line
from pyspark_streamtest.errors import (
    NaiveDatetimeError,
    SchemaMismatchError,
    UnsupportedSchemaError,
)

SCHEMA = (
    "s STRING, i INT, l BIGINT, f DOUBLE, b BOOLEAN, bin BINARY, d DECIMAL(5,2), day DATE, "
    "ts TIMESTAMP, ntz TIMESTAMP_NTZ, arr ARRAY<INT>, m MAP<STRING, INT>, st STRUCT<x: INT>"
)


@pytest.fixture(autouse=True)
def _ddl_parser(spark):
    """PySpark parses DDL schema strings in the JVM: these tests need the session, and
    must not rely on an earlier test having started it."""
    return spark


def encoder(schema: str = SCHEMA) -> StructEncoder:
    parsed = _parse_datatype_string(schema)
    assert isinstance(parsed, StructType)
    return StructEncoder(parsed)


def test_every_supported_type_encodes_to_what_from_json_parses():
    plus_two = timezone(timedelta(hours=2))
    value = {
        "s": "a\nb", "i": -3, "l": 2**63 - 1, "f": float("nan"), "b": True, "bin": b"\x00\xff",
        "d": Decimal("-123.45"), "day": date(2024, 2, 29),
        "ts": datetime(2024, 1, 1, 2, 0, 0, 123456, tzinfo=plus_two),
        "ntz": datetime(2024, 1, 1, 5), "arr": [1, None], "m": {"k": 1}, "st": {"x": 7},
    }
    line = to_json_line(encoder()(value, "value"))
    assert "\n" not in line
    assert json.loads(line) == {
        "s": "a\nb", "i": -3, "l": 2**63 - 1, "f": "NaN", "b": True, "bin": "AP8=",
        "d": "-123.45", "day": "2024-02-29", "ts": "2024-01-01T00:00:00.123456+00:00",
        "ntz": "2024-01-01T05:00:00.000000", "arr": [1, None], "m": {"k": 1}, "st": {"x": 7},
    }


def test_missing_nullable_fields_are_null_and_rows_and_tuples_work():
    enc = encoder("a INT, b STRING")
    assert enc({"a": 1}, "v") == {"a": 1, "b": None}
    assert enc(Row(a=1, b="x"), "v") == {"a": 1, "b": "x"}
    assert enc((1, "x"), "v") == {"a": 1, "b": "x"}


@pytest.mark.parametrize(
    ("schema", "value", "error", "message"),
    [
        ("a INT", {"a": True}, SchemaMismatchError, r"'a' expects INT .*got bool True"),
        ("a INT", {"a": 2**31}, SchemaMismatchError, r"out of range for INT"),
        ("a TINYINT", {"a": 128}, SchemaMismatchError, r"out of range for TINYINT"),
        ("a DOUBLE", {"a": "1.0"}, SchemaMismatchError, r"'a' expects DOUBLE"),
        ("a DECIMAL(5,2)", {"a": Decimal("1234.5")}, SchemaMismatchError, r"does not fit DECIMAL\(5,2\)"),
        ("a DECIMAL(5,2)", {"a": Decimal("1.234")}, SchemaMismatchError, r"does not fit"),
        ("a DATE", {"a": datetime(2024, 1, 1)}, SchemaMismatchError, r"DATE \(a datetime.date\)"),
        ("a TIMESTAMP", {"a": datetime(2024, 1, 1)}, NaiveDatetimeError, r"'a' is a naive datetime"),
        ("a TIMESTAMP_NTZ", {"a": datetime(2024, 1, 1, tzinfo=timezone.utc)}, SchemaMismatchError, r"without tzinfo"),
        ("a ARRAY<INT>", {"a": "12"}, SchemaMismatchError, r"ARRAY<INT> \(a list\)"),
        ("a ARRAY<INT>", {"a": [1, "x"]}, SchemaMismatchError, r"'a\[1\]' expects INT"),
        ("a STRUCT<x: INT>", {"a": {"y": 1}}, SchemaMismatchError, r"'a.y' is not in the schema"),
        ("a STRUCT<x: INT>", {"a": {"x": "1"}}, SchemaMismatchError, r"'a.x' expects INT"),
        ("a MAP<STRING, INT>", {"a": {"k": "v"}}, SchemaMismatchError, r"'a\[k\]' expects INT"),
        ("a INT NOT NULL", {}, SchemaMismatchError, r"'a' is not nullable"),
        ("a BINARY", {"a": "text"}, SchemaMismatchError, r"BINARY \(Python bytes\)"),
    ],
    ids=["bool-as-int", "int-range", "tinyint-range", "str-as-double", "decimal-precision",
         "decimal-scale", "datetime-as-date", "naive-timestamp", "aware-ntz", "str-as-array",
         "array-element", "struct-unknown", "struct-field", "map-value", "not-null", "str-as-binary"],
)
def test_values_that_do_not_fit(schema, value, error, message):
    with pytest.raises(error, match=message):
        encoder(schema)(value, "value")


def test_unsupported_types_are_refused_when_the_input_is_declared():
    with pytest.raises(UnsupportedSchemaError, match="STRING keys only"):
        encoder("m MAP<INT, STRING>")
    with pytest.raises(UnsupportedSchemaError, match="do not support interval"):
        encoder("i INTERVAL DAY TO SECOND")


def test_rows_decode_to_plain_dicts_with_aware_timestamps():
    schema = _parse_datatype_string("t TIMESTAMP, w STRUCT<start: TIMESTAMP>, n INT")
    naive_local = datetime.fromtimestamp(0)  # what PySpark's collect() gives for the epoch
    decoded = row_decoder(schema)(Row(t=naive_local, w=Row(start=naive_local), n=None))
    epoch = datetime(1970, 1, 1, tzinfo=timezone.utc)
    assert decoded == {"t": epoch, "w": {"start": epoch}, "n": None}
