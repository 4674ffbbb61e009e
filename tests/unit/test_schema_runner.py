"""The one runner for schedules, without Spark: what each step asks of a driver (a stand-in
that records the calls), the records each event becomes on plain and Kafka inputs, a
user's mapping and serializers per input, the run cache's key, and the check against a
user's expected rows."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from datetime import timedelta
from types import SimpleNamespace
from typing import Any

import pytest
from hypothesis import given, settings

from pyspark_streamtest import DEFAULT_START_TIME as T0
from pyspark_streamtest import TestRecord
from pyspark_streamtest.errors import InvalidArgumentError, InvalidArgumentTypeError
from pyspark_streamtest.testing import _runs
from pyspark_streamtest.testing import strategies as sst
from pyspark_streamtest.testing.invariants import InvariantError, assert_matches_expected
from pyspark_streamtest.testing.model import (
    AdvanceWatermark,
    Drain,
    Event,
    EventRow,
    Pipe,
    Restart,
    Schedule,
    Tick,
    WindowedCount,
    simulate,
)
from tests.spark.test_schema_properties import on_time, window_start

S = timedelta(seconds=1)


@dataclass
class Handle:
    name: str
    is_kafka: bool
    serializers: tuple[Any, Any]
    piped: list[list[TestRecord]] = field(default_factory=list)

    def pipe_record_list(self, records):
        self.piped.append(list(records))


class Driver:
    """Stands in for a TopologyTestDriver: records the calls a schedule makes."""

    def __init__(self, kafka=("clicks",), watermark=None):
        self.input_names = ("clicks", "events", "views", "orders", "payments")
        self.kafka = set(kafka)
        self.calls: list[tuple[Any, ...]] = []
        self.handles: dict[str, Handle] = {}
        self.batches: list[Any] = [SimpleNamespace(output="out", batch_id=0),
                                   SimpleNamespace(output="other", batch_id=0)]
        self._watermark = watermark

    def create_input_topic(self, name, *, key_serializer=None, value_serializer=None):
        self.calls.append(("create", name, key_serializer, value_serializer))
        handle = Handle(name, name in self.kafka, (key_serializer, value_serializer))
        self.handles[name] = handle
        return handle

    def advance_wall_clock(self, delta):
        self.calls.append(("advance", delta))

    def process_all_available(self):
        self.calls.append(("drain",))

    def restart(self):
        self.calls.append(("restart",))

    def watermark(self, output):
        return self._watermark

    def advance_watermark_to(self, to, *, output):
        self.calls.append(("watermark", to, output))


ROW = {"user": "a", "page": "home", "ts": T0}


def test_each_step_is_the_driver_call_it_stands_for():
    driver = Driver(watermark=T0)
    schedule = Schedule((Pipe((Event("a", "x", T0),)), Tick(), Restart(),
                         AdvanceWatermark(T0 + 5 * S), AdvanceWatermark(T0), Drain()))
    batches = sst.run_schedule(driver, schedule, input="views", trigger_interval=2 * S)
    assert [c[0] for c in driver.calls] == ["create", "advance", "restart", "watermark",
                                            "drain", "drain"]
    assert driver.calls[1] == ("advance", 2 * S)
    assert driver.calls[3] == ("watermark", T0 + 5 * S, "out")
    assert [b.output for b in batches] == ["out"]


def test_string_events_pipe_as_before_into_a_plain_input():
    driver = Driver(kafka=())
    sst.run_schedule(driver, Schedule((Pipe((Event("a", "x", T0), Event("b", None, T0))),)))
    assert driver.handles["events"].piped == [[
        TestRecord(value={"key": "a", "value": "x"}, timestamp=T0),
        TestRecord(value={"key": "b", "value": None}, timestamp=T0)]]


def test_a_row_pipes_as_it_is_with_its_time_given_unless_the_row_holds_it():
    driver = Driver(kafka=())
    holds = EventRow(ROW, time_column="ts")
    sst.run_schedule(driver, Schedule((Pipe((Event("a", holds, T0),
                                             Event("a", dict(ROW), T0 + S))),)))
    (records,) = driver.handles["events"].piped
    assert records == [TestRecord(value=ROW, timestamp=None),
                       TestRecord(value=ROW, timestamp=T0 + S)]


def test_a_kafka_input_gets_keys_values_and_times_through_auto_serializers():
    driver = Driver()
    row = EventRow(ROW, time_column="ts")
    sst.run_schedule(driver, Schedule((Pipe((Event("a", row, T0), Event("a", None, T0))),)),
                     input="clicks")
    assert driver.calls[:2] == [("create", "clicks", None, None),
                                ("create", "clicks", "auto", "auto")]
    assert driver.handles["clicks"].piped == [[
        TestRecord(key="a", value=row, timestamp=T0),
        TestRecord(key="a", value=None, timestamp=T0)]]


def test_serializers_and_to_record_are_per_input_when_given_as_mappings():
    driver = Driver(kafka=("orders", "payments"))
    schedule = Schedule((Pipe((Event("o", "1", T0),), input="orders"),
                         Pipe((Event("p", "2", T0 + S),), input="payments"), Tick()))

    def order(event):
        return event.key, {"id": event.value, "at": event.timestamp.isoformat()}, None

    sst.run_schedule(driver, schedule, input=None,
                     to_record={"orders": order},
                     value_serializer={"orders": "json"}, key_serializer="string")
    assert ("create", "orders", "string", "json") in driver.calls
    assert ("create", "payments", "string", "auto") in driver.calls
    assert driver.handles["orders"].piped == [[TestRecord(
        key="o", value={"id": "1", "at": "2024-01-01T00:00:00+00:00"}, timestamp=None)]]
    assert driver.handles["payments"].piped == [[TestRecord(key="p", value="2",
                                                            timestamp=T0 + S)]]


def test_to_record_may_return_a_test_record():
    driver = Driver()
    made = TestRecord(key=b"k", value=b"v", timestamp=T0, partition=0)
    sst.run_schedule(driver, Schedule((Pipe((Event("a", "x", T0),)),)), input="clicks",
                     to_record=lambda event: made)
    assert driver.handles["clicks"].piped == [[made]]


@pytest.mark.parametrize(("kwargs", "schedule", "error", "match"), [
    ({"input": None}, Schedule((Pipe((Event("a", "x", T0),)),)), InvalidArgumentError,
     "step 0 .* names no input and the runner has no input="),
    ({"to_record": lambda e: {"value": 1}}, Schedule((Pipe((Event("a", "x", T0),)),)),
     InvalidArgumentTypeError, "to_record for input 'events' returned .* a TestRecord"),
    ({"to_record": "json"}, Schedule(()), InvalidArgumentTypeError,
     "to_record='json' must be a function"),
    ({}, Schedule(("tick",)), InvalidArgumentTypeError, "step 0 is 'tick'"),  # type: ignore
    ({"to_record": {"order": lambda e: e}}, Schedule(()), InvalidArgumentError,
     "to_record names 'order', not an input of the driver; its inputs are 'clicks'"),
    ({"value_serializer": {"click": "json"}}, Schedule(()), InvalidArgumentError,
     "value_serializer names 'click'"),
], ids=["no-input", "bad-record", "bad-to-record", "bad-step", "unknown-input",
        "unknown-serializer-input"])
def test_the_runner_refuses_what_it_cannot_pipe(kwargs, schedule, error, match):
    with pytest.raises(error, match=match):
        sst.run_schedule(Driver(kafka=()), schedule, **kwargs)


def test_schedules_with_rows_and_per_input_options_key_the_run_cache():
    def topology(t):
        pass

    schedule = Schedule((Pipe((Event("a", {"n": [1, 2], "m": {"k": None}}, T0),),
                              input="orders"), Tick()))
    key = _runs._key(("app", topology), schedule, None, None, "out", S,
                     {"outputs": ["alerts"], "sql_conf": {"a": "b"}},
                     (None, None, {"orders": "json"}))
    assert key is not None and hash(key) == hash(_runs._key(
        ("app", topology), schedule, None, None, "out", S,
        {"outputs": ["alerts"], "sql_conf": {"a": "b"}}, (None, None, {"orders": "json"})))
    other = _runs._key(("topology", topology), schedule, None, None, "out", S,
                       {"outputs": ["alerts"], "sql_conf": {"a": "b"}},
                       (None, None, {"orders": "json"}))
    assert other != key
    unhashable = Schedule((Pipe((Event("a", [1, 2], T0),)),))  # a list value
    assert _runs._key(("app", topology), unhashable, None, None, "out", S, {},
                      (None, None, None)) is None


# --- the check against the user's expected rows ------------------------------------------------
def batch(batch_id, *rows, output="counts"):
    return SimpleNamespace(output=output, batch_id=batch_id,
                           output_records=tuple(TestRecord(value=r) for r in rows))


BATCHES = [batch(0, {"user": "a", "n": 1}), batch(1), batch(2, {"user": "b", "n": 2.0000001},
                                                     {"user": "a", "n": 2})]
SCHEDULE = Schedule((Pipe((Event("a", "x", T0),)), Tick(), Drain()))


def test_rows_match_expected_as_multisets_within_the_tolerances_asked_for():
    expected = [{"user": "a", "n": 2}, {"user": "a", "n": 1}, {"user": "b", "n": 2.0}]
    assert_matches_expected(BATCHES, expected, rtol=1e-6)
    assert_matches_expected(BATCHES, lambda schedule: expected, schedule=SCHEDULE, rtol=1e-6)
    with pytest.raises(InvariantError):
        assert_matches_expected(BATCHES, expected)  # exact: 2.0000001 != 2.0


def test_a_mismatch_shows_both_sides_with_batches_and_the_schedule():
    with pytest.raises(InvariantError) as failure:
        assert_matches_expected(BATCHES, lambda s: [{"user": "a", "n": 1}],
                                schedule=SCHEDULE, ignore_columns=["n"])
    text = str(failure.value)
    assert "rows of 'counts'" in text and "schedule:\n  0: pipe a='x'@00:00:00" in text
    assert "ignoring columns: n" in text


@pytest.mark.parametrize(("expected", "kwargs", "error", "match"), [
    (lambda s: [], {}, InvalidArgumentError, "pass schedule= too"),
    ("rows", {}, InvalidArgumentTypeError, "must be a list of rows"),
    ([], {"rtol": -1}, InvalidArgumentError, "rtol"),
], ids=["function-without-schedule", "text", "negative-rtol"])
def test_assert_matches_expected_refuses_what_it_cannot_use(expected, kwargs, error, match):
    with pytest.raises(error, match=match):
        assert_matches_expected(BATCHES, expected, **kwargs)


# --- the Spark tests' own expectation, against the built-in model ------------------------------
def _model_counts(schedule, size, delay):
    counts = Counter()
    for batch in simulate(schedule, WindowedCount(size=size, delay=delay, mode="append")):
        for row in batch.rows:
            counts[(row["window"]["start"], row["key"])] += row["count"]
    return counts


@settings(max_examples=500, database=None, deadline=None)
@given(sst.schedules(sst.events(max_size=8, max_step=6 * S, max_disorder=3 * S, late=0.2,
                                late_by=4 * S, duplicates=0.1, key_skew=0.3),
                     max_batches=3, restarts=0.3))
def test_the_spark_tests_expectation_agrees_with_the_model(schedule):
    """tests/spark/test_schema_properties.py states late records, no-data batches and
    restarts itself, as a team would; the model (checked against Spark) agrees."""
    kept, emitted = on_time(schedule, size=5 * S, delay=4 * S)
    mine = Counter((window_start(e.timestamp, 5 * S), e.key) for _, e in kept
                   if emitted is not None and window_start(e.timestamp, 5 * S) + 5 * S <= emitted)
    assert mine == _model_counts(schedule, 5 * S, 4 * S)
