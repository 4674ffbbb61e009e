"""``--streamtest-durations N``: per test, the time its drivers waited for Spark.

Like pytest's ``--durations``, a section at the end of the run lists the N slowest tests
(N = 0: all), each with its wall time (setup, call and teardown) split into what
:mod:`pyspark_streamtest.core.costs` counts (Spark's micro-batches, query starts and
stops, state reads) and the rest: the harness, the test's own code, and Spark work
outside a driver (such as starting the session in the first test of a process). It
works under pytest-xdist: each worker measures its tests, the report carries the
figures, the controller prints them.
"""

from __future__ import annotations

import time
from typing import Any

import pytest

from ..core.costs import KINDS, spent
from ..errors import hide_our_frames
from ._options import setting

__tracebackhide__ = hide_our_frames

_COLUMNS = (*KINDS, "rest")


def register_durations(config: pytest.Config) -> None:
    """Register the measuring plugin object if the option was given."""
    count = setting(config, "streamtest_durations")
    if count is not None:
        # An xdist controller runs no test: it only prints what its workers measured.
        controller = getattr(config.option, "dist", "no") != "no" and not hasattr(
            config, "workerinput")
        config.pluginmanager.register(Durations(max(0, count), measures=not controller),
                                      "streamtest-durations")


class Durations:
    """The plugin object ``pytest_configure`` registers when the option is given."""

    def __init__(self, count: int, *, measures: bool = True) -> None:
        self._count = count
        self._measures = measures
        self._started: dict[str, tuple[float, dict[str, float]]] = {}

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_logstart(self, nodeid: str) -> None:
        if self._measures:
            self._started[nodeid] = (time.perf_counter(), spent())

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_makereport(self, item: pytest.Item) -> Any:
        report = yield
        start = self._started.get(item.nodeid)
        if report.when == "teardown" and start is not None:
            del self._started[item.nodeid]
            report.streamtest_durations = measured(*start, time.perf_counter(), spent())
        return report

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        figures = [
            (report.nodeid, report.streamtest_durations)
            for reports in terminalreporter.stats.values()
            for report in reports
            if isinstance(getattr(report, "streamtest_durations", None), dict)
        ]
        which = "all" if self._count == 0 else f"slowest {self._count}"
        terminalreporter.write_sep("=", f"streamtest durations ({which})")
        for line in table(figures, self._count):
            terminalreporter.write_line(line)


def measured(
    started: float, before: dict[str, float], ended: float, after: dict[str, float]
) -> dict[str, float]:
    """One test's figures: ``total`` seconds, seconds per kind, ``rest``, ``batch count``."""
    total = ended - started
    kinds: dict[str, float] = {kind: after[kind] - before[kind] for kind in KINDS}
    return {
        "total": total, **kinds, "rest": max(0.0, total - sum(kinds.values())),
        "batch count": after["batch count"] - before["batch count"],
    }


def table(figures: list[tuple[str, dict[str, float]]], count: int) -> list[str]:
    """The lines of the section: the slowest ``count`` tests (0: all), then the sums."""
    if not figures:
        return ["no test ran (or none was measured)"]
    ordered = sorted(figures, key=lambda item: -item[1]["total"])
    shown = ordered if count == 0 else ordered[:count]
    header = f"{'total':>8} " + " ".join(f"{name:>11}" for name in _COLUMNS) + "  batches  test"
    lines = [header]
    for nodeid, row in shown:
        lines.append(_line(row, nodeid))
    sums = {key: sum(row[key] for _, row in figures) for key in ("total", *_COLUMNS,
                                                                 "batch count")}
    lines.append(_line(sums, f"all {len(figures)} tests"))
    shares = ", ".join(
        f"{name} {sums[name] / sums['total']:.0%}" for name in _COLUMNS if sums["total"] > 0
    )
    lines.append(f"share of all tests' time: {shares}")
    return lines


def _line(row: dict[str, float], label: str) -> str:
    cells = " ".join(f"{row[name]:>10.2f}s" for name in _COLUMNS)
    return f"{row['total']:>7.2f}s {cells} {int(row['batch count']):>8}  {label}"
