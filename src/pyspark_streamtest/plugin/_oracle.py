"""``--streamtest-oracle``: run every driver query again by Spark alone and compare.

The option (or the ini option ``streamtest_oracle = true``) sets
``STREAMTEST_ORACLE=1`` for the run (see :mod:`pyspark_streamtest.driver.oracle`): each
query the driver starts gets a query of its own run by Spark alone, and the first batch that
differs fails its test with :class:`~pyspark_streamtest.errors.OracleMismatchError`.
A section at the end of the run says what was compared;
``--streamtest-oracle-min-tests N`` fails the run when fewer than N tests compared a
batch (a gate that cannot pass by comparing nothing). Works under pytest-xdist: each
worker counts its tests, the reports carry the counts, the controller adds them up.
"""

from __future__ import annotations

import os
from collections import Counter
from typing import Any

import pytest

from ..errors import hide_our_frames
from ._options import setting

__tracebackhide__ = hide_our_frames

_MIN_OPTION = "--streamtest-oracle-min-tests"
_COUNTS = ("queries", "batches", "state_stores", "same_time_triggers", "input_only_batches")


def register_oracle(config: pytest.Config) -> None:
    """Turn the oracle on for this process (and xdist workers) and register the
    counting plugin object, if the option was given."""
    if not setting(config, "streamtest_oracle"):
        return
    from ..driver.oracle import ORACLE_ENV

    os.environ[ORACLE_ENV] = "1"
    worker = hasattr(config, "workerinput")
    controller = getattr(config.option, "dist", "no") != "no" and not worker
    config.pluginmanager.register(
        Oracle(int(setting(config, "streamtest_oracle_min_tests")), counts=not controller,
               gates=not worker),
        "streamtest-oracle")


class Oracle:
    """The plugin object: counts per test, the summary, the minimum.

    ``counts``: this process runs tests (not an xdist controller) and measures them;
    ``gates``: this process sees every test's report (not an xdist worker) and fails the
    run when fewer than ``min_tests`` tests compared a batch. The run's exit status is
    decided in ``pytest_sessionfinish``, which pytest calls before the terminal summary
    (a summary hook is too late to change it)."""

    def __init__(self, min_tests: int, *, counts: bool = True, gates: bool = True) -> None:
        self._min_tests = min_tests
        self._counts = counts
        self._gates = gates
        self._before: dict[str, dict[str, Any]] = {}
        self._figures: list[dict[str, Any]] = []
        self._mismatches: list[str] = []

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_logstart(self, nodeid: str) -> None:
        if self._counts:
            from ..driver.oracle import STATS

            self._before[nodeid] = STATS.as_dict()

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_makereport(self, item: pytest.Item) -> Any:
        report = yield
        before = self._before.get(item.nodeid)
        if report.when == "teardown" and before is not None:
            from ..driver.oracle import STATS

            del self._before[item.nodeid]
            report.streamtest_oracle = delta(before, STATS.as_dict())
        return report

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        """Every test's figures, this process's or (in an xdist controller) a worker's."""
        figure = getattr(report, "streamtest_oracle", None)
        if isinstance(figure, dict):
            self._figures.append(figure)
        if report.failed and "OracleMismatchError" in str(report.longrepr or ""):
            self._mismatches.append(report.nodeid)

    def _shortfall(self) -> str | None:
        compared = summary(self._figures, self._mismatches)[1]
        if not self._gates or compared >= self._min_tests:
            return None
        return (f"the oracle compared batches in {compared} tests, fewer than "
                f"{_MIN_OPTION}={self._min_tests}")

    @pytest.hookimpl(trylast=True)
    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        if self._shortfall() is not None and session.exitstatus == 0:
            session.exitstatus = pytest.ExitCode.TESTS_FAILED

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        lines, _ = summary(self._figures, self._mismatches)
        terminalreporter.write_sep("=", "streamtest oracle: the driver against Spark alone")
        for line in lines:
            terminalreporter.write_line(line)
        short = self._shortfall()
        if short is not None:
            terminalreporter.write_line(f"FAILED: {short}", red=True)


def delta(before: dict[str, Any], after: dict[str, Any]) -> dict[str, Any]:
    """What one test compared."""
    out: dict[str, Any] = {key: after[key] - before[key] for key in _COUNTS}
    reasons = Counter(after["not_followed"])
    reasons.subtract(before["not_followed"])
    out["not_followed"] = {reason: n for reason, n in reasons.items() if n}
    return out


def summary(figures: list[dict[str, Any]], mismatches: list[str]) -> tuple[list[str], int]:
    """The section's lines, and how many tests compared at least one batch."""
    compared = sum(1 for figure in figures if figure["batches"] > 0)
    sums = {key: sum(figure[key] for figure in figures) for key in _COUNTS}
    reasons: Counter[str] = Counter()
    for figure in figures:
        reasons.update(figure["not_followed"])
    lines = [
        f"{compared} tests compared {sums['batches']} batches of {sums['queries']} queries "
        f"and {sums['state_stores']} state stores with Spark alone; "
        f"{len(mismatches)} differed",
        f"deliberate differences met: {sums['same_time_triggers']} same-time triggers, "
        f"after which {sums['input_only_batches']} batches of plans that read the "
        "processing time were compared by what they read only (see 'Where the driver "
        "differs from Spark alone' in docs/guarantees.md)",
    ]
    if reasons:
        lines.append("queries no longer compared after: " + ", ".join(
            f"{reason} ({n})" for reason, n in sorted(reasons.items())))
    lines.extend(f"DIFFERED: {nodeid}" for nodeid in mismatches)
    return lines, compared
