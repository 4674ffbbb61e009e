"""The ``--streamtest-durations`` figures and table, without Spark."""

from __future__ import annotations

from _pytest.reports import TestReport

from pyspark_streamtest.core import costs as _costs
from pyspark_streamtest.plugin._durations import measured, table


def _counters(batches: float, queries: float, reads: float, count: float) -> dict[str, float]:
    return {"batches": batches, "queries": queries, "state reads": reads, "batch count": count}


def test_a_test_s_figures_are_the_differences_and_the_rest():
    row = measured(10.0, _counters(1.0, 2.0, 0.0, 4), 13.0, _counters(2.5, 2.25, 0.25, 7))
    assert row == {"total": 3.0, "batches": 1.5, "queries": 0.25, "state reads": 0.25,
                   "rest": 1.0, "batch count": 3}


def test_the_table_lists_the_slowest_first_and_sums_all():
    slow = {"total": 4.0, "batches": 2.0, "queries": 1.0, "state reads": 0.0, "rest": 1.0,
            "batch count": 5}
    fast = {"total": 1.0, "batches": 0.0, "queries": 0.0, "state reads": 0.0, "rest": 1.0,
            "batch count": 0}
    lines = table([("t.py::fast", fast), ("t.py::slow", slow)], count=1)
    assert lines[1].endswith("t.py::slow") and " 5  t.py::slow" in lines[1]
    assert not any(line.endswith("t.py::fast") for line in lines)
    assert lines[2].split()[:2] == ["5.00s", "2.00s"] and lines[2].endswith("all 2 tests")
    assert lines[3] == ("share of all tests' time: batches 40%, queries 20%, "
                        "state reads 0%, rest 40%")
    assert table([], 0) == ["no test ran (or none was measured)"]


def test_the_figures_survive_xdist_s_report_serialization():
    report = TestReport("t.py::a", ("t.py", 1, "a"), {}, "passed", None, "teardown")
    report.streamtest_durations = {"total": 1.0}  # type: ignore[attr-defined]
    copy = TestReport._from_json(report._to_json())
    assert copy.streamtest_durations == {"total": 1.0}  # type: ignore[attr-defined]


def test_spending_counts_the_time_of_a_body_that_raises():
    before = _costs.spent()["queries"]
    try:
        with _costs.spending("queries"):
            raise KeyError("x")
    except KeyError:
        pass
    assert _costs.spent()["queries"] > before
