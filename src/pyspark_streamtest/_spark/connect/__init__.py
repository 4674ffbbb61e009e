"""Spark Connect: a Connect session's server JVM, the classic twin of each batch's
DataFrame, and ``pyspark.sql.functions`` as they act on classic Columns in a Connect-mode
process. Uses :mod:`..query` (memory streams) and the base (:mod:`..jvm`)."""

from ...errors import hide_our_frames

__tracebackhide__ = hide_our_frames
