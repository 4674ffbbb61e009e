"""Property testing for streaming pipelines.

* :mod:`pyspark_streamtest.testing.strategies`: hypothesis strategies for event streams
  (bounded disorder, late records, duplicates, tombstones, key skew), of fixed shape or
  of rows drawn from your own schema, and *schedules* that interleave piping into one
  input or several, micro-batch triggers, restarts and watermark advances, or that draw
  a join's second input from its first (``joined_schedules``); the runners that play
  them through a topology's driver or a production job's (``from_app``).
* :mod:`pyspark_streamtest.testing.model`: an executable, pure-Python statement of
  Spark's event-time semantics (watermarks, late drops, windows, output modes,
  deduplication, latest-value tables with tombstones, stream-stream joins) that
  predicts every batch.
* :mod:`pyspark_streamtest.testing.invariants`: assertions that compare a driver's
  batches with the model, or with your own expected rows, and check properties that
  must hold whatever the input.

Importing this package does not import hypothesis; ``strategies`` does.
"""

from ..errors import hide_our_frames

__tracebackhide__ = hide_our_frames

__all__ = ["invariants", "model", "strategies"]
