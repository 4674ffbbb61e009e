"""Compatibility path: what this module held lives in :mod:`pyspark_streamtest.gates.cli`.

Import from :mod:`pyspark_streamtest` (the package face) in new code."""

from .gates.cli import (
    main as main,
)

__all__ = [
    "main",
]

if __name__ == "__main__":
    raise SystemExit(main())
