"""Compatibility path: what this module held lives in :mod:`pyspark_streamtest.gates.cli`.

Import from :mod:`pyspark_streamtest` (the package face) in new code."""

from .errors import hide_our_frames
from .gates.cli import (
    main as main,
)

__tracebackhide__ = hide_our_frames

__all__ = [
    "main",
]

if __name__ == "__main__":
    raise SystemExit(main())
