"""Values at the edges of what Spark holds, on real queries: the largest decimals go
through exactly, values Spark would silently change (rounded decimals, FLOAT overflow
and underflow, strings with surrogates) and instants PySpark cannot give back (the first
day of year 1) are refused before anything is piped, windows ending after year 9999 are
read from state, and time moves past 9999 change nothing."""

from __future__ import annotations

import math
from datetime import date, datetime, timedelta, timezone
from decimal import Decimal

import pytest
from pyspark.sql import functions as F

from pyspark_streamtest import (
    SchemaMismatchError,
    StreamTestError,
    TimeOutOfRangeError,
    Topology,
)
from pyspark_streamtest.core.features import Feature
from pyspark_streamtest.state import Window

needs_state_reads = pytest.mark.streamtest_requires(Feature.STATE_STORE_READS)

UTC = timezone.utc
END_OF_9999 = datetime(9999, 12, 31, 23, 59, 59, tzinfo=UTC)
YEAR_10000_US = 253402300800000000
"""10000-01-01T00:00:00Z in microseconds since the epoch: where Spark's last windows end."""


def passthrough(schema: str):
    def topology(t: Topology) -> None:
        t.output("out", t.input("in", schema=schema))
    return topology


def kafka_passthrough(t: Topology) -> None:
    t.output("seen", t.kafka_input("events"))


# --- decimals -------------------------------------------------------------------------------
DECIMALS = "d0 DECIMAL(38,0), d18 DECIMAL(38,18), d30 DECIMAL(38,30)"


def test_the_largest_decimals_go_through_spark_exactly(topology_driver):
    driver = topology_driver(passthrough(DECIMALS))
    largest = {"d0": Decimal(10**38 - 1),
               "d18": Decimal("99999999999999999999.999999999999999999"),
               "d30": Decimal("99999999.999999999999999999999999999999")}
    smallest = {"d0": Decimal(-(10**38 - 1)),
                "d18": Decimal("-99999999999999999999.999999999999999999"),
                "d30": Decimal("-0.000000000000000000000000000001")}
    driver.create_input_topic("in").pipe_value_list([largest, smallest])
    driver.process_all_available()
    out = driver.create_output_topic("out").read_values_to_list()
    assert out == [largest, smallest]
    assert [str(v["d0"]) for v in out] == [str(10**38 - 1), str(-(10**38 - 1))]


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ({"d30": Decimal("1.1234567890123456789012345678901")},
         r"input 'in': field 'd30': .* has 31 digits after the point, more decimals than the "
         r"scale allows \(30\), and Spark would round it. Round it first .* or widen the "
         r"column's scale"),
        ({"d0": Decimal(10**38)}, r"field 'd0': .* does not fit DECIMAL\(38,0\): it has 39 digits "
         r"before the point"),
        ({"d18": Decimal("123456789012345678901.5")}, r"field 'd18': .* has 21 digits before the "
         r"point, and DECIMAL\(38,18\) holds at most 20"),
    ],
    ids=["more-decimals-than-the-scale", "too-large-for-38-0", "too-large-for-38-18"],
)
def test_decimals_spark_would_round_or_cannot_hold_are_refused_and_nothing_is_piped(
    topology_driver, value, message
):
    driver = topology_driver(passthrough(DECIMALS))
    topic = driver.create_input_topic("in")
    good = {"d30": Decimal("1.123456789012345678901234567890")}  # 30 decimals: fits exactly
    with pytest.raises(SchemaMismatchError, match=message):
        topic.pipe_value_list([good, value])  # all or none
    topic.pipe_input(good)
    driver.process_all_available()
    assert driver.create_output_topic("out").read_values_to_list() == [
        {"d0": None, "d18": None, **good}]


# --- FLOAT (32-bit) -------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("value", "message"),
    [(1e39, r"'f': 1e\+39 is too large for FLOAT \(32-bit"),
     (-1e39, r"'f': -1e\+39 is too large for FLOAT"),
     (1e-50, r"'f': 1e-50 is too small for FLOAT \(32-bit"),
     (-1e-50, r"'f': -1e-50 is too small for FLOAT")],
    ids=["overflow", "negative-overflow", "underflow", "negative-underflow"],
)
def test_float_columns_refuse_what_would_become_infinity_or_zero(topology_driver, value, message):
    driver = topology_driver(passthrough("f FLOAT, d DOUBLE"))
    topic = driver.create_input_topic("in")
    with pytest.raises(SchemaMismatchError, match=message):
        topic.pipe_input({"f": value})
    topic.pipe_input({"d": value})  # DOUBLE holds it
    driver.process_all_available()
    assert driver.create_output_topic("out").read_values_to_list() == [{"f": None, "d": value}]


def test_float_columns_keep_infinities_nan_zero_and_float32_extremes_exactly(topology_driver):
    driver = topology_driver(passthrough("f FLOAT"))
    kept = [math.inf, -math.inf, 0.0, -0.0, 3.4028234663852886e38, 1.401298464324817e-45]
    driver.create_input_topic("in").pipe_value_list([{"f": v} for v in [*kept, math.nan]])
    driver.process_all_available()
    out = [v["f"] for v in driver.create_output_topic("out").read_values_to_list()]
    assert out[:-1] == kept and math.isnan(out[-1])
    assert [math.copysign(1, v) for v in out[2:4]] == [1, -1]


# --- strings --------------------------------------------------------------------------------
TEXTS = "s STRING, st STRUCT<x: STRING>, a ARRAY<STRING>, m MAP<STRING, STRING>"


@pytest.mark.parametrize(
    ("value", "message"),
    [({"s": "a\ud800b"}, r"input 'in': field 's': 'a\\ud800b' holds the surrogate code point "
                         r"U\+D800 at index 1, which is not valid Unicode"),
     ({"s": "\ud83d\ude00"}, r"field 's': .* U\+D83D at index 0"),
     ({"st": {"x": "\udc00"}}, r"field 'st.x'"),
     ({"a": ["ok", "\udfff"]}, r"field 'a\[1\]'"),
     ({"m": {"k\ud800": "v"}}, r"a key of field 'm'"),
     ({"m": {"k": "v\ud800"}}, r"field 'm\[k\]'")],
    ids=["lone-surrogate", "surrogate-pair-as-two-code-points", "struct-field", "array-element",
         "map-key", "map-value"],
)
def test_strings_with_surrogates_are_refused_naming_the_field(topology_driver, value, message):
    driver = topology_driver(passthrough(TEXTS))
    topic = driver.create_input_topic("in")
    with pytest.raises(SchemaMismatchError, match=message) as caught:
        topic.pipe_input(value)
    assert "would turn it into '?'" in str(caught.value)
    text = "é \U0001F600 中"
    topic.pipe_input({"s": text, "st": {"x": text}, "a": [text], "m": {text: text}})
    driver.process_all_available()
    assert driver.create_output_topic("out").read_values_to_list() == [
        {"s": text, "st": {"x": text}, "a": [text], "m": {text: text}}]


@pytest.mark.parametrize(
    ("serializer", "value", "message"),
    [("string", "a\ud800", r"value 'a\\ud800': the 'string' serializer: the str .* U\+D800 at "
                           r"index 1, which is not valid Unicode"),
     ("json", {"k": ["ok", "\udc00"]}, r"the 'json' serializer: the string at "
                                       r"value\['k'\]\[1\] \('\\udc00'\) holds"),
     ("auto", "\ud800", r"the 'auto' serializer")],
    ids=["string", "json", "auto"],
)
def test_kafka_serializers_refuse_surrogates_without_taking_an_offset(
    topology_driver, serializer, value, message
):
    driver = topology_driver(kafka_passthrough)
    events = driver.create_input_topic("events", value_serializer=serializer)
    with pytest.raises(SchemaMismatchError, match=message) as caught:
        events.pipe_input(value)
    assert isinstance(caught.value, StreamTestError)
    events.pipe_input("fine" if serializer != "json" else {"k": "fine"})
    driver.process_all_available()
    (row,) = driver.create_output_topic("seen").read_values_to_list()
    assert row["offset"] == 0


# --- timestamps at year 1 -------------------------------------------------------------------
def events(t: Topology) -> None:
    clicks = t.input("clicks", schema="user STRING, ts TIMESTAMP, at TIMESTAMP, "
                                      "ntz TIMESTAMP_NTZ, day DATE", timestamp_column="ts")
    t.output("out", clicks)


FIRST_DAY = datetime(1, 1, 1, tzinfo=UTC)


@pytest.mark.parametrize(
    ("pipe", "what"),
    [(lambda c: c.pipe_input({"user": "a"}, timestamp=FIRST_DAY), "timestamp"),
     (lambda c: c.pipe_input({"user": "a", "ts": FIRST_DAY}), "field 'ts'"),
     (lambda c: c.pipe_input({"user": "a", "at": FIRST_DAY + timedelta(hours=23)}), "field 'at'"),
     (lambda c: c.pipe_value_list([{"user": "a"}], start_timestamp=FIRST_DAY),
      "start_timestamp")],
    ids=["record-timestamp", "timestamp-column", "timestamp-value", "start-timestamp"],
)
def test_the_first_day_of_year_1_is_refused_up_front(topology_driver, pipe, what):
    """Spark holds 0001-01-01 (its range is 0001-01-01 to 9999-12-31), but PySpark's
    collect() cannot give an instant on that local day back (datetime.fromtimestamp
    looks a day back), which used to fail the query."""
    driver = topology_driver(events)
    clicks = driver.create_input_topic("clicks")
    with pytest.raises(TimeOutOfRangeError, match=rf"{what} .*0001-01-01T.* is a time Spark "
                                                  r"holds, but PySpark cannot give it back"):
        pipe(clicks)
    assert driver.process_all_available() == []  # nothing was piped
    clicks.pipe_input({"user": "b"})
    assert driver.process_all_available()[0].output_values[0]["user"] == "b"


def test_year_1_after_its_first_day_goes_through_spark_exactly(topology_driver):
    driver = topology_driver(events)
    early = datetime(1, 1, 5, 6, 7, 8, 9, tzinfo=UTC)
    value = {"user": "a", "at": datetime(1, 1, 5, tzinfo=timezone(timedelta(hours=2))),
             "ntz": datetime(1, 1, 1), "day": date(1, 1, 1)}
    driver.create_input_topic("clicks").pipe_input(value, timestamp=early)
    driver.process_all_available()
    assert driver.create_output_topic("out").read_value() == {
        **value, "ts": early, "at": datetime(1, 1, 4, 22, tzinfo=UTC)}


def test_an_instant_before_year_1_in_utc_is_refused(topology_driver):
    driver = topology_driver(events)
    clicks = driver.create_input_topic("clicks")
    with pytest.raises(TimeOutOfRangeError, match=r"is before 0001-01-01T00:00:00Z in UTC"):
        clicks.pipe_input({"user": "a"},
                          timestamp=datetime(1, 1, 1, 1, tzinfo=timezone(timedelta(hours=2))))
    with pytest.raises(TimeOutOfRangeError, match=r"field 'at' .* is past 9999-12-31T23:59:59"):
        clicks.pipe_input({"user": "a", "at": datetime(
            9999, 12, 31, 22, tzinfo=timezone(timedelta(hours=-3)))})


def test_a_year_1_kafka_record_timestamp_is_refused_without_taking_an_offset(topology_driver):
    driver = topology_driver(kafka_passthrough)
    events_topic = driver.create_input_topic("events", value_serializer="string")
    with pytest.raises(TimeOutOfRangeError, match=r"timestamp .* PySpark cannot give it back"):
        events_topic.pipe_input("v", timestamp=FIRST_DAY)
    events_topic.pipe_input("w", timestamp=datetime(1, 1, 5, tzinfo=UTC))
    driver.process_all_available()
    (row,) = driver.create_output_topic("seen").read_values_to_list()
    assert (row["value"], row["offset"], row["timestamp"]) == (
        b"w", 0, datetime(1, 1, 5, tzinfo=UTC))


def test_a_start_time_on_the_first_day_of_year_1_is_refused_before_anything_starts(
    spark, topology_driver
):
    with pytest.raises(TimeOutOfRangeError, match=r"start_time .* PySpark cannot give it back"):
        topology_driver(events, start_time=FIRST_DAY)  # the fixture closes it if made
    assert spark.streams.active == []


# --- windows ending after year 9999 ---------------------------------------------------------
def last_hour(t: Topology) -> None:
    clicks = t.input("clicks", schema="user STRING, ts TIMESTAMP", timestamp_column="ts")
    late = clicks.withWatermark("ts", "10 seconds")
    t.output("hours", late.groupBy(F.window("ts", "1 hour"), "user")
             .agg(F.count("*").alias("n"), F.max("ts").alias("last")), output_mode="append")
    t.output("sessions", late.groupBy(F.session_window("ts", "10 minutes"), "user").count(),
             output_mode="append")
    t.output("ahead", late.groupBy(F.window("ts", "1 hour"), "user")
             .agg(F.max(F.col("ts") + F.expr("INTERVAL 1 DAY"))), output_mode="append")


@needs_state_reads
def test_state_reads_keep_windows_that_end_after_year_9999_exactly(topology_driver):
    driver = topology_driver(last_hour, start_time=datetime(9999, 12, 31, 23, tzinfo=UTC))
    clicks = driver.create_input_topic("clicks")
    clicks.pipe_input({"user": "a"}, timestamp=END_OF_9999)
    clicks.pipe_input({"user": "b"}, timestamp=END_OF_9999 - timedelta(hours=1))
    driver.advance_wall_clock(timedelta(seconds=1))  # one data batch: nothing evicted yet

    last = Window.from_micros(YEAR_10000_US - 3600 * 10**6, YEAR_10000_US)
    before = Window(datetime(9999, 12, 31, 22, tzinfo=UTC), datetime(9999, 12, 31, 23, tzinfo=UTC))
    hours = driver.get_window_store("hours")
    assert hours.windows() == [before, last]
    assert hours.fetch("a") == [(last, {"count": 1, "max": END_OF_9999})]
    assert hours.fetch("a", time_from=datetime(9999, 12, 31, 23, tzinfo=UTC)) == hours.fetch("a")
    assert last.start == datetime(9999, 12, 31, 23, tzinfo=UTC)
    assert last.end_us == YEAR_10000_US
    assert repr(last) == ("Window(start=datetime.datetime(9999, 12, 31, 23, 0, "
                          "tzinfo=datetime.timezone.utc), end_us=253402300800000000)")
    with pytest.raises(TimeOutOfRangeError, match=r"window's end .* is 253402300800000000 "
                                                  r"microseconds after the epoch, past 9999"):
        _ = last.end
    assert driver.get_state_store("hours").get((last, "a")) == {"count": 1, "max": END_OF_9999}

    frame = hours.to_dataframe()  # Spark's schema, the exact bound
    assert frame.schema.simpleString() == (
        "struct<key:struct<window:struct<start:timestamp,end:timestamp>,user:string>,"
        "value:struct<count:bigint,max:timestamp>>")
    assert sorted(r[0] for r in frame.select(F.unix_micros("key.window.end")).collect()) == [
        before.end_us, YEAR_10000_US]

    (session,) = driver.get_session_store("sessions").fetch("a")
    assert session == (Window.from_micros(YEAR_10000_US - 10**6, YEAR_10000_US + 599 * 10**6),
                       {"count": 1})
    assert session[0].start == END_OF_9999

    # A timestamp past 9999 in a state value has no Window to live in: a typed error.
    with pytest.raises(TimeOutOfRangeError, match=r"the state of output 'ahead': value\.\w+ is "
                                                  r"\d+ microseconds after the epoch, past 9999"):
        driver.get_window_store("ahead")


# --- moving time past 9999 ------------------------------------------------------------------
def counts(t: Topology) -> None:
    clicks = t.input("clicks", schema="user STRING")
    t.output("counts", clicks.groupBy("user").count(), output_mode="update")


@pytest.mark.parametrize("stopped", [False, True], ids=["running", "stopped"])
def test_moves_past_9999_near_the_end_change_nothing_and_the_last_millisecond_works(
    topology_driver, stopped
):
    driver = topology_driver(counts, start_time=END_OF_9999, freeze_python_clock=True)
    if stopped:
        driver.stop()
    for delta in (timedelta.max, timedelta(days=999_999_999), timedelta(seconds=1)):
        for move in (driver.advance_wall_clock, driver.jump_wall_clock):
            with pytest.raises(TimeOutOfRangeError, match=r"past 9999-12-31|years 1 to 9999"):
                move(delta)
            assert driver.current_time == END_OF_9999
            assert datetime.now(UTC) == END_OF_9999  # the frozen Python clock did not move
    if stopped:
        driver.start()
    driver.create_input_topic("clicks").pipe_input(("a",))
    # To the last millisecond: no trigger of the 1 s interval falls due before year 10000.
    assert driver.advance_wall_clock(timedelta(milliseconds=999)) == []
    (batch,) = driver.process_all_available()
    last_ms = datetime(9999, 12, 31, 23, 59, 59, 999000, tzinfo=UTC)
    assert (batch.processing_time, batch.output_values) == (last_ms, [{"user": "a", "count": 1}])
    with pytest.raises(TimeOutOfRangeError):
        driver.advance_wall_clock(timedelta(milliseconds=1))
    assert driver.current_time == last_ms
