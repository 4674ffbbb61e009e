"""Property tests from the user's own schema, against real Spark: rows drawn from a schema
come back from a plain input and through Kafka JSON as they went in; a JSON-valued
Kafka pipeline is checked against its team's own expected-function; a two-input
``from_app`` job runs under the same runner with a mapping from events to Kafka
records; and a wrong expectation fails and shrinks to a minimal example."""

from __future__ import annotations

import json
import time
from collections import Counter
from datetime import datetime, timedelta
from typing import Any

import hypothesis
import pytest
from hypothesis import example, find, given, settings
from hypothesis import strategies as st
from pyspark.sql import functions as F
from pyspark.sql import types as T

from pyspark_streamtest import DEFAULT_START_TIME as T0
from pyspark_streamtest import Topology
from pyspark_streamtest.core.time import EPOCH
from pyspark_streamtest.errors import InvalidArgumentError
from pyspark_streamtest.testing import strategies as sst
from pyspark_streamtest.testing._runs import spark_runs
from pyspark_streamtest.testing.invariants import (
    assert_matches_expected,
    assert_watermark_never_goes_back,
)
from pyspark_streamtest.testing.model import Drain, Event, Pipe, Restart, Schedule, Tick
from tests import apps_two_inputs

S = timedelta(seconds=1)


# --- the rows drawn are the rows Spark reads ---------------------------------------------------
def column(name: str, dtype: T.DataType, nullable: bool = True) -> T.StructField:
    return T.StructField(name, dtype, nullable)


INNER = T.StructType([column("x", T.ShortType(), False), column("y", T.DecimalType(3, 3))])
WIDE = T.StructType([
    column("at", T.TimestampType()), column("s", T.StringType()), column("flag", T.BooleanType()),
    column("tiny", T.ByteType()), column("n", T.IntegerType()), column("big", T.LongType()),
    column("f", T.FloatType()), column("d", T.DoubleType()),
    column("money", T.DecimalType(38, 10)), column("day", T.DateType()),
    column("ts", T.TimestampType()), column("ntz", T.TimestampNTZType()),
    column("ints", T.ArrayType(T.IntegerType(), True)),
    column("scores", T.MapType(T.StringType(), T.DoubleType(), True)),
    column("inner", INNER), column("nested", T.ArrayType(INNER, True)),
])
WITH_BINARY = T.StructType([*WIDE.fields, column("bin", T.BinaryType())])


def identity(t: Topology) -> None:
    t.output("out", t.input("rows", schema=WITH_BINARY, timestamp_column="at"))


def parsed_from_kafka(t: Topology) -> None:
    raw = t.kafka_input("rows")
    t.output("out", raw.select(F.from_json(F.col("value").cast("string"), WIDE).alias("r"))
             .select("r.*"))


def piped_rows(schedule: Schedule) -> list[dict[str, Any]]:
    return [dict(e.value) for e in schedule.events]


def row_read(record: Any) -> Any:
    return dict(record.value)  # decimals compare by value: 1E-10 is Spark's 1.00E-10


@sst.spark_settings(max_examples=15, derandomize=True, database=None)
@given(sst.schedules(sst.row_events(WITH_BINARY, time_column="at", max_size=4,
                                    edge_values=0.3), max_batches=2, idle_ticks=0))
def test_drawn_rows_come_back_from_a_plain_input_as_they_went_in(spark, schedule):
    batches = sst.run_topology(identity, schedule, spark=spark, input="rows", output="out")
    assert_matches_expected(batches, piped_rows, schedule=schedule, row=row_read)


@sst.spark_settings(max_examples=15, derandomize=True, database=None)
@given(sst.schedules(sst.row_events(WIDE, time_column="at", target="json", max_size=4,
                                    edge_values=0.3), max_batches=2, idle_ticks=0))
def test_json_rows_come_back_through_kafka_and_from_json_as_they_went_in(spark, schedule):
    batches = sst.run_topology(parsed_from_kafka, schedule, spark=spark, input="rows",
                               output="out")
    assert_matches_expected(batches, piped_rows, schedule=schedule, row=row_read)


def test_a_ddl_schema_is_parsed_with_the_session(spark):
    row = find(sst.rows("user STRING NOT NULL, tags ARRAY<STRING>, at TIMESTAMP",
                        spark=spark, nulls=0), lambda r: True,
               settings=settings(database=None))
    assert list(row) == ["user", "tags", "at"] and isinstance(row["user"], str)
    with pytest.raises(InvalidArgumentError, match="Spark cannot parse it"):
        find(sst.rows("user STRNG"), lambda r: True, settings=settings(database=None))


# --- a JSON-valued Kafka pipeline and its team's own expectation ------------------------------
CLICK = "user STRING, page STRING, amount DOUBLE, ts TIMESTAMP"
SIZE, DELAY = 5 * S, 4 * S


def clicks_per_user(t: Topology) -> None:
    """The pipeline under test: JSON clicks from Kafka, per user in 5-second windows with
    4 seconds of grace; how many clicks, and how many name a page."""
    clicks = (t.kafka_input("clicks")
              .select(F.from_json(F.col("value").cast("string"), CLICK).alias("c"))
              .select("c.*")
              .where(F.col("ts").isNotNull()))  # tombstones and unparsable values
    counts = (clicks.withWatermark("ts", "4 seconds")
              .groupBy(F.window("ts", "5 seconds").alias("window"), "user")
              .agg(F.count("*").alias("clicks"), F.count("page").alias("pages")))
    t.output("counts", counts, output_mode="append")


def window_start(at: datetime, size: timedelta) -> datetime:
    return EPOCH + (at - EPOCH) // size * size


def on_time(schedule: Schedule, *, size: timedelta, delay: timedelta
            ) -> tuple[list[tuple[str | None, Event]], datetime | None]:
    """What a windowed aggregation with one watermark does with a schedule, as the team
    states Spark's rules: the events it keeps (a row is dropped when its window ends at
    or before the watermark the batch before ran with) with the input each came in, and
    the highest watermark a batch ran with (append mode emits the windows ending at or
    before it). A batch that moves the watermark owes a batch without data, run at the
    next trigger and forgotten by a restart before it. Tombstones carry no event time."""
    watermark: datetime | None = None  # for the next batch
    emitted: datetime | None = None  # the highest watermark a batch ran with
    newest: datetime | None = None
    owed = False
    pending: list[tuple[str | None, Event]] = []
    kept: list[tuple[str | None, Event]] = []

    def run_batch() -> None:
        nonlocal watermark, emitted, newest, owed, pending
        late_at, emitted = emitted, watermark
        if not pending:
            owed = False
            return
        live = [(into, e) for into, e in pending if e.value is not None]
        kept.extend((into, e) for into, e in live if late_at is None
                    or window_start(e.timestamp, size) + size > late_at)
        for _, e in live:
            newest = e.timestamp if newest is None else max(newest, e.timestamp)
        if newest is not None and (watermark is None or newest - delay > watermark):
            watermark, owed = newest - delay, True
        else:
            owed = False
        pending = []

    for step in schedule.steps:
        if isinstance(step, Pipe):
            pending.extend((step.input, e) for e in step.events)
        elif isinstance(step, Tick):
            if pending or owed:
                run_batch()
        elif isinstance(step, Drain):
            while pending or owed:
                run_batch()
        elif isinstance(step, Restart):
            owed = False
    return kept, emitted


def expected_counts(schedule: Schedule, *, null_pages_count: bool = False) -> list[dict]:
    """The team's own statement of the pipeline: the windows the final watermark closed,
    with their clicks and the clicks that name a page."""
    kept, emitted = on_time(schedule, size=SIZE, delay=DELAY)
    clicks: Counter[tuple[datetime, str]] = Counter()
    pages: Counter[tuple[datetime, str]] = Counter()
    for _, event in kept:
        group = (window_start(event.timestamp, SIZE), event.value["user"])
        clicks[group] += 1
        pages[group] += null_pages_count or event.value["page"] is not None
    return [{"window": {"start": start, "end": start + SIZE}, "user": user,
             "clicks": n, "pages": pages[(start, user)]}
            for (start, user), n in clicks.items()
            if emitted is not None and start + SIZE <= emitted]


def wrong_expected_counts(schedule: Schedule) -> list[dict]:
    """A deliberately wrong expectation: it counts a click without a page as naming one."""
    return expected_counts(schedule, null_pages_count=True)


CLICK_EVENTS = sst.row_events(CLICK, time_column="ts", key_column="user", target="json",
                              min_size=3, max_size=8, max_step=6 * S, max_disorder=3 * S,
                              late=0.2,
                              late_by=DELAY, duplicates=0.1, tombstones=0.1, key_skew=0.3)


def click(user: str, page: str | None, second: int) -> Event:
    at = T0 + second * S
    return Event(user, {"user": user, "page": page, "amount": 1.5, "ts": at}, at)


# Pinned: a null page, a window closed by a no-data batch, a late click, a restart.
PINNED = Schedule((
    Pipe((click("a", None, 0), click("b", "home", 1), click("a", "cart", 10))), Tick(), Tick(),
    Pipe((click("a", "home", 2), click("b", None, 11))), Tick(), Restart(),
    Pipe((click("b", "", 21),)), Tick(), Drain()))


@sst.spark_settings(max_examples=25, derandomize=True, database=None)
@example(schedule=PINNED)
@given(sst.schedules(CLICK_EVENTS, max_batches=3, restarts=0.2))
def test_a_json_kafka_pipeline_keeps_its_teams_own_expectation(spark, schedule):
    expected = expected_counts(schedule)  # first: no Spark
    hypothesis.event(f"windows emitted: {min(len(expected), 3)}{'+' if len(expected) > 3 else ''}")
    batches = sst.run_topology(clicks_per_user, schedule, spark=spark, input="clicks",
                               output="counts")
    assert_matches_expected(batches, expected, context=f"schedule:\n{schedule}")
    assert_watermark_never_goes_back(batches)


FAILING_EVENTS = sst.row_events(CLICK, time_column="ts", key_column="user", target="json",
                                max_size=8, max_step=10 * S, max_disorder=3 * S, nulls=0.5)


def shrink_a_wrong_expectation(spark: Any, max_examples: int = 60
                               ) -> tuple[list[Schedule], float, int]:
    """Run the property with the wrong expectation until it fails and shrinks; return
    every schedule tried (hypothesis runs the minimal one last), the seconds it took and
    the Spark runs it made. (``benchmarks/schema_shrink.py`` times the same.)"""
    tried: list[Schedule] = []

    @sst.spark_settings(max_examples=max_examples, derandomize=True, database=None)
    @given(sst.schedules(FAILING_EVENTS, max_batches=2))
    def property_with_a_wrong_expectation(schedule: Schedule) -> None:
        tried.append(schedule)
        expected = wrong_expected_counts(schedule)
        batches = sst.run_topology(clicks_per_user, schedule, spark=spark, input="clicks",
                                   output="counts")
        assert_matches_expected(batches, expected, schedule=schedule)

    runs = spark_runs()
    started = time.perf_counter()
    with pytest.raises(AssertionError):
        property_with_a_wrong_expectation()
    return tried, time.perf_counter() - started, spark_runs() - runs


def test_a_wrong_expectation_fails_and_shrinks_to_a_minimal_schedule(spark):
    """The expectation is wrong only for a click without a page, in a window a later
    click closes: the minimal case is those two clicks. (How long it takes is measured
    by ``python -m benchmarks.schema_shrink``, not asserted.)"""
    tried, seconds, runs = shrink_a_wrong_expectation(spark)
    minimal = tried[-1]
    events = minimal.events
    assert len(events) == 2, f"not minimal:\n{minimal}"
    assert [e.value["page"] for e in events].count(None) >= 1
    print(f"\nshrunk to {len(events)} events in {seconds:.1f} s, {len(tried)} examples, "
          f"{runs} Spark runs:\n{minimal}")


# --- a two-input job under from_app, events mapped to its Kafka records ----------------------
def order(event: Event) -> tuple[str, dict, datetime]:
    """An order record as the job's producers write it: the event time inside the JSON."""
    return event.key, {"order_id": event.value, "account": event.key, "amount": 9.5,
                       "ordered_at": event.timestamp.isoformat()}, event.timestamp


def payment(event: Event) -> tuple[str, dict | None, datetime]:
    value = None if event.value is None else {
        "payment_id": event.value, "account": event.key,
        "paid_at": event.timestamp.isoformat()}
    return event.key, value, event.timestamp


def expected_activity(schedule: Schedule) -> list[dict]:
    """Orders and payments per account in the 10-second windows the watermark closed."""
    kept, emitted = on_time(schedule, size=10 * S, delay=5 * S)
    counts: Counter[tuple[datetime, str, str | None]] = Counter()
    for into, event in kept:
        counts[(window_start(event.timestamp, 10 * S), event.key, into)] += 1
    groups = {(start, account) for start, account, _ in counts}
    return [{"start": start, "account": account, "orders": counts[(start, account, "orders")],
             "payments": counts[(start, account, "payments")]}
            for start, account in groups
            if emitted is not None and start + 10 * S <= emitted]


ACCOUNTS = st.sampled_from(["acc-1", "acc-2"])
IDS = st.sampled_from(["id-1", "id-2"])


@sst.spark_settings(max_examples=12, derandomize=True, database=None)
@given(sst.schedules({"orders": sst.events(keys=ACCOUNTS, values=IDS, min_size=2,
                                           max_size=5, max_step=8 * S, max_disorder=4 * S),
                      "payments": sst.events(keys=ACCOUNTS, values=IDS, min_size=1,
                                             max_size=5, max_step=8 * S, tombstones=0.2)},
                     max_batches=3))
def test_a_two_input_job_runs_as_it_is_under_the_runner(spark, schedule):
    expected = expected_activity(schedule)
    hypothesis.event(f"windows emitted: {min(len(expected), 3)}{'+' if len(expected) > 3 else ''}")
    batches = sst.run_app(apps_two_inputs.main, schedule, spark=spark, output="activity",
                          driver_options={"outputs": ["activity"]},
                          to_record={"orders": order, "payments": payment})
    assert_matches_expected(batches, expected, schedule=schedule,
                            row=lambda record: json.loads(record.value))
    assert {b.output for b in batches} <= {"activity"}
