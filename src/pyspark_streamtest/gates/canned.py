"""Canned event streams with reference pipelines and their expected results.

Each stream is a documented file in the repository's ``fixtures/`` (shipped in the
wheel) of records in *arrival order*: the processing second they arrive (``arrival_s``),
the topic, a Kafka key where the topic is Kafka-shaped, the value, and the event time.
:meth:`CannedStream.replay` pipes each second's records and then advances the clock one
second, so second *s*'s records form the batch at *s* + 1 (the demo does exactly this).

=================== ======================================================================
``clickstream``      clicks with out-of-order and late events; per-user 10 s windows
``customers_cdc``    a CDC changelog (Kafka) with upserts, tombstones and a re-created key;
                     a latest-value table
``iot_readings``     temperatures from two sensors, one with a clock 40 s behind and one
                     with a gap; per-sensor one-minute averages with 30 s of grace
``orders_payments``  orders and payments (Kafka) in two topics, out of order, one too late;
                     a stream-stream join within 10 minutes
=================== ======================================================================

Each has ``expected``: what its reference pipeline (``topology``) writes, per output
topic, after a replay. Our own tests check that it holds. The pytest plugin exposes each
stream as a fixture named ``streamtest_<name>``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from pyspark.sql import functions as F

from ..core.records import BatchRecord
from ..driver.driver import TopologyTestDriver
from ..driver.topics import TestInputTopic
from ..driver.topology import Topology, TopologyFunction
from ..errors import InvalidArgumentError, hide_our_frames
from ._fixtures import fixture_path

__tracebackhide__ = hide_our_frames

__all__ = [
    "CannedRecord",
    "CannedStream",
    "clicks_per_user",
    "clickstream",
    "customers_cdc",
    "iot_readings",
    "latest_customer",
    "load",
    "orders_payments",
    "paid_orders",
    "sensor_minute_averages",
]


@dataclass(frozen=True)
class CannedRecord:
    """One record of a canned stream (see the module doc)."""

    arrival_s: int
    topic: str
    value: Any
    timestamp: datetime
    key: Any = None


@dataclass(frozen=True)
class CannedStream:
    """A canned stream, its reference pipeline and what that pipeline writes."""

    name: str
    description: str
    records: tuple[CannedRecord, ...]
    topology: TopologyFunction = field(repr=False)
    kafka_topics: frozenset[str] = frozenset()
    expected: dict[str, Any] = field(default_factory=dict, repr=False)
    """``{output topic: [records]}``; a record is the value (plain outputs) or
    ``{"key": ..., "value": ...}`` (Kafka outputs, JSON values decoded)."""

    def replay(self, driver: TopologyTestDriver) -> list[BatchRecord]:
        """Pipe the records second by second (each second's records, then one second of
        processing time), then :meth:`~TopologyTestDriver.process_all_available`.
        Kafka topics get string keys and JSON values. Returns the batches run."""
        handles: dict[str, TestInputTopic] = {}
        for topic in sorted({r.topic for r in self.records}):
            if topic in self.kafka_topics:
                handles[topic] = driver.create_input_topic(
                    topic, key_serializer="string", value_serializer="json")
            else:
                handles[topic] = driver.create_input_topic(topic)
        ran: list[BatchRecord] = []
        last = max(r.arrival_s for r in self.records)
        for second in range(last + 1):
            for record in (r for r in self.records if r.arrival_s == second):
                handle = handles[record.topic]
                if record.topic in self.kafka_topics:
                    handle.pipe_input(record.key, record.value, timestamp=record.timestamp)
                else:
                    handle.pipe_input(record.value, timestamp=record.timestamp)
            ran.extend(driver.advance_wall_clock(timedelta(seconds=1)))
        ran.extend(driver.process_all_available())
        return ran

    def read_outputs(self, driver: TopologyTestDriver) -> dict[str, list[Any]]:
        """Everything written to the ``expected`` topics, in the shape of ``expected``,
        each list sorted (rows of one batch have no order)."""
        found: dict[str, list[Any]] = {}
        for topic in self.expected:
            handle = driver.create_output_topic(topic)
            if handle.is_kafka:
                handle = driver.create_output_topic(
                    topic, key_deserializer="string", value_deserializer="json")
                rows: list[Any] = [{"key": kv.key, "value": kv.value}
                                   for kv in handle.read_key_values_to_list()]
            else:
                rows = [_jsonable(v) for v in handle.read_values_to_list()]
            found[topic] = sorted(rows, key=lambda r: json.dumps(r, sort_keys=True))
        return found


def _jsonable(value: Any) -> Any:
    return json.loads(json.dumps(value, default=lambda v: v.isoformat().replace("+00:00", "Z")))


def _time(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


def _records(name: str) -> tuple[CannedRecord, ...]:
    out = []
    with fixture_path(f"{name}.jsonl").open(encoding="utf-8") as lines:
        for line in lines:
            if not line.strip():
                continue
            row = json.loads(line)
            if "topic" not in row:  # the clickstream's older, flat layout
                row = {"arrival_s": row["arrival_s"], "topic": "clicks", "ts": row["ts"],
                       "value": {"user": row["user"], "url": row["url"]}}
            out.append(CannedRecord(int(row["arrival_s"]), row["topic"], row["value"],
                                    _time(row["ts"]), row.get("key")))
    return tuple(out)


def _expected(name: str) -> dict[str, Any]:
    with fixture_path(f"{name}.expected.json").open(encoding="utf-8") as source:
        data: dict[str, Any] = json.load(source)
    return data


# --- reference pipelines -------------------------------------------------------------------------
def clicks_per_user(t: Topology) -> None:
    """Clicks per user in 10-second tumbling windows, 10 seconds of grace (append)."""
    clicks = t.input("clicks", schema="user STRING, url STRING, ts TIMESTAMP",
                     timestamp_column="ts")
    t.output("counts", clicks.withWatermark("ts", "10 seconds")
             .groupBy(F.window("ts", "10 seconds").alias("window"), "user").count(),
             output_mode="append")


def latest_customer(t: Topology) -> None:
    """The latest value per key (a tombstone sets it to null), as a Kafka changelog."""
    changes = t.kafka_input("customers-cdc", partitions=2)
    latest = changes.groupBy("key").agg(F.max_by("value", "offset").alias("value"))
    t.kafka_output("table", latest, topic="customers-table", output_mode="update")


def sensor_minute_averages(t: Topology) -> None:
    """Average temperature per sensor per minute, 30 seconds of grace (append)."""
    readings = t.input("readings", schema="sensor STRING, celsius DOUBLE, ts TIMESTAMP",
                       timestamp_column="ts")
    t.output("averages", readings.withWatermark("ts", "30 seconds")
             .groupBy(F.window("ts", "1 minute").alias("minute"), "sensor")
             .agg(F.avg("celsius").alias("celsius"), F.count("*").alias("readings")),
             output_mode="append")


def paid_orders(t: Topology) -> None:
    """Orders joined with their payment within 10 minutes of the order (event time)."""
    orders = t.kafka_input("orders").select(
        F.col("key").cast("string").alias("order_id"),
        F.from_json(F.col("value").cast("string"), "customer STRING, amount DOUBLE").alias("o"),
        F.col("timestamp").alias("ordered_at")).withWatermark("ordered_at", "5 minutes")
    payments = t.kafka_input("payments").select(
        F.col("key").cast("string").alias("paid_id"),
        F.from_json(F.col("value").cast("string"), "method STRING").alias("p"),
        F.col("timestamp").alias("paid_at")).withWatermark("paid_at", "5 minutes")
    joined = orders.join(payments, F.expr(
        "paid_id = order_id AND paid_at >= ordered_at AND paid_at <= ordered_at + "
        "interval 10 minutes"))
    t.kafka_output("paid", joined.select(
        F.col("order_id").alias("key"),
        F.to_json(F.struct("o.customer", "o.amount", "p.method")).alias("value")),
        topic="paid-orders")


_STREAMS: dict[str, tuple[str, TopologyFunction, frozenset[str]]] = {
    "clickstream": ("clicks with out-of-order and late events", clicks_per_user, frozenset()),
    "customers_cdc": ("a CDC changelog with upserts and tombstones", latest_customer,
                      frozenset({"customers-cdc"})),
    "iot_readings": ("sensor readings with clock skew and a gap", sensor_minute_averages,
                     frozenset()),
    "orders_payments": ("orders and payments for a stream-stream join", paid_orders,
                        frozenset({"orders", "payments"})),
}


def load(name: str) -> CannedStream:
    """The canned stream ``name`` (one of the module doc's table)."""
    if name not in _STREAMS:
        raise InvalidArgumentError(
            f"unknown canned stream {name!r}; known: {', '.join(sorted(_STREAMS))}"
        )
    description, topology, kafka = _STREAMS[name]
    return CannedStream(name, description, _records(name), topology, kafka, _expected(name))


def clickstream() -> CannedStream:
    return load("clickstream")


def customers_cdc() -> CannedStream:
    return load("customers_cdc")


def iot_readings() -> CannedStream:
    return load("iot_readings")


def orders_payments() -> CannedStream:
    return load("orders_payments")
