"""Every ```python block of the documentation pages runs, so the docs stay true.

One test per page of ``docs/**/*.md``, and one for the README's example. The page's ```python blocks run in order in one
namespace (as one module would); then every function in that namespace named
``test_*`` is called, its parameters filled by name from pytest fixtures (``spark``,
``topology_driver``, ``tmp_path``, ...), so a page can show a real pytest test and it
really runs. A ``@pytest.mark.streamtest_requires(Feature.X)`` mark on such a function is
honoured as the plugin honours it: the page is skipped, with the reason, where the
session lacks the feature.

A block that must not run (a failure message, pseudo-code, a shell command) uses another
fence language (```text, ```console, ```yaml).
"""

from __future__ import annotations

import ast
import inspect
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
PAGES = [*sorted(DOCS.rglob("*.md")), ROOT / "README.md"]

# Pages that teach by example: each must have runnable python blocks.
PAGES_WITH_EXAMPLES = {
    "README.md",
    "index.md",
    "getting-started.md",
    "concepts.md",
    "how-to/port-from-spark-streamtest.md",
    "how-to/port-from-kafka-streams.md",
    "how-to/windowed-aggregation.md",
    "how-to/transform-with-state.md",
    "how-to/kafka-topics.md",
    "how-to/file-landing.md",
    "how-to/test-your-job.md",
    "how-to/upgrades.md",
    "how-to/state-stores.md",
    "how-to/property-tests.md",
    "how-to/ci-gates.md",
    "how-to/compare-dataframes.md",
    "how-to/compare-tools.md",
    "how-to/spark-connect.md",
    "how-to/pipelines.md",
    "reference/assertions.md",
}
MIN_BLOCKS = 15

_FENCE = re.compile(r"^(?P<indent>[ \t]*)(?P<fence>`{3,}|~{3,})\s*(?P<info>[^`]*)$")


@dataclass(frozen=True)
class Block:
    """One fenced ```python block: its code (dedented) and the page line of its first
    code line."""

    code: str
    line: int


def python_blocks(page: Path) -> list[Block]:
    """The ```python (or ```py) blocks of ``page``, in order. Fences may be indented
    (inside admonitions and tabs); the language is the first word of the info string."""
    lines = page.read_text(encoding="utf-8").splitlines()
    blocks: list[Block] = []
    index = 0
    while index < len(lines):
        opening = _FENCE.match(lines[index])
        if not opening:
            index += 1
            continue
        indent, fence = opening["indent"], opening["fence"]
        words = opening["info"].split()
        language = words[0].lower() if words else ""
        body: list[str] = []
        index += 1
        start = index + 1  # 1-based page line of the first code line
        while index < len(lines):
            closing = _FENCE.match(lines[index])
            if closing and closing["fence"][0] == fence[0] and len(closing["fence"]) >= len(
                fence
            ) and not closing["info"].strip():
                break
            body.append(lines[index][len(indent):] if lines[index].startswith(indent)
                        else lines[index].lstrip())
            index += 1
        index += 1
        if language in ("python", "py"):
            blocks.append(Block("\n".join(body) + "\n", start))
    return blocks


def _compile(source: str, filename: str, config: pytest.Config) -> Any:
    """Compile a block with pytest's assertion rewriting, so a failing ``assert`` in a page
    shows its values as it would in a test module."""
    tree = ast.parse(source, filename)
    try:
        from _pytest.assertion.rewrite import rewrite_asserts
    except ImportError:  # pytest moved it: plain asserts still fail, with less detail
        pass
    else:
        rewrite_asserts(tree, source.encode("utf-8"), filename, config)
    return compile(tree, filename, "exec")


def _page_id(page: Path) -> str:
    return page.relative_to(DOCS if page.is_relative_to(DOCS) else ROOT).as_posix()


def _missing_features(function: Any, spark: Any) -> list[str]:
    """What the ``streamtest_requires`` marks of ``function`` ask for and ``spark`` lacks."""
    from pyspark_streamtest import UnsupportedFeatureError, require_feature
    from pyspark_streamtest.core.features import as_feature

    wanted = [as_feature(feature)
              for mark in getattr(function, "pytestmark", [])
              if mark.name == "streamtest_requires"
              for feature in mark.args]
    lacking = []
    for feature in wanted:
        try:
            require_feature(spark, feature)
        except UnsupportedFeatureError as missing:  # over Connect, a line may add it later
            lacking.append(f"{feature.description}"
                           + (" over Spark Connect" if missing.over_connect else "")
                           + f" (added in PySpark {missing.added_in})")
    return lacking


@pytest.mark.parametrize("page", PAGES, ids=_page_id)
def test_page(page: Path, request: pytest.FixtureRequest) -> None:
    blocks = python_blocks(page)
    name = _page_id(page)
    if name in PAGES_WITH_EXAMPLES:
        assert blocks, f"{name} teaches by example but has no ```python block"
    if not blocks:
        return
    spark = request.getfixturevalue("spark")  # pages may make drivers at the top level
    namespace: dict[str, Any] = {"__name__": "docs_" + re.sub(r"\W", "_", name[:-3])}
    for block in blocks:
        # Padded so that tracebacks give the page's own line numbers.
        source = "\n" * (block.line - 1) + block.code
        exec(_compile(source, str(page.relative_to(ROOT)), request.config), namespace)
    skipped: list[str] = []
    for function_name, function in list(namespace.items()):
        if not function_name.startswith("test_") or not callable(function):
            continue
        lacking = _missing_features(function, spark)
        if lacking:
            skipped.append(f"{function_name} needs {', '.join(lacking)}")
            continue
        arguments = {parameter: request.getfixturevalue(parameter)
                     for parameter in inspect.signature(function).parameters}
        function(**arguments)
    if skipped:
        pytest.skip(f"{name}: " + "; ".join(skipped))


def test_the_pages_have_many_runnable_examples() -> None:
    runnable = [block for page in PAGES for block in python_blocks(page)]
    assert len(runnable) >= MIN_BLOCKS, (
        f"only {len(runnable)} runnable ```python blocks in docs/; the pages should teach by "
        f"example (at least {MIN_BLOCKS})"
    )


def test_the_block_parser_reads_fences(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text(
        "# t\n"
        "```python\nx = 1\n```\n"
        "```text\nnot run\n```\n"
        "!!! note\n    ```python\n    y = x + 1\n    ```\n"
        "```python\nz = 3\n```\n",
        encoding="utf-8",
    )
    blocks = python_blocks(page)
    assert [(b.code, b.line) for b in blocks] == [
        ("x = 1\n", 3), ("y = x + 1\n", 10), ("z = 3\n", 13)]
