"""The plugin's fixtures of the canned event streams (:mod:`pyspark_streamtest.gates.canned`).

Each canned-stream fixture returns a fresh stream (records, reference pipeline, expected
results); ``stream.replay(driver)`` pipes it second by second. Nothing here imports
PySpark until a fixture is used.

The fixtures' names start with ``streamtest_``, so that they collide with no fixture of
a project or of another plugin.
"""

from __future__ import annotations

from typing import Any

import pytest

from ..errors import hide_our_frames

__tracebackhide__ = hide_our_frames


def _canned(name: str) -> Any:
    from ..gates.canned import load

    return load(name)


@pytest.fixture
def streamtest_clickstream() -> Any:
    """Clicks with out-of-order and late events (``pyspark_streamtest.gates.canned``)."""
    return _canned("clickstream")


@pytest.fixture
def streamtest_customers_cdc() -> Any:
    """A CDC changelog with upserts, tombstones and a re-created key."""
    return _canned("customers_cdc")


@pytest.fixture
def streamtest_iot_readings() -> Any:
    """Sensor readings with a skewed clock, a gap and a late reading."""
    return _canned("iot_readings")


@pytest.fixture
def streamtest_orders_payments() -> Any:
    """Orders and payments in two Kafka topics, for a stream-stream join."""
    return _canned("orders_payments")
