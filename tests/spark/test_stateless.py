"""Stateless select/filter: records flow through exactly once, per batch."""

from __future__ import annotations

from datetime import timedelta

from pyspark.sql import Row
from pyspark.sql import functions as F

from pyspark_streamtest import Topology
from tests.helpers import T0, at


def paid_orders(t: Topology) -> None:
    orders = t.input("orders", schema="id INT, status STRING, amount DOUBLE")
    t.output(
        "paid",
        orders.where(F.col("status") == "paid").select("id", (F.col("amount") * 2).alias("x2")),
    )


def test_select_filter_one_batch_per_trigger(topology_driver):
    driver = topology_driver(paid_orders)
    orders = driver.create_input_topic("orders")
    paid = driver.create_output_topic("paid")

    orders.pipe_input({"id": 1, "status": "paid", "amount": 2.5})
    orders.pipe_input(Row(id=2, status="open", amount=1.0))
    orders.pipe_input((3, "paid", 4.0))
    assert paid.is_empty()  # piping only buffers

    ran = driver.advance_wall_clock(timedelta(seconds=1))
    assert [(b.batch_id, b.num_input_rows, b.processing_time) for b in ran] == [
        (0, 3, at(1))
    ]
    records = paid.read_records_to_list()
    assert sorted(r.value["id"] for r in records) == [1, 3]
    assert {(r.batch_id, r.processing_time, r.topic) for r in records} == {(0, at(1), "paid")}
    assert sorted((r.value["id"], r.value["x2"]) for r in records) == [(1, 5.0), (3, 8.0)]

    orders.pipe_value_list([{"id": 4, "status": "paid", "amount": 1.0}])
    ran = driver.advance_wall_clock(timedelta(seconds=5))
    # One data batch at the first trigger; later triggers find nothing and run nothing.
    assert [(b.batch_id, b.processing_time) for b in ran] == [(1, at(2))]
    assert paid.read_value() == {"id": 4, "x2": 2.0}
    assert paid.queue_size == 0
    assert driver.current_time == at(6)
    assert [b.watermark for b in driver.batches] == [None, None]
    assert driver.watermark("paid") is None


def test_advance_within_a_trigger_interval_runs_nothing(topology_driver):
    driver = topology_driver(paid_orders, trigger_interval=timedelta(seconds=10))
    driver.create_input_topic("orders").pipe_input({"id": 1, "status": "paid", "amount": 1.0})
    assert driver.advance_wall_clock(timedelta(seconds=9, milliseconds=999)) == []
    ran = driver.advance_wall_clock(timedelta(milliseconds=1))
    assert [(b.batch_id, b.processing_time) for b in ran] == [(0, T0 + timedelta(seconds=10))]


def two_outputs(t: Topology) -> None:
    events = t.input("events", schema="k STRING, v INT")
    t.output("doubled", events.select("k", (F.col("v") * 2).alias("v")))
    t.output("totals", events.groupBy("k").agg(F.sum("v").alias("total")),
             output_mode="complete")


def test_two_outputs_read_one_input(topology_driver):
    driver = topology_driver(two_outputs)
    events = driver.create_input_topic("events")
    events.pipe_value_list([("a", 1), ("b", 2), ("a", 3)])
    driver.process_all_available()
    events.pipe_input(("b", 10))
    driver.process_all_available()

    doubled = driver.create_output_topic("doubled").read_values_to_list()
    assert sorted((v["k"], v["v"]) for v in doubled) == [("a", 2), ("a", 6), ("b", 4), ("b", 20)]
    totals = driver.create_output_topic("totals").read_records_to_list()
    by_batch: dict[int, list[tuple[str, int]]] = {}
    for record in totals:
        by_batch.setdefault(record.batch_id, []).append((record.value["k"], record.value["total"]))
    assert {b: sorted(rows) for b, rows in by_batch.items()} == {
        0: [("a", 4), ("b", 2)],
        1: [("a", 4), ("b", 12)],
    }
    # Both queries ran their batches at the same processing times, in lock-step.
    assert [(b.output, b.batch_id, b.num_input_rows) for b in driver.batches] == [
        ("doubled", 0, 3), ("totals", 0, 3), ("doubled", 1, 1), ("totals", 1, 1),
    ]
    assert driver.output_names == ("doubled", "totals")


def every_type(t: Topology) -> None:
    t.output("out", t.input("values", schema=(
        "ts TIMESTAMP, ntz TIMESTAMP_NTZ, day DATE, d DECIMAL(7,2), bin BINARY, f DOUBLE, "
        "arr ARRAY<TIMESTAMP>, st STRUCT<at: TIMESTAMP, n: BIGINT>, m MAP<STRING, DOUBLE>")))


def test_values_reach_the_query_exactly(topology_driver):
    """What enters through the JSON path is what comes out: microseconds, offsets
    (normalised to UTC), whole seconds, the epoch, and nested timestamps."""
    from datetime import date, datetime, timezone
    from decimal import Decimal

    plus_five_thirty = timezone(timedelta(hours=5, minutes=30))
    values = [
        {"ts": datetime(2024, 1, 1, 2, 0, 0, 123456, tzinfo=plus_five_thirty),
         "ntz": datetime(2024, 1, 1, 5, 0, 0, 7), "day": date(2024, 2, 29),
         "d": Decimal("-12345.67"), "bin": b"\x00\xff", "f": float("inf"),
         "arr": [datetime(1970, 1, 1, tzinfo=timezone.utc), None],
         "st": {"at": datetime(2024, 1, 1, 0, 0, 0, 1, tzinfo=timezone.utc), "n": 2**40},
         "m": {"x": float("nan")}},
        {"ts": datetime(2024, 6, 30, 23, 59, 59, tzinfo=timezone.utc)},
    ]
    driver = topology_driver(every_type)
    driver.create_input_topic("values").pipe_value_list(values)
    driver.process_all_available()
    out = sorted(driver.create_output_topic("out").read_values_to_list(),
                 key=lambda v: v["ts"])
    first, second = out
    assert first["ts"] == datetime(2023, 12, 31, 20, 30, 0, 123456, tzinfo=timezone.utc)
    assert first["ntz"] == datetime(2024, 1, 1, 5, 0, 0, 7)
    assert (first["day"], first["d"], first["bin"], first["f"]) == (
        date(2024, 2, 29), Decimal("-12345.67"), b"\x00\xff", float("inf"))
    assert first["arr"] == [datetime(1970, 1, 1, tzinfo=timezone.utc), None]
    assert first["st"] == {"at": datetime(2024, 1, 1, 0, 0, 0, 1, tzinfo=timezone.utc),
                           "n": 2**40}
    assert list(first["m"]) == ["x"] and first["m"]["x"] != first["m"]["x"]  # NaN
    assert second == {"ts": datetime(2024, 6, 30, 23, 59, 59, tzinfo=timezone.utc),
                      "ntz": None, "day": None, "d": None, "bin": None, "f": None,
                      "arr": None, "st": None, "m": None}
