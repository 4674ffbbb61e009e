"""Tests of example 4: event time from the value, a dedup before the windows, a
stream-static join, dead letters and tombstones."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest

from examples.payments_pipeline import topology

T0 = datetime(2024, 1, 1, tzinfo=timezone.utc)


def payment(payment_id: str, merchant: str, amount: str, currency: str, minute: float) -> dict:
    return {"payment_id": payment_id, "merchant": merchant, "amount": amount,
            "currency": currency, "paid_at": (T0 + timedelta(minutes=minute)).isoformat()}


@pytest.fixture
def pipeline(topology_driver):
    driver = topology_driver(topology)
    payments = driver.create_input_topic("payments", key_serializer="string",
                                         value_serializer="json")
    raw = driver.create_input_topic("payments", key_serializer="string",
                                    value_serializer="bytes")
    totals = driver.create_output_topic("merchant-totals", key_deserializer="string",
                                        value_deserializer="json")
    dead = driver.create_output_topic("payments-dead-letters", key_deserializer="string",
                                      value_deserializer="bytes")
    return driver, payments, raw, totals, dead


def test_a_window_is_written_once_the_watermark_passes_it(pipeline):
    driver, payments, raw, totals, dead = pipeline
    payments.pipe_input("m1", payment("p1", "m1", "10.00", "EUR", 1))
    payments.pipe_input("m1", payment("p2", "m1", "20.00", "USD", 4))
    payments.pipe_input("m1", payment("p2", "m1", "20.00", "USD", 4))  # redelivered
    payments.pipe_input("m2", None)                                      # tombstone
    raw.pipe_input("m2", b"{not json")                                   # dead letter
    driver.process_all_available()
    assert totals.is_empty()  # watermark 4 - 5 min: nothing closed
    assert dead.read_key_values_to_list() == [("m2", b"{not json")]

    payments.pipe_input("m2", payment("p3", "m2", "3.00", "GBP", 16))  # watermark 11 min
    driver.process_all_available()
    assert totals.read_key_values_to_map() == {
        "m1": {"window_start": "2024-01-01T00:00:00.000Z", "merchant": "m1", "eur": 20.0,
               "payments": 2}}


def test_a_late_payment_is_named_with_the_operator_that_dropped_it(pipeline):
    driver, payments, _raw, totals, dead = pipeline
    payments.pipe_input("m1", payment("p1", "m1", "10.00", "EUR", 30))
    driver.process_all_available()  # watermark 25 min
    payments.pipe_input("m1", payment("p9", "m1", "5.00", "EUR", 12))   # 12 <= 25: late
    payments.pipe_input("m1", payment("p10", "m1", "5.00", "EUR", 26))  # on time
    ran = driver.process_all_available()
    (late,) = driver.late_records("merchant-totals")
    assert (late.record.value["payment_id"], late.operator, late.watermark) == (
        "p9", "dedupeWithinWatermark", T0 + timedelta(minutes=25))
    assert [m.rows_dropped_by_watermark for m in ran[0].state_metrics] == [0, 1]
    assert dead.is_empty() and totals.is_empty()  # [20, 30) is still open


def test_ten_minute_windows_count_each_payment_id_once_in_a_known_currency(pipeline):
    """Added for survivors of ``--streamtest-mutate``: the windows are 10 minutes (9.5
    and 10.5 fall in two), a payment id is counted once even when a copy's fields
    differ, and a payment in a currency without a rate is left out (an inner join)."""
    driver, payments, _raw, totals, _dead = pipeline
    payments.pipe_input("m1", payment("p1", "m1", "10.00", "EUR", 1))
    payments.pipe_input("m1", payment("p1", "m1", "99.00", "EUR", 1))  # the id again
    payments.pipe_input("m1", payment("p2", "m1", "5.00", "JPY", 2))   # no rate
    payments.pipe_input("m1", payment("p3", "m1", "20.00", "USD", 9.5))
    payments.pipe_input("m1", payment("p4", "m1", "3.00", "GBP", 10.5))
    driver.process_all_available()
    payments.pipe_input("m2", payment("p5", "m2", "1.00", "EUR", 30))  # watermark 25 min
    driver.process_all_available()
    written = sorted((value for _, value in totals.read_key_values_to_list()),
                     key=lambda value: value["window_start"])
    assert written == [
        {"window_start": "2024-01-01T00:00:00.000Z", "merchant": "m1", "eur": 20.0,
         "payments": 2},
        {"window_start": "2024-01-01T00:10:00.000Z", "merchant": "m1", "eur": 6.0,
         "payments": 1}]
