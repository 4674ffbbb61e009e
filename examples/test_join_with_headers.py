"""Tests of example 3: a stream-stream join across two Kafka topics, headers carried."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

from examples.join_with_headers import topology

T0 = datetime(2024, 1, 1, tzinfo=timezone.utc)


def minutes(m: float) -> datetime:
    return T0 + timedelta(minutes=m)


def test_payments_join_their_orders_and_keep_the_headers(topology_driver):
    driver = topology_driver(topology)
    orders = driver.create_input_topic("orders", value_serializer="json")
    payments = driver.create_input_topic("payments", value_serializer="json")
    paid = driver.create_output_topic("paid-orders", key_deserializer="string",
                                      value_deserializer="json")

    orders.pipe_input("o1", {"customer": "ada", "amount": 12.5}, timestamp=minutes(0),
                      headers={"trace-id": "t-o1"})
    orders.pipe_input("o2", {"customer": "bob", "amount": 3.0}, timestamp=minutes(1),
                      headers=[("trace-id", "t-o2"), ("channel", "web")])
    driver.process_all_available()
    assert paid.is_empty()

    payments.pipe_input("o2", {"method": "card"}, timestamp=minutes(4),
                        headers={"trace-id": "t-p2"})
    payments.pipe_input("o1", {"method": "cash"}, timestamp=minutes(30),  # too late for o1
                        headers={"trace-id": "t-p1"})
    driver.process_all_available()
    record = paid.read_record()
    assert (record.key, record.value) == (
        "o2", {"order_id": "o2", "customer": "bob", "amount": 3.0, "method": "card"})
    assert record.headers == (
        ("trace-id", b"t-o2"), ("channel", b"web"), ("payment-trace-id", b"t-p2"))
    assert paid.is_empty()
    assert driver.produced_topic_names() == {"paid-orders"}


def test_a_payment_joins_from_its_order_s_time_to_ten_minutes_after_both_included(
        topology_driver):
    """Added for survivors of ``--streamtest-mutate``: the join's time range is
    ``[ordered_at, ordered_at + 10 minutes]``, both ends included, and no wider."""
    driver = topology_driver(topology)
    orders = driver.create_input_topic("orders", value_serializer="json")
    payments = driver.create_input_topic("payments", value_serializer="json")
    paid = driver.create_output_topic("paid-orders", key_deserializer="string",
                                      value_deserializer="json")
    for order in ("at-start", "at-end", "past-end"):
        orders.pipe_input(order, {"customer": "ada", "amount": 1.0}, timestamp=minutes(0))
    payments.pipe_input("at-start", {"method": "card"}, timestamp=minutes(0))
    payments.pipe_input("at-end", {"method": "card"}, timestamp=minutes(10))
    payments.pipe_input("past-end", {"method": "card"}, timestamp=minutes(10.5))
    driver.process_all_available()
    assert sorted(key for key, _ in paid.read_key_values_to_list()) == ["at-end", "at-start"]


def test_a_row_older_than_the_slower_side_s_watermark_is_dropped_on_either_side(
        topology_driver):
    """Added for survivors of ``--streamtest-mutate`` (each side's 5-minute watermark):
    the join drops a row older than the query's watermark, which is the smaller of the
    two sides' (each side's newest time less 5 minutes, as of the batch before)."""
    driver = topology_driver(topology)
    orders = driver.create_input_topic("orders", value_serializer="json")
    payments = driver.create_input_topic("payments", value_serializer="json")
    paid = driver.create_output_topic("paid-orders", key_deserializer="string",
                                      value_deserializer="json")

    def pair(order: str, at: float) -> None:
        orders.pipe_input(order, {"customer": "ada", "amount": 1.0}, timestamp=minutes(at))
        payments.pipe_input(order, {"method": "card"}, timestamp=minutes(at + 0.1))

    def joined() -> list[str]:
        driver.process_all_available()
        return sorted(key for key, _ in paid.read_key_values_to_list())

    orders.pipe_input("x", {"customer": "ada", "amount": 1.0}, timestamp=minutes(10))
    payments.pipe_input("y", {"method": "card"}, timestamp=minutes(20))
    assert joined() == []  # the orders' watermark is 5:00, the payments' 15:00
    pair("after-5", 6)
    pair("before-5", 4.5)
    assert joined() == ["after-5"]

    orders.pipe_input("z", {"customer": "ada", "amount": 1.0}, timestamp=minutes(30))
    assert joined() == []  # the orders' watermark is 25:00: the payments' 15:00 holds
    pair("after-15", 16)
    pair("before-15", 14.5)
    assert joined() == ["after-15"]

    payments.pipe_input("w", {"method": "card"}, timestamp=minutes(40))
    # The watermark is now 25:00 (the orders'): order x (10:00) can match no payment
    # after 20:00 any more and is let go. An inner join writes nothing for it.
    assert joined() == []
