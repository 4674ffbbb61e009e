"""Tests of example 5: the production job in ``payment_alerts_job.py``, run as it is."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

from examples import payment_alerts_job

T0 = datetime(2024, 1, 1, tzinfo=timezone.utc)


def payment(payment_id: str, account: str, amount: float, second: int) -> dict:
    return {"payment_id": payment_id, "account": account, "amount": amount,
            "paid_at": (T0 + timedelta(seconds=second)).isoformat()}


@pytest.fixture
def job(topology_driver, tmp_path, monkeypatch):
    """The job under the driver, its production paths pointed at the test's folder
    (the fixture closes the driver, and a failing test's report shows its timeline)."""
    monkeypatch.setenv("PAYMENTS_CHECKPOINTS", str(tmp_path / "production-checkpoints"))
    monkeypatch.setenv("PAYMENTS_AUDIT", str(tmp_path / "audit"))
    return topology_driver.from_app(payment_alerts_job.main, start_time=T0), tmp_path


def test_the_job_runs_as_it_is(job):
    driver, _ = job
    assert driver.input_names == ("payments",)
    assert driver.output_names == ("payment-alerts", "write_audit")


def test_batches_run_at_the_jobs_one_minute_triggers(job):
    driver, _ = job
    payments = driver.create_input_topic("payments", value_serializer="json")
    payments.pipe_input(None, payment("p1", "acc-1", 9_000.0, 10))
    assert driver.advance_wall_clock(timedelta(seconds=59)) == []  # no trigger yet
    ran = driver.advance_wall_clock(timedelta(seconds=1))
    assert {(b.output, b.processing_time) for b in ran} == {
        ("payment-alerts", T0 + timedelta(minutes=1)),
        ("write_audit", T0 + timedelta(minutes=1)),
    }


def test_an_alert_is_written_to_kafka_when_the_window_closes(job):
    driver, _ = job
    payments = driver.create_input_topic("payments", value_serializer="json")
    alerts = driver.create_output_topic("payment-alerts", key_deserializer="string",
                                        value_deserializer="json")
    payments.pipe_input("acc-1", payment("p1", "acc-1", 6_000.0, 5))
    payments.pipe_input("acc-1", payment("p2", "acc-1", 5_000.0, 40))
    payments.pipe_input("acc-2", payment("p3", "acc-2", 9_999.0, 41))
    driver.advance_wall_clock(timedelta(minutes=1))
    assert alerts.is_empty()  # watermark 40 s - 30 s: the first minute is still open

    payments.pipe_input("acc-2", payment("p4", "acc-2", 1.0, 95))  # watermark 65 s
    driver.advance_wall_clock(timedelta(minutes=1))
    # The watermark computed from the 00:02 batch is used by the next batch, and with a
    # 1-minute trigger that no-data batch runs at the next trigger, 00:03.
    assert alerts.is_empty()
    (closing,) = driver.advance_wall_clock(timedelta(minutes=1))
    assert (closing.output, closing.processing_time, closing.new_data) == (
        "payment-alerts", T0 + timedelta(minutes=3), False)
    assert alerts.read_key_values_to_list() == [
        ("acc-1", {"minute": "2024-01-01T00:00:00.000Z", "account": "acc-1",
                   "total": 11_000.0, "payments": 2}),
    ]


def test_the_audit_log_gets_each_batch_with_its_real_batch_id(job, spark):
    driver, folder = job
    payments = driver.create_input_topic("payments", value_serializer="json")
    payments.pipe_input(None, payment("p1", "acc-1", 1.0, 5))
    driver.advance_wall_clock(timedelta(minutes=1))
    payments.pipe_input(None, payment("p2", "acc-1", 2.0, 65))
    raw = driver.create_input_topic("payments", value_serializer="bytes")
    raw.pipe_input(None, b"not json")  # skipped by the job
    driver.advance_wall_clock(timedelta(minutes=1))

    audit = spark.read.parquet(str(folder / "audit"))
    assert sorted(audit.select("payment_id", "batch_id").collect()) == [("p1", 0), ("p2", 1)]
    # The output of the foreachBatch query holds the rows the function was given.
    written = driver.create_output_topic("write_audit")
    assert [r["payment_id"] for r in written.read_values_to_list()] == ["p1", "p2"]


def test_the_production_checkpoints_are_never_touched(job):
    driver, folder = job
    payments = driver.create_input_topic("payments", value_serializer="json")
    payments.pipe_input(None, payment("p1", "acc-1", 1.0, 5))
    driver.advance_wall_clock(timedelta(minutes=2))
    driver.restart()
    driver.advance_wall_clock(timedelta(minutes=1))
    assert not (folder / "production-checkpoints").exists()
    assert Path(folder, "audit").exists()


def test_a_crash_after_the_audit_write_does_not_write_it_twice(job, spark):
    """Spark runs a batch again after a crash between the sink and the commit: the
    audit function must be idempotent on the batch id."""
    driver, folder = job
    payments = driver.create_input_topic("payments", value_serializer="json")
    driver.crash_before_commit("write_audit")
    payments.pipe_input(None, payment("p1", "acc-1", 1.0, 5))
    ran = driver.advance_wall_clock(timedelta(minutes=1))

    # Both attempts of batch 0 are in the history, the crashed one marked ...
    assert [(b.output, b.batch_id, b.attempt, b.crashed) for b in ran] == [
        ("payment-alerts", 0, 1, None), ("write_audit", 0, 1, "before_commit"),
        ("write_audit", 0, 2, None)]
    # ... the function received batch 0 twice (at-least-once) ...
    received = driver.create_output_topic("write_audit").read_values_to_list()
    assert [r["payment_id"] for r in received] == ["p1", "p1"]
    # ... and wrote it once.
    audit = spark.read.parquet(str(folder / "audit"))
    assert audit.select("payment_id", "batch_id").collect() == [("p1", 0)]


def test_a_total_of_exactly_the_limit_raises_no_alert(job):
    """Added for a survivor of ``--streamtest-mutate`` (``total > 10000.0`` → ``>=``):
    the limit itself is allowed, a cent more is not."""
    driver, _ = job
    payments = driver.create_input_topic("payments", value_serializer="json")
    alerts = driver.create_output_topic("payment-alerts", key_deserializer="string",
                                        value_deserializer="json")
    payments.pipe_input("acc-1", payment("p1", "acc-1", 10_000.0, 5))
    payments.pipe_input("acc-2", payment("p2", "acc-2", 10_000.01, 6))
    payments.pipe_input("acc-3", payment("p3", "acc-3", 1.0, 95))  # watermark 65 s
    driver.advance_wall_clock(timedelta(minutes=3))
    assert [key for key, _ in alerts.read_key_values_to_list()] == ["acc-2"]


def test_a_minute_closes_when_a_payment_30_seconds_past_its_end_arrives(job):
    """Added for survivors of ``--streamtest-mutate`` (the 30-second watermark): the
    watermark is the latest payment's time less 30 seconds, and minute 0 closes when it
    reaches 60 s. Each step gives the query its data batch and the no-data batch after
    it, which moves the watermark."""
    driver, _ = job
    payments = driver.create_input_topic("payments", value_serializer="json")
    alerts = driver.create_output_topic("payment-alerts", key_deserializer="string",
                                        value_deserializer="json")
    payments.pipe_input("acc-1", payment("p1", "acc-1", 11_000.0, 5))
    payments.pipe_input("acc-2", payment("p2", "acc-2", 1.0, 89))  # watermark 59 s
    driver.advance_wall_clock(timedelta(minutes=2))
    assert alerts.is_empty()

    payments.pipe_input("acc-2", payment("p3", "acc-2", 1.0, 90))  # watermark 60 s
    driver.advance_wall_clock(timedelta(minutes=2))
    assert [key for key, _ in alerts.read_key_values_to_list()] == ["acc-1"]
