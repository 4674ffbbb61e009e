"""Tests of the orders pipeline (examples/orders_pipeline/), a Spark Declarative
Pipeline run update by update by Spark's own engine: landed order files, a raw table, a
deduplicated one, a 10-minute windowed count and a materialized view of totals."""

from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

from pyspark_streamtest import Feature, TestRecord

pytestmark = pytest.mark.streamtest_requires(Feature.DECLARATIVE_PIPELINES)

PIPELINE = Path(__file__).parent / "orders_pipeline"
T0 = datetime(2024, 1, 1, tzinfo=timezone.utc)


def at(minutes: float) -> datetime:
    return T0 + timedelta(minutes=minutes)


def order(order_id: str, customer: str, amount: int, minute: float) -> str:
    """One landed order, a JSON line as the producer writes it."""
    return json.dumps({"order_id": order_id, "customer": customer, "amount": amount,
                       "ts": at(minute).isoformat().replace("+00:00", "Z")})


@pytest.fixture
def pipeline(topology_driver):
    return topology_driver.from_pipeline(PIPELINE, file_inputs={"orders": "orders.path"})


def test_the_graph_as_the_engine_resolves_it(pipeline):
    graph = pipeline.describe()
    assert {name: d.kind for name, d in graph.datasets.items()} == {
        "customer_totals": "materialized_view",
        "orders_bronze": "streaming_table",
        "orders_per_window": "streaming_table",
        "orders_silver": "streaming_table",
    }
    silver = graph.flows["orders_silver"]
    assert silver.file_sources == (pipeline.input_path("orders"),)
    assert silver.watermarks == (("ts", "10 minutes"),)
    assert silver.stateful == ("DeduplicateWithinWatermark",)
    windowed = graph.flows["orders_per_window"]
    assert windowed.inputs == ("orders_bronze",)
    assert windowed.watermarks == (("ts", "5 minutes"),)
    assert windowed.stateful == ("Aggregate",)
    assert graph.flows["customer_totals"].inputs == ("orders_silver",)
    assert not graph.flows["customer_totals"].streaming
    assert graph.hazards == ()


def test_a_window_closes_in_the_update_whose_data_moves_the_watermark_past_it(pipeline):
    windows = pipeline.create_output_topic("orders_per_window")
    bronze = pipeline.create_output_topic("orders_bronze")
    pipeline.land_lines("orders", [order("o1", "ann", 5, 1), order("o2", "bob", 7, 4),
                                   order("o1", "ann", 5, 3)])  # o1 again: a retry
    first = pipeline.run_update()

    assert first.state == "COMPLETED"
    # The windowed flow: a batch of the 3 rows, then the no-data batch that runs with
    # the watermark they moved to (04:00 - 5 min): no window has closed.
    assert [(b.batch_id, b.input_rows) for b in first.batches("orders_per_window")] == [
        (0, 3), (1, 0)]
    assert first.batches("orders_per_window")[-1].watermark == at(-1)
    assert windows.is_empty()
    assert [r.value["order_id"] for r in bronze.read_records_to_list()] == ["o1", "o2", "o1"]

    pipeline.land_lines("orders", [order("o3", "ann", 1, 16)])
    second = pipeline.run_update()
    # 16:00 - 5 min = 11:00 passes the end of [00:00, 00:10): its count is written
    # in the no-data batch of this update, once.
    assert second.batches("orders_per_window")[-1].watermark == at(11)
    assert windows.read_records_to_list() == [
        TestRecord(value={"window_start": at(0), "orders": 3}, topic="orders_per_window",
                   batch_id=3)]
    assert [r.value["order_id"] for r in bronze.read_records_to_list()] == ["o3"]


def test_duplicates_within_the_watermark_are_dropped_and_totals_follow(pipeline):
    pipeline.land_lines("orders", [order("o1", "ann", 5, 1), order("o2", "bob", 7, 2),
                                   order("o1", "ann", 5, 6)])
    pipeline.run_update()
    silver = sorted((r.order_id, r.amount) for r in pipeline.read_table("orders_silver").collect())
    assert silver == [("o1", 5), ("o2", 7)]
    assert {r.customer: r.total for r in pipeline.read_table("customer_totals").collect()} == {
        "ann": 5, "bob": 7}
    # The dedup state keeps each id until the watermark passes its time + 10 minutes.
    state = pipeline.get_state_store("orders_silver")
    assert sorted(state.keys()) == ["o1", "o2"]

    # 30:00 moves the watermark to 20:00: o1 (first seen at 01:00) is forgotten, so the
    # producer's late retry of o1 at 15:00 is behind the watermark, dropped as late.
    pipeline.land_lines("orders", [order("o3", "bob", 1, 30)])
    pipeline.run_update()
    pipeline.land_lines("orders", [order("o1", "ann", 5, 15)])
    third = pipeline.run_update()
    assert third.batches("orders_silver")[0].late_rows == 1
    assert sorted(pipeline.get_state_store("orders_silver").keys()) == ["o3"]
    # The materialized view is recomputed from the silver table at each update.
    assert {r.customer: r.total for r in pipeline.read_table("customer_totals").collect()} == {
        "ann": 5, "bob": 8}
    # State as of an earlier batch: after the first update's batches.
    assert sorted(pipeline.get_state_store("orders_silver", batch_id=1).keys()) == ["o1", "o2"]


def test_a_full_refresh_recomputes_every_table_from_all_landed_files(pipeline):
    bronze = pipeline.create_output_topic("orders_bronze")
    pipeline.land_lines("orders", [order("o1", "ann", 5, 1)])
    pipeline.run_update()
    pipeline.land_lines("orders", [order("o2", "bob", 7, 2)])
    pipeline.run_update()
    assert [(r.batch_id, r.value["order_id"]) for r in bronze.read_records_to_list()] == [
        (0, "o1"), (1, "o2")]

    refreshed = pipeline.run_update(full_refresh=True)
    # The tables start again: every landed file is read again, in one batch 0.
    assert [b.input_rows for b in refreshed.batches("orders_bronze")] == [2]
    assert sorted((r.batch_id, r.value["order_id"]) for r in bronze.read_records_to_list()) == [
        (0, "o1"), (0, "o2")]
    assert sorted(r.order_id for r in pipeline.read_table("orders_bronze").collect()) == [
        "o1", "o2"]
