"""pytest plugin (registered through the ``pytest11`` entry point).

Fixtures:

``spark``
    A session-scoped, test-tuned SparkSession (see
    :func:`pyspark_streamtest.test_spark_session`), created on first use. Options:
    ``--streamtest-master`` / ``$STREAMTEST_MASTER`` (default ``local[2]``),
    ``--streamtest-conf KEY=VALUE`` (repeatable) and ``--streamtest-jvm-logs`` (the JVM's
    warnings and stack traces, for debugging). They are the defaults of every session
    the library creates during the run: a driver made without ``spark=`` (or
    ``test_spark_session()``) creates this same session, on the master the report
    header names. A ``spark`` fixture of the project's own (in a conftest) overrides
    this one by pytest's rules, and ``topology_driver`` then makes its drivers on it.

``topology_driver``
    A factory: ``topology_driver(topology, **options)`` (or
    ``topology_driver.from_app(main, **options)``) makes a
    :class:`~pyspark_streamtest.TopologyTestDriver` on the ``spark`` fixture's session
    and closes it after the test. The test then fails if a streaming query it started
    outside any driver is still active.

``streamtest_golden``
    ``streamtest_golden(driver, name)`` compares the driver's batch history with
    ``golden/<name>.timeline`` beside the test module (see
    :mod:`pyspark_streamtest.reporting.golden`); ``--streamtest-update-golden`` writes the files.

``streamtest_<stream>``
    ``streamtest_clickstream``, ``streamtest_customers_cdc``, ``streamtest_iot_readings``
    and ``streamtest_orders_payments``: the canned event streams of
    :mod:`pyspark_streamtest.gates.canned` (records, reference pipeline, expected results);
    ``stream.replay(driver)`` pipes them second by second.

Open drivers:

A test that leaves a driver open (made during the test, not by a fixture wider than the test,
and neither closed nor used as a context manager) errors at teardown with
:class:`~pyspark_streamtest.errors.DriverLeftOpenError` naming the test and the driver; the
plugin closes the driver first, so the next test starts clean.

Markers:

``@pytest.mark.streamtest_determinism(runs=3)``
    Run the test body ``runs`` times (fresh drivers each time, through
    ``topology_driver``) and fail with the first differing batch if the batch histories
    of any two runs differ. ``--streamtest-cpu-load N`` keeps N busy processes running
    meanwhile, to shake out timing dependence.

``@pytest.mark.streamtest_requires(Feature.X, ...)``
    Skip the test, with a reason naming the PySpark line that adds the feature, when the
    ``spark`` session lacks any of the listed :class:`~pyspark_streamtest.Feature` values
    (or their string values). Only marked tests touch the session for this check.

Options:

Every option starts with ``--streamtest-`` and has an ini option of the same name with underscores
(``streamtest_master = spark://...`` in ``[tool.pytest.ini_options]``). The command line
wins over ``$STREAMTEST_MASTER``, which wins over the ini file (see
:mod:`pyspark_streamtest.plugin._options`).

Scenario files:

``*.streamtest.yaml`` / ``.yml`` / ``.json`` files are collected as tests, one per file,
run on the shared session (see :mod:`pyspark_streamtest.gates.scenario`); a file that does not
validate is a failing test naming its file, line and field.

Failure reports:

A failing test that made drivers (or a failing scenario) gets a "streamtest timeline" section
per driver. ``--streamtest-timeline-dir DIR`` also writes each timeline as an SVG picture
(:mod:`pyspark_streamtest.reporting.picture`) to DIR and records its path as the test's
``streamtest_timeline`` property, which ``--junitxml`` reports carry.
``--streamtest-durations N`` lists the N slowest tests (0: all) with their time split into
Spark's micro-batches, query starts and stops, state reads and the rest.

Cost where unused: importing this module imports neither PySpark nor Py4J, pandas,
pyarrow or hypothesis, and starts no process; the report header reads versions from
package metadata and the JDK's ``release`` file. PySpark is imported when a test first
asks for ``spark`` or ``topology_driver`` (or is marked ``streamtest_requires``), or
when a scenario file runs.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

import pytest

from ..core.files import safe_file_name
from ..errors import hide_our_frames

# The guards' hooks are this plugin's too (pluggy registers what the module holds).
# The canned streams' fixtures are this plugin's too (pytest reads the module's names).
from ._canned import streamtest_clickstream as streamtest_clickstream
from ._canned import streamtest_customers_cdc as streamtest_customers_cdc
from ._canned import streamtest_iot_readings as streamtest_iot_readings
from ._canned import streamtest_orders_payments as streamtest_orders_payments
from ._durations import register_durations
from ._factory import DriverFactory
from ._guards import pytest_fixture_setup as pytest_fixture_setup
from ._guards import pytest_runtest_setup as pytest_runtest_setup
from ._guards import pytest_runtest_teardown as pytest_runtest_teardown
from ._mutate import register_mutation
from ._options import add_options, resolve_options, setting
from ._oracle import register_oracle
from ._session import (
    _java_version,
    _jvm_options,
    _shared_session,
    _spark_master,
    _xdist_workers,
    connect_wanted,
    install_session_defaults,
    warm_jvm_wanted,
)

__tracebackhide__ = hide_our_frames

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from ..driver.driver import TopologyTestDriver
    from ..pipelines import PipelineTestDriver

_DRIVERS = pytest.StashKey[list["TopologyTestDriver"]]()
_PIPELINES = pytest.StashKey[list["PipelineTestDriver"]]()


def pytest_addoption(parser: pytest.Parser) -> None:
    add_options(parser)  # each on the command line and in the ini file


def pytest_configure(config: pytest.Config) -> None:
    resolve_options(config)
    register_durations(config)
    register_oracle(config)
    register_mutation(config)
    install_session_defaults(config)
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
    from .. import UnsupportedFeatureError, require_feature
    from ..core.features import as_feature

    wanted = [as_feature(f) for marker in markers for f in marker.args]
    if not wanted:
        raise pytest.UsageError("streamtest_requires needs at least one Feature")
    session = request.getfixturevalue("spark")
    for feature in wanted:
        try:
            require_feature(session, feature)
        except UnsupportedFeatureError as missing:
            pytest.skip(
                f"needs {feature.description}"
                + (" over Spark Connect" if missing.over_connect else "")
                + f", added in PySpark {missing.added_in} (this is {missing.spark_version})"
            )


def pytest_report_header(config: pytest.Config) -> list[str]:
    """One line: the versions and the master a rerun needs. Cheap, as the header shows
    on every run, those that never use Spark included: the versions come from package
    metadata and the JDK's ``release`` file (see ``_java_version``), not from importing
    PySpark or starting a JVM. (Under pytest-xdist only, naming the JVM options imports
    PySpark: the constant lives with its session code.)"""
    from importlib.metadata import version

    from .. import __version__

    try:
        pyspark_version = version("pyspark")
    except Exception:
        pyspark_version = "not installed"
    workers = _xdist_workers(config)
    return [
        f"pyspark-streamtest {__version__}: PySpark {pyspark_version}, "
        f"Java {_java_version()}, Python {sys.version.split()[0]}, "
        f"spark master {_spark_master(config, workers)}"
        + (" per xdist worker" if workers > 1 else "")
        + (f", JVM {options}" if (options := _jvm_options(config, workers)) else "")
        + (", Spark Connect" if connect_wanted(config) else
           ", warm JVM" if _spark_master(config, workers).startswith("local")
           and warm_jvm_wanted(config) else "")
    ]


@pytest.fixture(scope="session")
def spark(pytestconfig: pytest.Config) -> SparkSession:
    """A local SparkSession tuned for tests, shared by the whole test session, made on
    first use; with ``--streamtest-connect``, a Spark Connect session of a local server
    in this process's JVM (the process is then in Connect mode). A project's own
    ``spark`` fixture (in a conftest) overrides this one, by pytest's rules, for
    ``topology_driver`` and ``streamtest_requires`` too."""
    return _shared_session(pytestconfig)


@pytest.fixture
def topology_driver(
    spark: SparkSession, request: pytest.FixtureRequest
) -> Iterator[DriverFactory]:
    """Factory of TopologyTestDriver objects on the ``spark`` fixture (whichever
    ``spark`` the test sees: the project's own, if it has one), closed after the test.
    When the test fails, the report gets a "streamtest timeline" section per driver."""
    made: list[TopologyTestDriver] = []
    pipelines: list[PipelineTestDriver] = []
    request.node.stash[_DRIVERS] = made
    request.node.stash[_PIPELINES] = pipelines
    ignored = setting(request.config, "streamtest_ignore_option")
    yield DriverFactory(spark, made, ignore_options=frozenset(ignored), pipelines=pipelines)
    for driver in made:
        driver.close()
    for pipeline in pipelines:
        pipeline.close()
    from .._spark.runtime.liveness import jvm_is_gone

    if jvm_is_gone(spark):  # nothing to ask the JVM; the guards fail later Spark tests
        from ..errors import SparkDiedError

        raise SparkDiedError(
            f"the Spark JVM died during {request.node.nodeid} (killed, out of memory); "
            "its drivers are closed, and the tests after it that need Spark cannot run"
        )
    # Queries the test started itself, outside any driver (a driver's queries, and their
    # the oracle's queries beside them, are named for it: drivers left open, such as a
    # module-scoped one, are the plugin's guard's to close and report). Those run on
    # Spark's own clock, so stop() returns.
    from ..core.query_names import is_drivers_query

    foreign = [q for q in spark.streams.active if not is_drivers_query(q.name)]
    if foreign:
        names = [q.name for q in foreign]
        for query in foreign:
            query.stop()
        pytest.fail(f"streaming queries still active after the test: {names}")


@pytest.fixture
def streamtest_golden(request: pytest.FixtureRequest) -> Callable[[Any, str], None]:
    """``streamtest_golden(driver_or_batches, name)``: compare with
    ``golden/<name>.timeline`` next to the test module, or write it under
    ``--streamtest-update-golden`` (ini: ``streamtest_update_golden``)."""
    from .. import assert_matches_golden

    update = bool(setting(request.config, "streamtest_update_golden"))
    folder = request.path.parent / "golden"

    def check(driver: Any, name: str) -> None:
        if not name or "/" in name or "\\" in name or name.startswith("."):
            raise ValueError(f"golden name {name!r} must be a plain file name")
        assert_matches_golden(driver, folder / f"{name}.timeline", update=update)

    return check


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Any:
    """Add each driver's batch timeline to the report of a failed test (and, with
    ``--streamtest-timeline-dir``, a picture whose path the JUnit XML carries)."""
    report = yield
    histories = item.stash.get(_HISTORIES, None) or item.stash.get(_DRIVERS, None)
    if histories and report.when == "call" and report.failed:
        from ..reporting.timeline import format_timeline

        folder = setting(item.config, "streamtest_timeline_dir")
        for index, history in enumerate(histories):
            batches = getattr(history, "batches", history)  # an open driver, or its batches
            suffix = f" (driver {index + 1})" if len(histories) > 1 else ""
            # an open driver's Kafka topics read with the deserializers the test gave them
            text = format_timeline(batches, show_rows=3,
                                   deserializers=getattr(history, "_readers", None))
            report.sections.append(("streamtest timeline" + suffix, text))
            if folder:
                name = safe_file_name(item.nodeid) + (f"-{index + 1}" if len(histories) > 1 else "")
                path = _picture(history, os.path.join(folder, name + ".svg"), item.nodeid + suffix)
                # junitxml writes the properties of the teardown report, made from the item
                item.user_properties.append(("streamtest_timeline", os.path.abspath(path)))
                report.sections.append(("streamtest timeline picture" + suffix, path))
    pipelines = item.stash.get(_PIPELINES, None)
    if pipelines and report.when == "call" and report.failed:
        for index, pipeline in enumerate(pipelines):
            suffix = f" (pipeline {index + 1})" if len(pipelines) > 1 else ""
            report.sections.append(("streamtest updates" + suffix, pipeline.timeline()))
    return report


def _picture(history: Any, path: str, title: str) -> str:
    """An open driver's batches with records at the event time its queries use
    (evaluated where the query computes it); else the batches as they are."""
    from ..reporting.picture import write_timeline_picture

    try:
        batches = history.evaluate_event_times()
    except Exception:  # batches, a closed driver: a report never fails for a picture
        batches = getattr(history, "batches", history)
    return write_timeline_picture(batches, path, title=title)


# --- scenario files ---------------------------------------------------------------------------
_HISTORIES = pytest.StashKey[list[Any]]()


def pytest_collect_file(file_path: Any, parent: pytest.Collector) -> pytest.Collector | None:
    """Collect ``*.streamtest.yaml`` / ``.yml`` / ``.json`` files as tests."""
    from ..gates.scenario_file import SCENARIO_SUFFIXES

    if file_path.name.endswith(SCENARIO_SUFFIXES):
        return ScenarioFile.from_parent(parent, path=file_path)
    return None


class ScenarioFile(pytest.File):
    """A scenario file: one test, named by the scenario's ``name``."""

    def collect(self) -> Iterator[pytest.Item]:
        from ..gates.scenario import ScenarioError, load_scenario

        try:
            scenario = load_scenario(self.path)
        except ScenarioError as error:
            yield InvalidScenarioItem.from_parent(self, name=self.path.name, error=error)
            return
        yield ScenarioItem.from_parent(self, name=scenario.name, scenario=scenario)


class InvalidScenarioItem(pytest.Item):
    """A scenario file that does not validate: fails with the file, line and field."""

    def __init__(self, *, error: Exception, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.error = error

    def runtest(self) -> None:
        raise self.error

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException],
                     style: Any = None) -> str:
        return f"invalid scenario file: {excinfo.value}"

    def reportinfo(self) -> tuple[Any, int | None, str]:
        return self.path, None, f"scenario file {self.path.name}"


class ScenarioItem(pytest.Item):
    """Runs one scenario (see :mod:`pyspark_streamtest.gates.scenario`) on the shared session."""

    def __init__(self, *, scenario: Any, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.scenario = scenario

    def runtest(self) -> None:
        from ..gates.scenario import run_scenario

        result = run_scenario(self.scenario, spark=_shared_session(self.config))
        self.stash[_HISTORIES] = [result.batches]
        if not result.passed:
            raise ScenarioFailedError(result.message)

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException],
                     style: Any = None) -> str:
        if isinstance(excinfo.value, ScenarioFailedError):
            return str(excinfo.value)
        return str(super().repr_failure(excinfo))

    def reportinfo(self) -> tuple[Any, int | None, str]:
        return self.path, None, f"scenario {self.scenario.name}"


class ScenarioFailedError(AssertionError):
    """A scenario's expectation or step failed (the message says which and how)."""


@pytest.hookimpl(tryfirst=True)
def pytest_pyfunc_call(pyfuncitem: pytest.Function) -> bool | None:
    """Run ``streamtest_determinism`` tests several times and compare their histories."""
    marker = pyfuncitem.get_closest_marker("streamtest_determinism")
    if marker is None:
        return None
    from ..reporting.golden import GoldenMismatchError, describe_difference, format_golden_timeline

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
    from ..gates.load import busy_processes

    with busy_processes(int(setting(pyfuncitem.config, "streamtest_cpu_load"))):
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
    for index, history in enumerate(histories[1:], start=2):
        if history != histories[0]:
            raise GoldenMismatchError(
                f"run {index} of {runs} differs from run 1; the topology or the test is not "
                f"deterministic:\n{describe_difference(histories[0], history)}"
            )
    return True
