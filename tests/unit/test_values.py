"""Checking and encoding values against a schema (Spark only parses the DDL strings)."""

from __future__ import annotations

import json
from datetime import date, datetime, timedelta, timezone
from decimal import Decimal

import pytest
from hypothesis import event, given, settings
from hypothesis import strategies as st
from pyspark.sql import Row
from pyspark.sql.types import StructType, _parse_datatype_string

from pyspark_streamtest.core.decoding import row_decoder
from pyspark_streamtest.core.values import StructEncoder, to_json_line
from pyspark_streamtest.errors import (
    NaiveDatetimeError,
    SchemaMismatchError,
    StreamTestError,
    TimeOutOfRangeError,
    UnsupportedSchemaError,
)


class _Loud(int):
    """An int subclass (IntEnum-like): JSON writes its number."""


class _Label(str):
    """A str subclass: JSON writes its text."""


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


UTC = timezone.utc
LARGEST_38_18 = Decimal("99999999999999999999.999999999999999999")


def test_decimals_encode_exactly_up_to_38_digits_in_plain_notation():
    enc = encoder("a DECIMAL(38,0), b DECIMAL(38,18), c DECIMAL(38,30), d DECIMAL(10,0), "
                  "e DECIMAL(5,1), z DECIMAL(5,2)")
    value = {"a": Decimal(-(10**38 - 1)), "b": LARGEST_38_18,
             "c": Decimal("9.123456789012345678901234567890"), "d": Decimal("1E+5"),
             "e": Decimal("1.500"), "z": Decimal("0E-50")}
    assert json.loads(to_json_line(enc(value, "value"))) == {
        "a": "-99999999999999999999999999999999999999",
        "b": "99999999999999999999.999999999999999999",
        "c": "9.123456789012345678901234567890", "d": "100000", "e": "1.500",
        "z": "0." + "0" * 50,
    }


@pytest.mark.parametrize(
    ("schema", "value", "message"),
    [
        ("d DECIMAL(38,30)", Decimal("1.1234567890123456789012345678901"),
         r"'d': .* has 31 digits after the point, more decimals than the scale allows \(30\)"
         r".*Round it first .*quantize\(Decimal\('1e-30'\)\).* or widen the column's scale"),
        ("d DECIMAL(38,0)", Decimal(10**38), r"'d': .* does not fit DECIMAL\(38,0\): it has 39 "
         r"digits before the point, and DECIMAL\(38,0\) holds at most 38"),
        ("d DECIMAL(38,18)", Decimal("100000000000000000000"), r"'d': .* 21 digits before the "
         r"point, .* at most 20"),
        ("d DECIMAL(38,18)", 10**20, r"'d': .* 21 digits before the point"),
        ("d DECIMAL(5,2)", Decimal("1E-3"), r"'d': 0.001 does not fit .* 3 digits after"),
    ],
    ids=["31-decimals-in-scale-30", "39-digits-in-38-0", "21-digits-in-38-18", "int-too-large",
         "exponent-decimals"],
)
def test_decimals_spark_would_round_or_overflow_are_refused(schema, value, message):
    with pytest.raises(SchemaMismatchError, match=message):
        encoder(schema)({"d": value}, "value")


@pytest.mark.parametrize(
    ("value", "message"),
    [
        (1e39, r"'f': 1e\+39 is too large for FLOAT .*Infinity"),
        (-3.5e38, r"'f': -3.5e\+38 is too large for FLOAT"),
        (10**39, r"'f': 1e\+39 is too large for FLOAT"),
        (1e-50, r"'f': 1e-50 is too small for FLOAT .*0\.0"),
        (-1e-46, r"'f': -1e-46 is too small for FLOAT"),
    ],
    ids=["overflow", "negative-overflow", "int-overflow", "underflow", "negative-underflow"],
)
def test_float32_overflow_and_underflow_are_refused(value, message):
    with pytest.raises(SchemaMismatchError, match=message):
        encoder("f FLOAT")({"f": value}, "value")


def test_float32_keeps_what_it_can_hold_and_double_is_unaffected():
    largest, smallest = 3.4028234663852886e38, 1.401298464324817e-45
    enc = encoder("f ARRAY<FLOAT>, d DOUBLE, e DOUBLE")
    value = {"f": [float("inf"), float("-inf"), float("nan"), 0.0, -0.0, largest, -smallest,
                   0.1], "d": 1e39, "e": 1e-50}
    assert json.loads(to_json_line(enc(value, "value"))) == {
        "f": ["Infinity", "-Infinity", "NaN", 0.0, -0.0, largest, -smallest, 0.1],
        "d": 1e39, "e": 1e-50,
    }


@pytest.mark.parametrize(
    ("schema", "value", "message"),
    [
        ("s STRING", {"s": "a\ud800b"}, r"field 's': 'a\\ud800b' holds the surrogate code point "
         r"U\+D800 at index 1, which is not valid Unicode"),
        ("s STRING", {"s": "\ud83d\ude00"}, r"field 's': .* U\+D83D at index 0"),
        ("st STRUCT<x: STRUCT<y: STRING>>", {"st": {"x": {"y": "\udfff"}}}, r"field 'st.x.y'"),
        ("a ARRAY<STRING>", {"a": ["ok", "b\udc00"]}, r"field 'a\[1\]'"),
        ("m MAP<STRING, STRING>", {"m": {"k\ud800": "v"}}, r"a key of field 'm': 'k\\ud800'"),
        ("m MAP<STRING, ARRAY<STRING>>", {"m": {"k": ["\ud800"]}}, r"field 'm\[k\]\[0\]'"),
    ],
    ids=["lone-surrogate", "surrogate-pair", "struct-field", "array-element", "map-key",
         "map-value"],
)
def test_strings_with_surrogates_are_refused_naming_the_path(schema, value, message):
    with pytest.raises(SchemaMismatchError, match=message) as caught:
        encoder(schema)(value, "value")
    assert "Spark's strings are UTF-8 and would turn it into '?'" in str(caught.value)


def test_valid_unicode_text_passes_unchanged():
    enc = encoder("s STRING, m MAP<STRING, STRING>")
    value = {"s": "é \U0001F600 \u4e2d", "m": {"\u00fc": "\U0001F600"}}
    assert json.loads(to_json_line(enc(value, "value"))) == value


@pytest.mark.parametrize(
    ("value", "message"),
    [
        (datetime(1, 1, 1, tzinfo=UTC), r"'ts' \(0001-01-01T00:00:00\+00:00\) is a time Spark "
         r"holds, but PySpark cannot give it back"),
        (datetime(1, 1, 1, 23, 59, 59, 999999, tzinfo=UTC), r"PySpark cannot give it back"),
        (datetime(1, 1, 1, 1, tzinfo=timezone(timedelta(hours=2))),
         r"'ts' \(0001-01-01T01:00:00\+02:00\) is before 0001-01-01T00:00:00Z in UTC, outside "
         r"Spark's range"),
        (datetime(9999, 12, 31, 23, tzinfo=timezone(timedelta(hours=-5))),
         r"'ts' .* is past 9999-12-31T23:59:59.999999Z in UTC"),
    ],
    ids=["year-1-utc", "year-1-last-microsecond", "before-year-1", "after-9999"],
)
def test_timestamps_spark_or_pyspark_cannot_hold_are_refused(value, message):
    with pytest.raises(TimeOutOfRangeError, match=message) as caught:
        encoder("ts TIMESTAMP")({"ts": value}, "value")
    assert isinstance(caught.value, StreamTestError)
    with pytest.raises(TimeOutOfRangeError, match=r"field 'a\[1\]'"):
        encoder("a ARRAY<TIMESTAMP>")({"a": [datetime(2024, 1, 1, tzinfo=UTC), value]}, "v")


def test_timestamps_inside_the_range_encode_exactly_also_near_its_ends():
    enc = encoder("a TIMESTAMP, b TIMESTAMP, c TIMESTAMP_NTZ, d DATE")
    value = {"a": datetime(1, 1, 3, tzinfo=UTC), "b": datetime(9999, 12, 30, tzinfo=UTC),
             "c": datetime(1, 1, 1), "d": date(1, 1, 1)}
    assert json.loads(to_json_line(enc(value, "value"))) == {
        "a": "0001-01-03T00:00:00+00:00", "b": "9999-12-30T00:00:00+00:00",
        "c": "0001-01-01T00:00:00.000000", "d": "0001-01-01",
    }


# --- the bulk pipe's line builder against the dict-then-json path -------------------------
_ANY_VALUE = st.one_of(
    st.none(), st.booleans(), st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=True, allow_infinity=True), st.floats(width=32),
    st.text(), st.text(alphabet=st.characters(min_codepoint=0xD800, max_codepoint=0xDFFF)),
    st.binary(max_size=4), st.decimals(allow_nan=True, places=3),
    st.dates(), st.datetimes(), st.datetimes(timezones=st.sampled_from(
        [timezone.utc, timezone(timedelta(hours=-5)), timezone(timedelta(hours=14))])),
    st.lists(st.integers(min_value=-3, max_value=3) | st.none(), max_size=3),
    st.dictionaries(st.text(max_size=2), st.integers(min_value=0, max_value=9), max_size=2),
    st.builds(_Loud, st.integers(-2, 2)), st.builds(_Label, st.text(max_size=3)),
)


def _same_outcome(enc: StructEncoder, value: dict) -> None:
    try:
        expected: object = to_json_line(enc.encode_mapping(value))
    except StreamTestError as error:
        expected = (type(error), str(error))
    try:
        got: object = enc.json_line(value)
    except StreamTestError as error:
        got = (type(error), str(error))
    assert got == expected
    event("text" if isinstance(got, str) else got[0].__name__)


_UTC_TIMES = st.datetimes(min_value=datetime(1, 1, 3), max_value=datetime(9999, 12, 29),
                          timezones=st.just(timezone.utc))
_FITTING = {  # values of each column's type, mostly ones that fit it
    "s": st.text(), "nn": st.text(), "i": st.integers(-(2**31), 2**31 - 1),
    "l": st.integers(-(2**63), 2**63 - 1), "tiny": st.integers(-130, 130),
    "f": st.floats(), "fl": st.floats(width=32) | st.floats(), "b": st.booleans(),
    "bin": st.binary(max_size=4), "d": st.decimals(places=2, max_value=999, min_value=-999),
    "day": st.dates(), "half": st.dates(), "ts": _UTC_TIMES, "ntz": st.datetimes(),
    "arr": st.lists(st.integers(-3, 3) | st.none(), max_size=3),
    "m": st.dictionaries(st.text(max_size=2), st.integers(0, 9), max_size=2),
    "st": st.fixed_dictionaries({"x": st.integers(0, 9)}), 'we"ird': st.integers(0, 9),
}


@settings(max_examples=500, deadline=None)
@given(st.data())
def test_json_line_is_the_text_or_the_error_of_the_dict_path(data):
    enc = encoder(SCHEMA + ", fl FLOAT, tiny TINYINT, nn STRING NOT NULL, "
                  "half DATE NOT NULL, `we\"ird` INT")
    odd = data.draw(st.sampled_from([0, 1, 6]))  # how many in 20 fields do not fit
    value = {}
    for name in enc.names:
        how = data.draw(st.sampled_from(["fits"] * (20 - odd) + ["missing", "any"] * odd))
        if how != "missing":
            value[name] = data.draw(_FITTING[name] if how == "fits" else _ANY_VALUE)
    if data.draw(st.integers(0, 20)) == 0:
        value["unknown"] = 1
    _same_outcome(enc, value)
