"""``.ci/profile``'s tables from a run's lines (the profile itself runs the whole suite)."""

from __future__ import annotations

import importlib.machinery
import importlib.util
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[2] / ".ci" / "profile"


def _profile():
    loader = importlib.machinery.SourceFileLoader("ci_profile", str(SCRIPT))
    spec = importlib.util.spec_from_loader("ci_profile", loader)
    module = importlib.util.module_from_spec(spec)
    loader.exec_module(module)
    return module


def test_files_rank_by_their_tests_seconds_and_processes_count_apart():
    tests = [
        {"file": "a.py", "setup": 1.0, "call": 2.0, "teardown": 0.0,
         "fixtures": {"spark": 1.0}, "processes": {"python": [2, 9.0]}},
        {"file": "b.py", "setup": 0.0, "call": 10.0, "teardown": 0.5,
         "fixtures": {}, "processes": {"jvm": [1, 4.0]}},
        {"file": "a.py", "setup": 0.0, "call": 1.0, "teardown": 0.0,
         "fixtures": {"spark": 0.5}, "processes": {}},
    ]
    lines = _profile().report(tests, 20.0, 20).splitlines()
    assert lines[0] == "3 tests, 14 s of test time in 20 s wall (pytest -n 2)"
    assert lines[4:6] == ["| `b.py` | 1 | 10 | 0 | 10 | 0 | 1 (4 s) | 0 |",
                          "| `a.py` | 2 | 4 | 1 | 3 | 0 | 0 | 2 (9 s) |"]
    assert "| `spark` | 2 | 2 |" in lines
