"""A mkdocs hook: every public name has an entry in the API reference.

The public names are the ``__all__`` of the package face and of the stable modules
(:data:`PUBLIC_MODULES`), and a few classes a test meets without importing them
(:data:`PUBLIC_OBJECTS`: what a fixture gives). A name is covered when a page of
``docs/reference/`` has a mkdocstrings entry (``::: path``) for it, for the same object
under another public path, or for a module whose ``__all__`` holds it.
``mkdocs build --strict`` fails on the warning this logs for each name not covered;
``tests/unit/test_docs_quality.py`` runs the same check without mkdocs.

Registered in ``mkdocs.yml`` (``hooks: [docs/_ext/api_coverage.py]``).
"""

from __future__ import annotations

import importlib
import logging
import re
import types
from pathlib import Path
from typing import Any

PUBLIC_MODULES = (
    "pyspark_streamtest",
    "pyspark_streamtest.errors",
    "pyspark_streamtest.kafka",
    "pyspark_streamtest.state",
    "pyspark_streamtest.testing",
    "pyspark_streamtest.testing.strategies",
    "pyspark_streamtest.testing.model",
    "pyspark_streamtest.testing.invariants",
    "pyspark_streamtest.cluster",
)
PUBLIC_OBJECTS = (
    "pyspark_streamtest.plugin.DriverFactory",  # what the topology_driver fixture is
    "pyspark_streamtest.gates.canned.CannedStream",  # what the canned-stream fixtures are
    "pyspark_streamtest.gates.canned.CannedRecord",
)

REFERENCE = Path(__file__).resolve().parents[1] / "reference"
_ENTRY = re.compile(r"^:::\s*(?P<path>[\w.]+)", re.MULTILINE)

log = logging.getLogger("mkdocs.plugins.api_coverage")


def _lookup(path: str) -> Any:
    """The object at a dotted ``path``: the longest importable module, then attributes."""
    parts = path.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            found: Any = importlib.import_module(".".join(parts[:cut]))
        except ImportError:
            continue
        for name in parts[cut:]:
            found = getattr(found, name)
        return found
    raise ImportError(path)


def public_names() -> list[str]:
    """Every public dotted path the reference must cover."""
    names = [f"{module}.{name}"
             for module in PUBLIC_MODULES
             for name in getattr(importlib.import_module(module), "__all__", ())]
    return [*names, *PUBLIC_OBJECTS]


def reference_entries(reference: Path = REFERENCE) -> list[str]:
    """The ``::: path`` entries of the reference pages."""
    return [match["path"]
            for page in sorted(reference.glob("*.md"))
            for match in _ENTRY.finditer(page.read_text(encoding="utf-8"))]


def missing_names(reference: Path = REFERENCE) -> list[str]:
    """The public names no entry of the reference pages covers."""
    covered: set[int] = set()
    for entry in reference_entries(reference):
        found = _lookup(entry)
        covered.add(id(found))
        for name in getattr(found, "__all__", ()) if isinstance(found, types.ModuleType) else ():
            covered.add(id(getattr(found, name)))
    missing = []
    for name in public_names():
        found = _lookup(name)
        # A submodule counts as covered when every name of its __all__ is.
        if isinstance(found, types.ModuleType) and id(found) not in covered:
            inner = [id(getattr(found, n)) for n in getattr(found, "__all__", ())]
            if inner and all(i in covered for i in inner):
                continue
        if id(found) not in covered:
            missing.append(name)
    return missing


def on_post_build(**kwargs: Any) -> None:
    for name in missing_names():
        log.warning(f"API reference: no entry for {name} (add '::: {name}' to a page of "
                    "docs/reference/)")
