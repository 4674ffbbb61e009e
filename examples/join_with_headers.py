"""Example 3: orders joined with payments from a second Kafka topic, headers carried.

``orders`` and ``payments`` are keyed by order id and carry a ``trace-id`` header. A
payment matches an order when it arrives within 10 minutes of the order (event time);
each match is written to ``paid-orders`` keyed by order id, with the order's headers
carried through and the payment's ``trace-id`` added as ``payment-trace-id``. Both
sides keep state until their watermark (5 minutes behind) passes the join window.
"""

from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from pyspark_streamtest import Topology

ORDER = "customer STRING, amount DOUBLE"
PAYMENT = "method STRING"


def paid_orders(orders: DataFrame, payments: DataFrame) -> DataFrame:
    o = orders.select(
        F.col("key").cast("string").alias("order_id"),
        F.from_json(F.col("value").cast("string"), ORDER).alias("order"),
        F.col("timestamp").alias("ordered_at"),
        F.col("headers").alias("order_headers"),
    ).withWatermark("ordered_at", "5 minutes")
    p = payments.select(
        F.col("key").cast("string").alias("paid_order_id"),
        F.from_json(F.col("value").cast("string"), PAYMENT).alias("payment"),
        F.col("timestamp").alias("paid_at"),
        F.filter("headers", lambda h: h["key"] == "trace-id").alias("payment_trace"),
    ).withWatermark("paid_at", "5 minutes")
    joined = o.join(p, F.expr(
        "paid_order_id = order_id AND paid_at >= ordered_at "
        "AND paid_at <= ordered_at + interval 10 minutes"
    ))
    return joined.select(
        F.col("order_id").alias("key"),
        F.to_json(F.struct(
            "order_id", "order.customer", "order.amount", "payment.method",
        )).alias("value"),
        F.concat(
            "order_headers",
            F.transform("payment_trace", lambda h: F.struct(
                F.lit("payment-trace-id").alias("key"), h["value"].alias("value"))),
        ).alias("headers"),
    )


def topology(t: Topology) -> None:
    orders = t.kafka_input("orders", partitions=2, include_headers=True)
    payments = t.kafka_input("payments", partitions=2, include_headers=True)
    t.kafka_output("paid", paid_orders(orders, payments), topic="paid-orders")
