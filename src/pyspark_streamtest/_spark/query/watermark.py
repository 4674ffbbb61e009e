"""The watermark a query will use for its next batch, computed by Spark's own code.

Spark updates a query's watermark at the start of the *next* trigger
(``WatermarkTracker.updateWatermark(lastExecution.executedPlan)`` in
``MicroBatchExecution.constructNextBatch``). To state a batch's "watermark after"
as soon as the batch ends, we keep a second tracker per query, built the way the
query builds its own, and feed it each executed plan; it never touches the query.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any

from ...errors import hide_our_frames
from ..jvm import JavaObject, Jvm
from ..versions import capabilities

__tracebackhide__ = hide_our_frames

_POLICY_KEY = "spark.sql.streaming.multipleWatermarkPolicy"


def progress_watermark(progress: Mapping[str, Any]) -> datetime | None:
    """The watermark Spark reports a batch ran with (its progress event's)."""
    text = (progress.get("eventTime") or {}).get("watermark")
    return None if text is None else datetime.fromisoformat(text.replace("Z", "+00:00"))


class ShadowWatermark:
    def __init__(self, jvm: Jvm, stream_execution: JavaObject, start_ms: int) -> None:
        caps = capabilities(jvm)
        factory = jvm.scala_object(caps.watermark_tracker_class)
        conf = jvm.jspark.conf()
        # The tracker reads the multiple-watermark policy from the conf it is given. The
        # query took its policy from *its* settings (a driver's sql_conf is set only while
        # the query starts): copy the policy of the query's own tracker.
        policy = query_watermark_policy(stream_execution)
        previous = conf.getOption(_POLICY_KEY)
        if policy is not None:
            conf.set(_POLICY_KEY, policy)
        try:
            if caps.watermark_tracker_takes_plan:
                self._tracker = factory.apply(conf, stream_execution.logicalPlan())
            else:
                self._tracker = factory.apply(conf)
        finally:
            if previous.isDefined():
                conf.set(_POLICY_KEY, previous.get())
            else:
                conf.unset(_POLICY_KEY)
        if start_ms:
            self._tracker.setWatermark(int(start_ms))
        self._execution = stream_execution

    def after_batch(self) -> int:
        """Feed the last executed batch's plan; returns the next batch's watermark (ms)."""
        self._tracker.updateWatermark(self._execution.lastExecution().executedPlan())
        return int(self._tracker.currentWatermark())

    def force(self, ms: int) -> None:
        """Move the shadow forward to ``ms`` (after the query's own was forced there)."""
        self._tracker.setWatermark(int(ms))


def query_watermark_policy(stream_execution: JavaObject) -> str | None:
    """``"min"`` or ``"max"``: the multiple-watermark policy of the query's tracker (the
    ``policy`` field holds Spark's ``MinWatermark`` or ``MaxWatermark`` object, 3.5-4.3);
    None if the field is not there."""
    policy = _private_field(stream_execution.watermarkTracker(), None, "policy")
    if policy is None:
        return None
    return "max" if "Max" in str(policy.getClass().getSimpleName()) else "min"


def query_watermark_ms(stream_execution: JavaObject) -> int:
    """The watermark the query's own tracker holds (what its next batch will use, unless
    the last batch's data moves it)."""
    return int(stream_execution.watermarkTracker().currentWatermark())


def force_query_watermark(stream_execution: JavaObject, ms: int, next_batch_id: int) -> None:
    """Set the query's event-time watermark to ``ms`` between batches.

    ``WatermarkTracker.setWatermark`` is what Spark itself calls when it recovers the
    watermark from the offset log on restart; the tracker only moves forward from
    there. The next trigger plans its batch with this watermark (and runs a no-data
    batch if state is due for eviction).

    An idle trigger has already asked the query's WatermarkPropagator about batch
    ``next_batch_id`` with the old watermark, and the propagator caches one watermark
    per batch id (asserting it never changes). That cached guess is dropped here so the
    batch is planned afresh; entries of earlier batches, which late-row filtering
    reads, stay.
    """
    stream_execution.watermarkTracker().setWatermark(int(ms))
    propagator = _private_field(stream_execution, "MicroBatchExecution", "watermarkPropagator")
    if propagator is None:
        return
    cache = _private_field(propagator, None, "batchIdToWatermark")
    if cache is None:  # the no-op propagator (no stateful operators) caches nothing
        return
    keys = cache.keySet().iterator()
    while keys.hasNext():
        if int(keys.next()) >= next_batch_id:
            keys.remove()


def _private_field(obj: JavaObject, declaring_class: str | None, name: str) -> JavaObject:
    """The value of field ``name`` declared by ``obj``'s class (or the superclass whose
    simple name is ``declaring_class``), or None if there is no such field."""
    jclass = obj.getClass()
    while declaring_class is not None and jclass is not None and (
        jclass.getSimpleName() != declaring_class
    ):
        jclass = jclass.getSuperclass()
    if jclass is None:
        return None
    if not any(f.getName() == name for f in jclass.getDeclaredFields()):
        return None
    field = jclass.getDeclaredField(name)
    field.setAccessible(True)
    return field.get(obj)
