"""An import every run ends with, begun while the process waits on Spark.

Hypothesis' own pytest plugin imports all of hypothesis when a run ends (its terminal
summary imports ``hypothesis.internal.observability``), whether a test used hypothesis
or not: 0.7-0.8 s of a one-test run on a 2-core machine, after the last test. A run of
streaming tests spends longer than that waiting on the JVM (its session's start, its
micro-batches), with the GIL free. So when a run is going to use Spark, the import is
started on a thread of its own, and the summary's import finds it done (or waits for
it on the module's import lock, as any second importer does). Nothing else changes:
the same module is imported once, in the same process, before the same summary.

Only where the summary runs: a serial run, or pytest-xdist's controller (which waits
for its workers); never in an xdist worker, which prints no summary. A run whose test
modules did not import PySpark, or that disabled hypothesis' plugin, or already
imported hypothesis, starts nothing (the plugin costs nothing where unused).
"""

from __future__ import annotations

import contextlib
import sys
import threading

import pytest

from .errors import hide_our_frames

__tracebackhide__ = hide_our_frames

THREAD_NAME = "pyspark-streamtest-import-ahead"
_HYPOTHESIS_PLUGIN = "hypothesispytest"  # its pytest11 entry point's name


def _import_hypothesis() -> None:
    # A failed import is the summary's own to raise again, in its place.
    with contextlib.suppress(BaseException):
        import hypothesis.internal.observability  # noqa: F401


def import_ahead(config: pytest.Config) -> threading.Thread | None:
    """Start importing hypothesis on a daemon thread if hypothesis' pytest plugin will
    import it at the end of this run and nothing has yet; the thread, or None."""
    if "hypothesis" in sys.modules or not config.pluginmanager.has_plugin(
            _HYPOTHESIS_PLUGIN):
        return None
    thread = threading.Thread(target=_import_hypothesis, name=THREAD_NAME, daemon=True)
    thread.start()
    return thread


def is_xdist_worker(config: pytest.Config) -> bool:
    return hasattr(config, "workerinput")


def is_xdist_controller(config: pytest.Config) -> bool:
    workers = getattr(config.option, "numprocesses", None)
    return not is_xdist_worker(config) and bool(workers) and getattr(
        config.option, "dist", "no") != "no"
