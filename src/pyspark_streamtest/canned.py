"""Compatibility path: what this module held lives in :mod:`pyspark_streamtest.gates.canned`.

Import from :mod:`pyspark_streamtest` (the package face) in new code."""

from .errors import hide_our_frames
from .gates.canned import (
    CannedRecord as CannedRecord,
)
from .gates.canned import (
    CannedStream as CannedStream,
)
from .gates.canned import (
    clicks_per_user as clicks_per_user,
)
from .gates.canned import (
    clickstream as clickstream,
)
from .gates.canned import (
    customers_cdc as customers_cdc,
)
from .gates.canned import (
    iot_readings as iot_readings,
)
from .gates.canned import (
    latest_customer as latest_customer,
)
from .gates.canned import (
    load as load,
)
from .gates.canned import (
    orders_payments as orders_payments,
)
from .gates.canned import (
    paid_orders as paid_orders,
)
from .gates.canned import (
    sensor_minute_averages as sensor_minute_averages,
)

__tracebackhide__ = hide_our_frames

__all__ = [
    "CannedRecord",
    "CannedStream",
    "clickstream",
    "customers_cdc",
    "iot_readings",
    "load",
    "orders_payments",
]
