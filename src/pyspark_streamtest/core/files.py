"""File names made from user text (output names, pytest node ids, scenario paths)."""

from __future__ import annotations

import re

from ..errors import hide_our_frames

__tracebackhide__ = hide_our_frames

_UNSAFE = re.compile(r"[^A-Za-z0-9_.-]")


def safe_file_name(text: str, *, limit: int = 150) -> str:
    """``text`` with every character outside ``[A-Za-z0-9_.-]`` replaced by ``_``, without
    leading or trailing ``_``, cut to ``limit`` characters (never empty)."""
    return _UNSAFE.sub("_", text).strip("_")[:limit] or "_"
