"""What the ``topology_driver`` fixture gives a test: drivers on the ``spark`` fixture,
made from a topology function or from a job's ``main`` (``from_app``), which the
fixture closes after the test and whose timelines a failure report shows."""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ..errors import hide_our_frames

__tracebackhide__ = hide_our_frames

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from ..driver.driver import TopologyTestDriver
    from ..driver.topology import TopologyFunction
    from ..pipelines import PipelineTestDriver


class DriverFactory:
    """``topology_driver(topology, **options)`` and ``topology_driver.from_app(app,
    **options)``: the driver's constructors, with ``spark`` defaulting to the fixture's
    session; every driver made is closed after the test."""

    def __init__(self, spark: SparkSession, made: list[TopologyTestDriver], *,
                 ignore_options: frozenset[str] = frozenset(),
                 pipelines: list[PipelineTestDriver] | None = None) -> None:
        self._spark = spark
        self._made = made
        self._pipelines = pipelines if pipelines is not None else []
        self._ignore_options = ignore_options
        """The suite's ``--streamtest-ignore-option`` names (ini
        ``streamtest_ignore_option``), added to each ``from_app`` call's."""

    def __call__(self, topology: TopologyFunction, **options: Any) -> TopologyTestDriver:
        from .. import TopologyTestDriver  # the face's: its errors show by their name

        options.setdefault("spark", self._spark)
        return self._keep(TopologyTestDriver(topology, **options))

    def from_app(self, app: Callable[..., object], **options: Any) -> TopologyTestDriver:
        """:meth:`TopologyTestDriver.from_app
        <pyspark_streamtest.TopologyTestDriver.from_app>` on the fixture's session; the
        suite's ignored options (``--streamtest-ignore-option``, ini
        ``streamtest_ignore_option``) add to the call's ``ignore_options``."""
        from .. import TopologyTestDriver  # the face's: its errors show by their name

        options.setdefault("spark", self._spark)
        if self._ignore_options:
            options["ignore_options"] = self._ignore_options | set(
                options.get("ignore_options", ()))
        return self._keep(TopologyTestDriver.from_app(app, **options))

    def from_pipeline(self, spec: str | os.PathLike[str], **options: Any) -> PipelineTestDriver:
        """:meth:`TopologyTestDriver.from_pipeline
        <pyspark_streamtest.TopologyTestDriver.from_pipeline>` on the fixture's session
        (its JVM runs the pipeline engine), closed after the test; a failing test's
        report shows its updates."""
        from .. import TopologyTestDriver  # the face's: its errors show by their name

        options.setdefault("spark", self._spark)
        driver = TopologyTestDriver.from_pipeline(spec, **options)
        self._pipelines.append(driver)
        return driver

    def _keep(self, driver: TopologyTestDriver) -> TopologyTestDriver:
        self._made.append(driver)
        return driver

    def __repr__(self) -> str:  # a failing test's report shows its arguments
        return f"<topology_driver fixture: {len(self._made)} driver(s) made>"
