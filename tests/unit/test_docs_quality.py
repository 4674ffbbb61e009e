"""The documentation is readable and complete, checked without Spark or mkdocs.

* No line of a fenced code block in ``docs/**/*.md`` or the README is wider than 78
  characters (the site's code column at 1280 px); ``docs/_ext/code_width.py`` is the
  check, and a hook of the strict docs build.
* Every public name has an entry in the API reference (``docs/reference/*.md``);
  ``docs/_ext/api_coverage.py`` is the check, and a hook of the strict docs build.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
PAGES = [*sorted(DOCS.rglob("*.md")), ROOT / "README.md"]


def _load(name: str) -> ModuleType:
    """A module of ``docs/_ext`` (not a package: mkdocs loads its hooks by path)."""
    spec = importlib.util.spec_from_file_location(f"_docs_ext_{name}", DOCS / "_ext" / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


code_width = _load("code_width")
api_coverage = _load("api_coverage")


def _page_id(page: Path) -> str:
    return page.relative_to(DOCS if page.is_relative_to(DOCS) else ROOT).as_posix()


@pytest.mark.parametrize("page", PAGES, ids=_page_id)
def test_code_lines_fit_the_column(page: Path) -> None:
    wide = code_width.wide_lines(page.read_text(encoding="utf-8"))
    if wide and _page_id(page) in code_width.PENDING:
        pytest.skip(f"{_page_id(page)}: {len(wide)} wide code lines, being reflowed by "
                    "its owner (code_width.PENDING)")
    assert not wide, (
        f"{_page_id(page)}: {len(wide)} code lines wider than {code_width.MAX_WIDTH} "
        "characters (cut off on the site):\n"
        + "\n".join(f"  line {n} (```{lang}, {len(line)}): {line}" for n, lang, line in wide)
    )


def test_the_width_check_reads_indented_fences_and_the_opt_out() -> None:
    wide = "x" * 79
    text = (
        "# t\n"
        f"```python\n{wide}\n```\n"
        f"{wide} (prose is not code)\n"
        f"!!! note\n    ```text\n    {wide}\n    ```\n"
        f"{code_width.AS_PRINTED}\n```text\n{wide}\n```\n"
        f"````markdown\n```python\n{'y' * 78}\n```\n````\n"
    )
    assert [(n, lang) for n, lang, _ in code_width.wide_lines(text)] == [
        (3, "python"), (8, "text")]
    assert len(code_width.code_lines(text)) == 6


def test_every_public_name_has_an_entry_in_the_api_reference() -> None:
    missing = api_coverage.missing_names()
    assert not missing, (
        "public names without an entry in docs/reference/ (add '::: <name>' to a page):\n  "
        + "\n  ".join(missing)
    )


def test_the_coverage_check_sees_a_missing_name(tmp_path: Path) -> None:
    (tmp_path / "page.md").write_text(
        "# p\n\n::: pyspark_streamtest.errors\n\n::: pyspark_streamtest.TestRecord\n",
        encoding="utf-8")
    missing = api_coverage.missing_names(tmp_path)
    assert "pyspark_streamtest.errors.StreamTestError" not in missing  # by its module
    assert "pyspark_streamtest.StreamTestError" not in missing  # the same object
    assert "pyspark_streamtest.TestRecord" not in missing
    assert "pyspark_streamtest.TopologyTestDriver" in missing
