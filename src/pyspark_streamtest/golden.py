"""Compatibility path: what this module held lives in :mod:`pyspark_streamtest.reporting.golden`.

Import from :mod:`pyspark_streamtest` (the package face) in new code."""

from .errors import hide_our_frames
from .reporting.golden import (
    GoldenMismatchError as GoldenMismatchError,
)
from .reporting.golden import (
    assert_matches_golden as assert_matches_golden,
)
from .reporting.golden import (
    describe_difference as describe_difference,
)
from .reporting.golden import (
    format_golden_timeline as format_golden_timeline,
)

__tracebackhide__ = hide_our_frames

__all__ = [
    "GoldenMismatchError",
    "assert_matches_golden",
    "format_golden_timeline",
]
