"""pytest plugin (registered through the ``pytest11`` entry point).

Fixtures:

``spark``
    A session-scoped, test-tuned local SparkSession (see
    :func:`pyspark_streamtest.test_spark_session`), created on first use. Options:
    ``--spark-master`` (default ``local[2]``) and ``--spark-conf KEY=VALUE`` (repeatable).
    A ``spark`` fixture of your own (in a conftest) takes precedence.

``topology_driver``
    A factory: ``topology_driver(topology, **options)`` makes a
    :class:`~pyspark_streamtest.TopologyTestDriver` on the ``spark`` session and closes
    it after the test. The test then fails if any streaming query is still active.

``golden``
    ``golden(driver, name)`` compares the driver's batch history with
    ``golden/<name>.timeline`` beside the test module (see
    :mod:`pyspark_streamtest.golden`); ``--streamtest-update-golden`` writes the files.

``clickstream``, ``customers_cdc``, ``iot_readings``, ``orders_payments``
    The canned event streams of :mod:`pyspark_streamtest.canned` (records, reference
    pipeline, expected results); ``stream.replay(driver)`` pipes them second by second.

Marker:

``@pytest.mark.streamtest_determinism(runs=3)``
    Run the test body ``runs`` times (fresh drivers each time, through
    ``topology_driver``) and fail with the first differing batch if the batch histories
    of any two runs differ. ``--streamtest-cpu-load N`` keeps N busy processes running
    meanwhile, to shake out timing dependence.

``@pytest.mark.streamtest_requires(Feature.X, ...)``
    Skip the test, with a reason naming the PySpark line that adds the feature, when the
    ``spark`` session lacks any of the listed :class:`~pyspark_streamtest.Feature` values
    (or their string values). Only marked tests touch the session for this check.

Importing this module does not import PySpark or start Spark.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from .driver import TopologyTestDriver
    from .topology import TopologyFunction

DriverFactory = Callable[..., "TopologyTestDriver"]
_DRIVERS = pytest.StashKey[list["TopologyTestDriver"]]()


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("pyspark-streamtest", "pyspark-streamtest (Spark streaming tests)")
    group.addoption(
        "--spark-master",
        default="local[2]",
        help="Spark master of the session-scoped 'spark' fixture (default: local[2]).",
    )
    group.addoption(
        "--spark-conf",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="Extra Spark setting for the 'spark' fixture; repeatable (default: none).",
    )
    group.addoption(
        "--streamtest-cpu-load",
        type=int,
        default=0,
        metavar="N",
        help="Busy processes kept running during streamtest_determinism tests (default 0).",
    )
    group.addoption(
        "--streamtest-update-golden",
        action="store_true",
        default=False,
        help="Write golden timeline files instead of comparing with them.",
    )


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "streamtest_determinism(runs=3): run the test body several times and fail if the "
        "batch histories of its drivers differ",
    )
    config.addinivalue_line(
        "markers",
        "streamtest_requires(*features): skip unless the Spark session offers every listed "
        "pyspark_streamtest.Feature (the reason names the PySpark line that adds it)",
    )


@pytest.fixture(autouse=True)
def _streamtest_requires(request: pytest.FixtureRequest) -> None:
    """Apply ``streamtest_requires`` markers (see the module docstring)."""
    markers = list(request.node.iter_markers("streamtest_requires"))
    if not markers:
        return
    from .features import UnsupportedFeatureError, as_feature, require_feature

    wanted = [as_feature(f) for marker in markers for f in marker.args]
    if not wanted:
        raise pytest.UsageError("streamtest_requires needs at least one Feature")
    session = request.getfixturevalue("spark")
    for feature in wanted:
        try:
            require_feature(session, feature)
        except UnsupportedFeatureError as missing:
            pytest.skip(
                f"needs {feature.description}, added in PySpark {feature.added_in} "
                f"(this is {missing.spark_version})"
            )


def pytest_report_header(config: pytest.Config) -> list[str]:
    from importlib.metadata import version

    try:
        pyspark_version = version("pyspark")
    except Exception:
        pyspark_version = "not installed"
    return [
        f"pyspark-streamtest {version('pyspark-streamtest')}: PySpark {pyspark_version}, "
        f"Java {_java_version()}, Python {sys.version.split()[0]}, "
        f"spark master {config.getoption('--spark-master')}"
    ]


def _java_version() -> str:
    java = shutil.which("java")
    if java is None:
        return "not found"
    try:
        done = subprocess.run(
            [java, "-version"], capture_output=True, text=True, timeout=20, check=False
        )
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    first = (done.stderr or done.stdout).strip().splitlines()
    return first[0].split('"')[1] if first and '"' in first[0] else "unknown"


def _parse_conf(items: list[str]) -> dict[str, str]:
    conf = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise pytest.UsageError(f"--spark-conf expects KEY=VALUE, got {item!r}")
        conf[key.strip()] = value
    return conf


@pytest.fixture(scope="session")
def spark(pytestconfig: pytest.Config) -> Iterator[SparkSession]:
    """A local SparkSession tuned for tests, shared by the whole test session."""
    from .session import test_spark_session

    session = test_spark_session(
        master=pytestconfig.getoption("--spark-master"),
        conf=_parse_conf(pytestconfig.getoption("--spark-conf")),
    )
    yield session
    session.stop()


@pytest.fixture
def topology_driver(
    spark: SparkSession, request: pytest.FixtureRequest
) -> Iterator[DriverFactory]:
    """Factory of TopologyTestDriver objects on the ``spark`` fixture, closed after the test.
    When the test fails, the report gets a "streamtest timeline" section per driver."""
    from .driver import TopologyTestDriver

    made: list[TopologyTestDriver] = []
    request.node.stash[_DRIVERS] = made

    def make(topology: TopologyFunction, **options: Any) -> TopologyTestDriver:
        options.setdefault("spark", spark)
        driver = TopologyTestDriver(topology, **options)
        made.append(driver)
        return driver

    yield make
    for driver in made:
        driver.close()
    leaked = [q.name for q in spark.streams.active]
    if leaked:
        for query in spark.streams.active:
            query.stop()
        pytest.fail(f"streaming queries still active after the test: {leaked}")


@pytest.fixture
def golden(request: pytest.FixtureRequest) -> Callable[[Any, str], None]:
    """``golden(driver_or_batches, name)``: compare with ``golden/<name>.timeline`` next to
    the test module, or write it under ``--streamtest-update-golden``."""
    from .golden import assert_matches_golden

    update = bool(request.config.getoption("--streamtest-update-golden"))
    folder = request.path.parent / "golden"

    def check(driver: Any, name: str) -> None:
        if not name or "/" in name or "\\" in name or name.startswith("."):
            raise ValueError(f"golden name {name!r} must be a plain file name")
        assert_matches_golden(driver, folder / f"{name}.timeline", update=update)

    return check


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Any:
    """Add each driver's batch timeline to the report of a failed test."""
    report = yield
    drivers = item.stash.get(_DRIVERS, None)
    if drivers and report.when == "call" and report.failed:
        from .report import format_timeline

        for index, driver in enumerate(drivers):
            title = "streamtest timeline" + (f" (driver {index + 1})" if len(drivers) > 1 else "")
            report.sections.append((title, format_timeline(driver.batches)))
    return report


def _canned(name: str) -> Any:
    from .canned import load

    return load(name)


@pytest.fixture
def clickstream() -> Any:
    """Clicks with out-of-order and late events (``pyspark_streamtest.canned``)."""
    return _canned("clickstream")


@pytest.fixture
def customers_cdc() -> Any:
    """A CDC changelog with upserts, tombstones and a re-created key."""
    return _canned("customers_cdc")


@pytest.fixture
def iot_readings() -> Any:
    """Sensor readings with a skewed clock, a gap and a late reading."""
    return _canned("iot_readings")


@pytest.fixture
def orders_payments() -> Any:
    """Orders and payments in two Kafka topics, for a stream-stream join."""
    return _canned("orders_payments")


@pytest.hookimpl(tryfirst=True)
def pytest_pyfunc_call(pyfuncitem: pytest.Function) -> bool | None:
    """Run ``streamtest_determinism`` tests several times and compare their histories."""
    marker = pyfuncitem.get_closest_marker("streamtest_determinism")
    if marker is None:
        return None
    from .golden import GoldenMismatchError, describe_difference, format_golden_timeline

    runs = int(marker.kwargs.get("runs", marker.args[0] if marker.args else 3))
    if runs < 2:
        raise pytest.UsageError("streamtest_determinism needs runs >= 2")
    drivers = pyfuncitem.stash.get(_DRIVERS, None)
    if drivers is None:
        raise pytest.UsageError(
            "streamtest_determinism compares the drivers a test makes with the "
            "topology_driver fixture; this test does not use it"
        )
    args = {name: pyfuncitem.funcargs[name] for name in pyfuncitem._fixtureinfo.argnames}
    load = _busy_processes(int(pyfuncitem.config.getoption("--streamtest-cpu-load")))
    try:
        histories = []
        for _ in range(runs):
            first = len(drivers)
            pyfuncitem.obj(**args)
            made = drivers[first:]
            if not made:
                raise pytest.UsageError("the test made no driver; nothing to compare")
            histories.append("".join(
                f"## driver {i + 1}\n{format_golden_timeline(d.batches)}"
                for i, d in enumerate(made)
            ))
            for driver in made:
                driver.close()
    finally:
        for process in load:
            process.kill()
            process.wait()
    for index, history in enumerate(histories[1:], start=2):
        if history != histories[0]:
            raise GoldenMismatchError(
                f"run {index} of {runs} differs from run 1; the topology or the test is not "
                f"deterministic:\n{describe_difference(histories[0], history)}"
            )
    return True


def _busy_processes(count: int) -> list[subprocess.Popen[bytes]]:
    return [
        subprocess.Popen([sys.executable, "-c", "while True: pass"])
        for _ in range(max(0, count))
    ]
