"""The watermark a query will use for its next batch, computed by Spark's own code.

Spark updates a query's watermark at the start of the *next* trigger
(``WatermarkTracker.updateWatermark(lastExecution.executedPlan)`` in
``MicroBatchExecution.constructNextBatch``). To state a batch's "watermark after"
as soon as the batch ends, we keep a second tracker per query, built the way the
query builds its own, and feed it each executed plan; it never touches the query.
"""

from __future__ import annotations

from .jvm import JavaObject, Jvm
from .versions import capabilities


class ShadowWatermark:
    def __init__(self, jvm: Jvm, stream_execution: JavaObject, start_ms: int) -> None:
        caps = capabilities(jvm)
        factory = jvm.scala_object(caps.watermark_tracker_class)
        conf = jvm.jspark.conf()
        if caps.watermark_tracker_takes_plan:
            self._tracker = factory.apply(conf, stream_execution.logicalPlan())
        else:
            self._tracker = factory.apply(conf)
        if start_ms:
            self._tracker.setWatermark(int(start_ms))
        self._execution = stream_execution

    def after_batch(self) -> int:
        """Feed the last executed batch's plan; returns the next batch's watermark (ms)."""
        self._tracker.updateWatermark(self._execution.lastExecution().executedPlan())
        return int(self._tracker.currentWatermark())
