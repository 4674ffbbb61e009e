"""The adapter: the only package that touches Py4J or Spark internals.

One small module per concern; per-version differences are detected once, by
reflection, in :mod:`._spark.versions`, and every branch on them lives there.
Nothing in this package knows about topics, pytest or reports.
"""

from ..errors import hide_our_frames

__tracebackhide__ = hide_our_frames
