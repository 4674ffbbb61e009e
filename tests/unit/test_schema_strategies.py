"""Strategies drawn from a user's schema, without Spark: rows the driver's inputs (and the
Kafka ``json`` serializer) accept for every column type, nulls only where the schema has
them, each type's edge values, events whose rows carry their key and event time, and
schedules over several inputs. (Against Spark: tests/spark/test_schema_properties.py.)"""

from __future__ import annotations

import json
import math
import pickle
import subprocess
import sys
from datetime import date, datetime, timedelta, timezone
from decimal import Decimal
from typing import Any

import pytest
from hypothesis import HealthCheck, Phase, find, given, settings
from hypothesis import strategies as st
from pyspark.sql import types as T

from pyspark_streamtest import DEFAULT_START_TIME as T0
from pyspark_streamtest.core.values import StructEncoder, to_json_line
from pyspark_streamtest.errors import (
    InvalidArgumentError,
    InvalidArgumentTypeError,
    UnsupportedSchemaError,
)
from pyspark_streamtest.kafka.serdes import serializer
from pyspark_streamtest.testing import strategies as sst
from pyspark_streamtest.testing.model import Event, EventRow, Pipe, Schedule, Tick

S = timedelta(seconds=1)
SETTINGS = settings(max_examples=150, database=None, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow])
FIND = settings(max_examples=3000, database=None, deadline=None,
                suppress_health_check=[HealthCheck.too_slow])
SEARCH = settings(FIND, phases=[Phase.generate])  # the first example found, not shrunk


def field(name: str, dtype: T.DataType, nullable: bool = True) -> T.StructField:
    return T.StructField(name, dtype, nullable)


INNER = T.StructType([field("x", T.ShortType(), False), field("y", T.DecimalType(3, 3))])
EVERY_TYPE = T.StructType([
    field("s", T.StringType()),
    field("bin", T.BinaryType()),
    field("flag", T.BooleanType(), False),
    field("tiny", T.ByteType()),
    field("small", T.ShortType()),
    field("n", T.IntegerType(), False),
    field("big", T.LongType()),
    field("f", T.FloatType()),
    field("d", T.DoubleType()),
    field("money", T.DecimalType(38, 10)),
    field("whole", T.DecimalType(5, 0)),
    field("day", T.DateType()),
    field("ts", T.TimestampType()),
    field("ntz", T.TimestampNTZType()),
    field("ints", T.ArrayType(T.IntegerType(), True)),
    field("words", T.ArrayType(T.StringType(), False), False),
    field("scores", T.MapType(T.StringType(), T.DoubleType(), False)),
    field("inner", INNER),
    field("nested", T.ArrayType(INNER, True)),
])
JSON_TYPES = T.StructType([f for f in EVERY_TYPE.fields if f.name != "bin"])
ENCODE = StructEncoder(EVERY_TYPE)
TO_JSON = serializer("json")


def walk(dtype: T.DataType, value: Any, nullable: bool, path: str) -> None:
    """``value`` is a Python value of ``dtype`` (None only where nullable)."""
    if value is None:
        assert nullable, f"{path} is not nullable, got None"
        return
    if isinstance(dtype, T.StructType):
        assert isinstance(value, dict) and list(value) == dtype.names, path
        for f in dtype.fields:
            walk(f.dataType, value[f.name], f.nullable, f"{path}.{f.name}")
    elif isinstance(dtype, T.ArrayType):
        assert isinstance(value, list), path
        for item in value:
            walk(dtype.elementType, item, dtype.containsNull, path + "[]")
    elif isinstance(dtype, T.MapType):
        assert isinstance(value, dict) and all(isinstance(k, str) for k in value), path
        for item in value.values():
            walk(dtype.valueType, item, dtype.valueContainsNull, path + "[]")
    elif isinstance(dtype, T.TimestampNTZType):
        assert isinstance(value, datetime) and value.tzinfo is None, path
    elif isinstance(dtype, T.TimestampType):
        assert isinstance(value, datetime) and value.tzinfo is timezone.utc, path
        assert datetime(1, 1, 3, tzinfo=timezone.utc) <= value, path
        assert value < datetime(9999, 12, 31, tzinfo=timezone.utc), path
    elif isinstance(dtype, T.DateType):
        assert type(value) is date, path
    elif isinstance(dtype, T.DecimalType):
        assert isinstance(value, Decimal) and value.is_finite(), path
        assert -value.as_tuple().exponent <= dtype.scale, path
    elif isinstance(dtype, (T.FloatType, T.DoubleType)):
        assert isinstance(value, float), path
    elif isinstance(dtype, T.BooleanType):
        assert isinstance(value, bool), path
    elif isinstance(dtype, (T.ByteType, T.ShortType, T.IntegerType, T.LongType)):
        assert type(value) is int, path
    elif isinstance(dtype, T.BinaryType):
        assert isinstance(value, bytes), path
    else:
        assert isinstance(dtype, T.StringType) and isinstance(value, str), path


@SETTINGS
@given(sst.rows(EVERY_TYPE))
def test_rows_are_values_of_the_schema_that_a_plain_input_takes(row):
    walk(EVERY_TYPE, row, False, "row")
    to_json_line(ENCODE(row, "row"))  # the driver's own check: raises if refused


@SETTINGS
@given(sst.rows(JSON_TYPES, target="json"))
def test_json_rows_are_written_by_the_json_serializer_and_have_no_nan(row):
    walk(JSON_TYPES, row, False, "row")
    text = TO_JSON(row)  # refuses NaN, infinities and bytes
    json.loads(text)
    to_json_line(StructEncoder(JSON_TYPES)(row, "row"))


@SETTINGS
@given(sst.rows(EVERY_TYPE, nulls=0, edge_values=0))
def test_no_nulls_when_asked_for_none(row):
    assert all(value is not None for value in row.values())


@pytest.mark.parametrize(("column", "found"), [
    ("f", lambda v: v is not None and math.isnan(v)),
    ("d", lambda v: v == math.inf),
    ("d", lambda v: v == 0.0 and math.copysign(1, v) < 0),
    ("f", lambda v: v == 3.4028234663852886e38),
    ("d", lambda v: v == 5e-324),
    ("big", lambda v: v == 2**63 - 1),
    ("tiny", lambda v: v == -128),
    ("money", lambda v: v == Decimal("9" * 28 + "." + "9" * 10)),
    ("whole", lambda v: v == Decimal(-99999)),
    ("day", lambda v: v == date(1, 1, 1)),
    ("ts", lambda v: v == datetime(9999, 12, 30, 23, 59, 59, 999_999, tzinfo=timezone.utc)),
    ("ts", lambda v: v is not None and v.year == 1),
    ("s", lambda v: v == ""),
    ("s", lambda v: v == "😀"),
    ("s", lambda v: v is not None and "\x00" in v),
    ("bin", lambda v: v == b""),
    ("ints", lambda v: v == []),
    ("ints", lambda v: v is not None and None in v),
    ("scores", lambda v: v == {}),
    ("inner", lambda v: v is None),
], ids=lambda x: x if isinstance(x, str) else "")
def test_edge_values_and_nulls_appear(column, found):
    one_column = T.StructType([EVERY_TYPE[column]])
    find(sst.rows(one_column), lambda row: found(row[column]), settings=SEARCH)


def test_json_rows_never_hold_nan_or_infinity_even_when_searched_for():
    from hypothesis.errors import NoSuchExample

    schema = T.StructType([field("d", T.DoubleType()), field("f", T.FloatType())])
    with pytest.raises(NoSuchExample):
        find(sst.rows(schema, target="json"),
             lambda row: any(v is not None and not math.isfinite(v) for v in row.values()),
             settings=settings(SEARCH, max_examples=600))


def test_fields_replace_a_columns_strategy_also_inside_a_struct():
    schema = T.StructType([field("user", T.StringType()), field("inner", INNER, False)])
    strategy = sst.rows(schema, fields={"user": st.just("u1"), "inner.x": st.just(7)})
    row = find(strategy, lambda r: True, settings=FIND)
    assert row["user"] == "u1" and row["inner"]["x"] == 7


BAD_ROWS = [
    ("schema-type", {"schema": 3}, InvalidArgumentTypeError, "must be a DDL string"),
    ("target", {"target": "avro"}, InvalidArgumentError, "target='avro'"),
    ("nulls-range", {"nulls": 1.5}, InvalidArgumentError, "nulls=1.5 must be a share"),
    ("nulls-type", {"nulls": "some"}, InvalidArgumentTypeError, "nulls='some'"),
    ("shares-sum", {"nulls": 0.6, "edge_values": 0.6}, InvalidArgumentError, "add up"),
    ("size-type", {"max_collection_size": 2.0}, InvalidArgumentTypeError,
     "max_collection_size=2.0 must be an int"),
    ("size-range", {"max_collection_size": -1}, InvalidArgumentError, ">= 0"),
    ("fields-type", {"fields": ["user"]}, InvalidArgumentTypeError, "fields="),
    ("fields-name", {"fields": {"usr": st.just("a")}}, InvalidArgumentError,
     "'usr' is not a column.*did you mean 'user'"),
    ("fields-value", {"fields": {"user": "a"}}, InvalidArgumentTypeError,
     "must be a hypothesis strategy"),
    ("spark-type", {"schema": "user STRING", "spark": "local"}, InvalidArgumentTypeError,
     "spark='local' must be a SparkSession"),
]


@pytest.mark.parametrize(("kwargs", "error", "match"),
                         [case[1:] for case in BAD_ROWS], ids=[c[0] for c in BAD_ROWS])
def test_rows_refuse_arguments_they_cannot_use(kwargs, error, match):
    arguments = {"schema": T.StructType([field("user", T.StringType())]), **kwargs}
    schema = arguments.pop("schema")
    with pytest.raises(error, match=match):
        sst.rows(schema, **arguments)


def _types_no_input_takes() -> list[object]:
    """PySpark 3.5 has no CharType or CalendarIntervalType in pyspark.sql.types."""
    cases = [
        pytest.param(T.MapType(T.IntegerType(), T.StringType()), "input",
                     "'m' is a map<int,string>", id="int-keys"),
        pytest.param(T.DayTimeIntervalType(), "input", "'m' is a interval day to second",
                     id="interval"),
        pytest.param(T.BinaryType(), "json", "'m' is BINARY.*base64", id="binary-json"),
    ]
    if hasattr(T, "CharType"):
        cases.append(pytest.param(T.CharType(3), "input", "'m' is a char", id="char"))
    if hasattr(T, "CalendarIntervalType"):
        cases.append(pytest.param(T.ArrayType(T.CalendarIntervalType()), "input",
                                  r"'m\[\]' is a interval", id="nested-interval"))
    return cases


@pytest.mark.parametrize(("dtype", "target", "match"), _types_no_input_takes())
def test_types_no_input_takes_are_refused_naming_the_column(dtype, target, match):
    with pytest.raises(UnsupportedSchemaError, match=match):
        sst.rows(T.StructType([field("m", dtype)]), target=target)


def test_a_ddl_schema_is_parsed_by_spark_when_first_drawn_from():
    """In a process of its own: with no SparkContext there, drawing from a DDL schema
    fails with the library's error (this process may hold a session already)."""
    code = """
import pytest
from hypothesis import find, settings
from pyspark_streamtest.errors import InvalidArgumentError
from pyspark_streamtest.testing import strategies as sst

strategy = sst.rows("user STRING, ts TIMESTAMP")  # nothing parsed yet: no error
with pytest.raises(InvalidArgumentError, match=r"Spark cannot parse it.*StructType"):
    find(strategy, lambda row: True, settings=settings(database=None, deadline=None))
"""
    subprocess.run([sys.executable, "-c", code], check=True, timeout=120)


# --- events from rows --------------------------------------------------------------------------
CLICK = T.StructType([field("user", T.StringType()), field("page", T.StringType()),
                      field("ts", T.TimestampType()), field("amount", T.DoubleType())])


@SETTINGS
@given(sst.row_events(CLICK, time_column="ts", key_column="user", max_disorder=3 * S,
                      late=0.2, late_by=5 * S, duplicates=0.2, tombstones=0.2))
def test_row_events_write_their_key_and_time_into_the_row(events):
    for event in events:
        if event.value is None:
            continue  # a tombstone
        assert isinstance(event.value, EventRow) and event.value.time_column == "ts"
        assert event.value["ts"] == event.timestamp and event.value["user"] == event.key
        assert event.timestamp.tzinfo is timezone.utc
        hash(event)  # schedules of row events key the run cache


def test_row_events_keep_the_disorder_lateness_and_duplicates_of_events():
    late = find(sst.row_events(CLICK, time_column="ts", late=0.5, late_by=5 * S),
                lambda es: any(e.timestamp < T0 - 5 * S for e in es), settings=SEARCH)
    assert any(e.value["ts"] == e.timestamp < T0 - 5 * S for e in late)
    twice = find(sst.row_events(CLICK, time_column="ts", duplicates=0.5),
                 lambda es: len(es) > len(set(es)), settings=SEARCH)
    assert any(twice[i] == twice[j] for i in range(len(twice)) for j in range(i))
    gone = find(sst.row_events(CLICK, tombstones=0.5),
                lambda es: any(e.value is None for e in es), settings=SEARCH)
    assert all(e.value is None or isinstance(e.value, EventRow) for e in gone)


def test_row_events_without_a_time_column_leave_the_row_as_drawn():
    events = find(sst.row_events(CLICK, min_size=1, nulls=0, edge_values=0),
                  lambda es: True, settings=FIND)
    assert events[0].value.time_column is None
    assert events[0].value["ts"] != events[0].timestamp  # the time is the record's only


def test_a_timestamp_ntz_time_column_gets_the_utc_wall_time():
    schema = T.StructType([field("at", T.TimestampNTZType(), False)])
    start = datetime(2024, 6, 1, 12, tzinfo=timezone(timedelta(hours=2)))
    (event,) = find(sst.row_events(schema, time_column="at", start=start, min_size=1),
                    lambda es: True, settings=FIND)
    assert event.value["at"] == datetime(2024, 6, 1, 10)


BAD_EVENTS = [
    ("time-missing", {"time_column": "when"}, InvalidArgumentError,
     "time_column='when' is not a top-level column"),
    ("time-type", {"time_column": "page"}, InvalidArgumentError,
     "time_column='page' is a STRING column; it must be a TIMESTAMP"),
    ("key-type", {"key_column": "amount"}, InvalidArgumentError,
     "key_column='amount' is a DOUBLE column; it must be a STRING"),
    ("same", {"time_column": "ts", "key_column": "ts"}, InvalidArgumentError, "both 'ts'"),
    ("column-type", {"time_column": 3}, InvalidArgumentTypeError, "time_column=3"),
    ("fields-written", {"time_column": "ts", "fields": {"ts": st.just(T0)}},
     InvalidArgumentError, "fields names 'ts', which the events write"),
    ("keys", {"keys": ["a"]}, InvalidArgumentTypeError, "keys="),
    ("events-option", {"late": 2}, InvalidArgumentError, "late=2 must be a fraction"),
    ("events-resolution", {"max_disorder": timedelta(milliseconds=1500)},
     InvalidArgumentError, "must be a multiple of resolution"),
    ("rows-option", {"target": "xml"}, InvalidArgumentError, "target='xml'"),
]


@pytest.mark.parametrize(("kwargs", "error", "match"),
                         [case[1:] for case in BAD_EVENTS], ids=[c[0] for c in BAD_EVENTS])
def test_row_events_refuse_arguments_they_cannot_use(kwargs, error, match):
    with pytest.raises(error, match=match):
        sst.row_events(CLICK, **kwargs)


# --- events and schedules ----------------------------------------------------------------------
def test_string_events_print_and_compare_as_before():
    assert str(Event("a", "x", T0 + S)) == "a='x'@00:00:01"
    assert str(Event("a", None, T0)) == "a=<tombstone>@00:00:00"
    assert str(Pipe((Event("a", "x", T0),))) == "pipe a='x'@00:00:00"
    assert Pipe((Event("a", "x", T0),)) == Pipe((Event("a", "x", T0),), input=None)


def test_a_dict_value_becomes_a_frozen_hashable_row_that_prints_readably():
    event = Event("a", {"user": "a", "amount": Decimal("1.50"), "tags": ["x"],
                        "at": T0, "inner": {"n": 1}}, T0)
    assert isinstance(event.value, EventRow) and event.value == {
        "user": "a", "amount": Decimal("1.50"), "tags": ["x"], "at": T0, "inner": {"n": 1}}
    assert hash(event) == hash(Event("a", dict(event.value), T0))
    assert str(event) == ("a={user='a', amount=1.50, tags=['x'], "
                          "at=2024-01-01T00:00:00+00:00, inner={n=1}}@00:00:00")
    with pytest.raises(TypeError, match="cannot be changed"):
        event.value["user"] = "b"
    with pytest.raises(TypeError, match="cannot be changed"):
        event.value.update(user="b")
    copied = pickle.loads(pickle.dumps(EventRow({"a": 1}, time_column="a")))
    assert copied == {"a": 1} and copied.time_column == "a"
    assert json.loads(TO_JSON(event.value))["amount"] == "1.50"


def test_a_schedule_over_several_inputs_names_each_pipes_input_and_keeps_each_order():
    strategy = sst.schedules({"orders": sst.events(min_size=2, keys=st.just("o")),
                              "payments": sst.events(min_size=2, keys=st.just("p"))},
                             max_batches=3)
    schedule = find(strategy, lambda s: len([p for p in s.steps if isinstance(p, Pipe)]) >= 3,
                    settings=FIND)
    pipes = [p for p in schedule.steps if isinstance(p, Pipe)]
    assert {p.input for p in pipes} == {"orders", "payments"}
    assert all({e.key for e in p.events} == {p.input[0]} for p in pipes)
    assert schedule.inputs == tuple(dict.fromkeys(p.input for p in pipes))
    assert [e.key for e in schedule.events_into("orders")] == ["o"] * len(
        schedule.events_into("orders"))
    assert str(pipes[0]).startswith(f"pipe into {pipes[0].input}: ")


@SETTINGS
@given(sst.schedules({"a": sst.events(max_size=5), "b": sst.events(max_size=5)},
                     max_batches=4))
def test_each_inputs_events_keep_their_order_in_a_merged_schedule(schedule):
    for name in ("a", "b"):  # without disorder an input's event times never go back
        times = [e.timestamp for e in schedule.events_into(name)]
        assert times == sorted(times)
    assert schedule.events_into(None) == ()
    for step in schedule.steps:
        assert not isinstance(step, Pipe) or step.events  # no empty pipes


def test_a_single_events_strategy_draws_the_schedules_it_drew_before():
    schedule = find(sst.schedules(sst.events(min_size=2)), lambda s: True, settings=FIND)
    assert schedule == Schedule((Pipe((Event("a", "x", T0), Event("a", "x", T0))), Tick(),
                                 *schedule.steps[2:]))
    assert schedule.inputs == (None,)


@pytest.mark.parametrize(("strategy", "match"), [
    ({}, "names no input"),
    ({"": sst.events()}, "input name '' must be"),
    ({"a": [Event("a", "x", T0)]}, "must be a strategy of event lists"),
], ids=["empty", "unnamed", "not-a-strategy"])
def test_schedules_refuse_a_bad_mapping_of_inputs(strategy, match):
    from hypothesis.errors import InvalidArgument

    with pytest.raises(InvalidArgument, match=match):
        sst.schedules(strategy)


def test_a_column_that_does_not_matter_shrinks_to_its_simplest_value_at_once():
    """One draw per value decides null, edge or plain, and its lowest value is the type's
    simplest: a failure that needs a null page shrinks every other column to plain."""
    row = find(sst.rows(CLICK), lambda r: r["page"] is None, settings=FIND)
    assert row == {"user": "", "page": None, "ts": datetime(1970, 1, 1, tzinfo=timezone.utc),
                   "amount": 0.0}
