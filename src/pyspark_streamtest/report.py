"""Compatibility path: what this module held lives in :mod:`pyspark_streamtest.reporting.timeline`.

Import from :mod:`pyspark_streamtest` (the package face) in new code."""

from .errors import hide_our_frames
from .reporting.timeline import (
    format_timeline as format_timeline,
)

__tracebackhide__ = hide_our_frames

__all__ = [
    "format_timeline",
]
