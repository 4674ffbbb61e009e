"""Compatibility path: what this module held lives in :mod:`pyspark_streamtest.core.equality`.

Import from :mod:`pyspark_streamtest` (the package face) in new code."""

from .core.equality import (
    OutputMismatchError as OutputMismatchError,
)
from .core.equality import (
    assert_values_equal as assert_values_equal,
)
from .errors import hide_our_frames

__tracebackhide__ = hide_our_frames

__all__ = [
    "OutputMismatchError",
    "assert_values_equal",
]
