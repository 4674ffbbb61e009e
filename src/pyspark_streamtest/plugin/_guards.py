"""The pytest plugin's guards: a test that leaves a driver open fails naming it, and
once the shared session's JVM has died, the tests that need Spark fail saying where it
died. :mod:`pyspark_streamtest.plugin` registers these hooks."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any

import pytest

from ..errors import hide_our_frames

__tracebackhide__ = hide_our_frames

if TYPE_CHECKING:
    from pyspark.sql import SparkSession  # noqa: F401 (named in a string below)

__all__ = [
    "pytest_fixture_setup",
    "pytest_runtest_setup",
    "pytest_runtest_teardown",
]

_SESSION = pytest.StashKey["SparkSession"]()
"""The shared SparkSession of the test run (the plugin's ``spark`` fixture)."""

_FIRST_SERIAL = pytest.StashKey[int]()


_JVM_DIED_IN = pytest.StashKey[str]()


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    """Note which drivers the test makes; refuse to run a Spark test once the shared
    session's JVM has died (naming the test it died in, or the test it died before
    when it died between tests)."""
    __tracebackhide__ = True
    from ..core import open_drivers as _open_drivers

    item.stash[_FIRST_SERIAL] = _open_drivers.next_serial()
    if not {"spark", "topology_driver"} & set(getattr(item, "fixturenames", ())):
        return
    _note_jvm_death(item, where=f"between tests, before {item.nodeid}")
    died = item.config.stash.get(_JVM_DIED_IN, None)
    if died is not None:
        from ..errors import SparkDiedError

        raise SparkDiedError(
            f"the Spark JVM of this test run died {died}; this test needs Spark "
            "and cannot run. Find out why the JVM died there (killed, out of memory), "
            "then run the tests again"
        )


@pytest.hookimpl(wrapper=True)
def pytest_fixture_setup(fixturedef: pytest.FixtureDef[Any], request: Any) -> Any:
    """Drivers made by a fixture wider than one test belong to that fixture."""
    if fixturedef.scope == "function":
        return (yield)
    from ..core import open_drivers as _open_drivers

    with _open_drivers.shared():
        return (yield)


@pytest.hookimpl(wrapper=True, trylast=True)
def pytest_runtest_teardown(item: pytest.Item, nextitem: pytest.Item | None) -> Any:
    """After every fixture is torn down: close the drivers the test left open, then
    fail the test naming them."""
    __tracebackhide__ = True
    try:
        result = yield
    finally:  # a failing teardown still gets its leaked drivers closed
        left = _close_left_open(item)
        _note_jvm_death(item, where=f"during {item.nodeid}")
        _forget_runs()
    if not left:
        return result
    from ..errors import DriverLeftOpenError

    raise DriverLeftOpenError(
        f"test {item.nodeid} left {len(left)} TopologyTestDriver(s) open: "
        f"{'; '.join(left)}. The plugin closed them. Close each driver (`with "
        "TopologyTestDriver(...) as driver:` or driver.close()), or make it with the "
        "topology_driver fixture, which closes it"
    )


def _forget_runs() -> None:
    """Nothing carries over between tests: the runs ``run_topology`` kept are dropped
    (only if the module was imported: it imports hypothesis)."""
    runs = sys.modules.get("pyspark_streamtest.testing._runs")
    if runs is not None:
        runs.clear_run_cache()


def _note_jvm_death(item: pytest.Item, *, where: str) -> None:
    """Remember where the shared session's JVM was first found gone."""
    session = item.config.stash.get(_SESSION, None)
    if session is None or _JVM_DIED_IN in item.config.stash:
        return
    from .._spark.runtime.liveness import jvm_is_gone

    if jvm_is_gone(session):
        item.config.stash[_JVM_DIED_IN] = where


def _close_left_open(item: pytest.Item) -> list[str]:
    """Close the drivers ``item`` made and left open; their descriptions."""
    first = item.stash.get(_FIRST_SERIAL, None)
    if first is None:
        return []
    from ..core import open_drivers as _open_drivers

    left = _open_drivers.open_since(first)
    names = [repr(driver) for driver in left]
    for driver in left:
        driver.close()
    if "pyspark_streamtest.driver._lifecycle" in sys.modules:
        # drivers the test dropped unclosed are released on threads: let them finish
        sys.modules["pyspark_streamtest.driver._lifecycle"].await_released()
    return names
