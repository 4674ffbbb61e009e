"""Property testing for streaming pipelines.

* :mod:`pyspark_streamtest.testing.strategies`: hypothesis strategies for event streams
  (bounded disorder, late records, duplicates, tombstones, key skew) and *schedules*
  that interleave piping, micro-batch triggers, restarts and watermark advances.
* :mod:`pyspark_streamtest.testing.model`: an executable, pure-Python statement of
  Spark's event-time semantics (watermarks, late drops, windows, output modes,
  deduplication, latest-value tables with tombstones) that predicts every batch.
* :mod:`pyspark_streamtest.testing.invariants`: assertions that compare a driver's
  batches with the model and check properties that must hold whatever the input.

Importing this package does not import hypothesis; ``strategies`` does.
"""

from ..errors import hide_our_frames

__tracebackhide__ = hide_our_frames

__all__ = ["invariants", "model", "strategies"]
