"""Compatibility path: what this module held lives in :mod:`pyspark_streamtest.core.time`.

Import from :mod:`pyspark_streamtest` (the package face) in new code."""

from .core.time import (
    DEFAULT_START_TIME as DEFAULT_START_TIME,
)
from .errors import hide_our_frames

__tracebackhide__ = hide_our_frames

__all__ = [
    "DEFAULT_START_TIME",
]
