"""Test a streaming job as it is: ``TopologyTestDriver.from_app`` runs the job's own
``main(spark)`` with ``spark.readStream`` and ``DataFrame.writeStream`` turned towards
the driver, so each source becomes an input and each query an output."""

from ..errors import hide_our_frames
from ._context import AppSettings, selected_outputs
from ._intercept import App, app_topology, checked_argv
from ._sinks import SINKS, AppQuery
from ._sources import SOURCES

__tracebackhide__ = hide_our_frames

__all__ = ["SINKS", "SOURCES", "App", "AppQuery", "AppSettings", "app_topology",
           "checked_argv", "selected_outputs"]
