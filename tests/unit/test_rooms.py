"""The suite's layout (``.ci/inner``'s rooms): every Spark test file belongs to one room,
and every file a room names exists."""

from __future__ import annotations

import importlib.machinery
import importlib.util
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _rooms() -> dict[str, tuple[str, ...]]:
    loader = importlib.machinery.SourceFileLoader("ci_inner", str(ROOT / ".ci" / "inner"))
    spec = importlib.util.spec_from_loader("ci_inner", loader)
    module = importlib.util.module_from_spec(spec)
    loader.exec_module(module)
    return module.ROOMS


def test_every_spark_test_file_is_in_one_room():
    listed = Counter(f for files in _rooms().values() for f in files)
    spark = {str(p.relative_to(ROOT)) for p in (ROOT / "tests" / "spark").rglob("test_*.py")}
    assert sorted(spark - set(listed)) == []  # a new file: put it in its room
    assert sorted(f for f, n in listed.items() if n > 1) == []
    assert sorted(f for f in listed if not (ROOT / f).exists()) == []


def test_contributing_names_every_room():
    text = (ROOT / "CONTRIBUTING.md").read_text()
    assert [room for room in _rooms() if f"| `{room}` |" not in text] == []
