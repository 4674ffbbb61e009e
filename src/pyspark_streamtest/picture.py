"""Compatibility path: what this module held lives in :mod:`pyspark_streamtest.reporting.picture`.

Import from :mod:`pyspark_streamtest` (the package face) in new code."""

from .errors import hide_our_frames
from .reporting.picture import (
    timeline_svg as timeline_svg,
)
from .reporting.picture import (
    write_timeline_picture as write_timeline_picture,
)

__tracebackhide__ = hide_our_frames

__all__ = [
    "timeline_svg",
    "write_timeline_picture",
]
