"""The plugin's fixtures of the canned event streams (:mod:`pyspark_streamtest.canned`),
and its deprecated fixture names.

Each canned-stream fixture returns a fresh stream (records, reference pipeline, expected
results); ``stream.replay(driver)`` pipes it second by second. Nothing here imports
PySpark until a fixture is used.

The fixtures' names start with ``streamtest_``, so that they collide with no fixture of
a project or of another plugin. The names of release 0.1 (``clickstream``, ...,
``golden``) still work until the next release: each gives the same value as its new
name and warns with a :class:`DeprecationWarning` naming it.
"""

from __future__ import annotations

import warnings
from typing import Any

import pytest

from .errors import hide_our_frames

__tracebackhide__ = hide_our_frames


def _canned(name: str) -> Any:
    from .gates.canned import load

    return load(name)


@pytest.fixture
def streamtest_clickstream() -> Any:
    """Clicks with out-of-order and late events (``pyspark_streamtest.canned``)."""
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


def deprecated_fixture(old: str, new: str) -> Any:
    """A fixture named ``old`` that warns (``DeprecationWarning``, naming ``new``) and
    gives the value of the fixture ``new``, with ``new``'s scope: function."""

    def alias(request: pytest.FixtureRequest) -> Any:
        warnings.warn(
            f"the fixture {old!r} of pyspark-streamtest is deprecated and goes in the "
            f"next release: use {new!r}, the same fixture under a name no other plugin "
            "or project uses",
            DeprecationWarning,
            stacklevel=2,
        )
        return request.getfixturevalue(new)

    alias.__doc__ = f"Deprecated: the old name of ``{new}``, until the next release."
    return pytest.fixture(name=old)(alias)


clickstream = deprecated_fixture("clickstream", "streamtest_clickstream")
customers_cdc = deprecated_fixture("customers_cdc", "streamtest_customers_cdc")
iot_readings = deprecated_fixture("iot_readings", "streamtest_iot_readings")
orders_payments = deprecated_fixture("orders_payments", "streamtest_orders_payments")
