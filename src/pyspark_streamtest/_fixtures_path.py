"""Where the canned event streams (the repository's ``fixtures/``) are."""

from __future__ import annotations

from pathlib import Path

_PACKAGED = Path(__file__).with_name("_fixtures")  # in a wheel (hatch force-include)
_SOURCE_TREE = Path(__file__).resolve().parents[2] / "fixtures"  # editable install / checkout


def fixture_path(name: str) -> Path:
    """Path of fixture file ``name``; raises FileNotFoundError naming both places looked."""
    for folder in (_PACKAGED, _SOURCE_TREE):
        candidate = folder / name
        if candidate.is_file():
            return candidate
    raise FileNotFoundError(f"fixture {name!r} not found in {_PACKAGED} or {_SOURCE_TREE}")
