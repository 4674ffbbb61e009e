"""Where the canned event streams (the repository's ``fixtures/``) are."""

from __future__ import annotations

from pathlib import Path

from ..errors import hide_our_frames

__tracebackhide__ = hide_our_frames

_PACKAGE = Path(__file__).resolve().parents[1]
_PACKAGED = _PACKAGE / "_fixtures"  # in a wheel (hatch force-include)
_SOURCE_TREE = _PACKAGE.parents[1] / "fixtures"  # editable install / checkout


def fixture_path(name: str) -> Path:
    """Path of fixture file ``name``; raises FileNotFoundError naming both places looked."""
    for folder in (_PACKAGED, _SOURCE_TREE):
        candidate = folder / name
        if candidate.is_file():
            return candidate
    raise FileNotFoundError(f"fixture {name!r} not found in {_PACKAGED} or {_SOURCE_TREE}")
