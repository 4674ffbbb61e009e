"""One streaming query run by Spark alone: Spark's JVM ``ManualClock`` as the trigger
clock and Spark's ``MemorySink``, so no Python runs during a trigger.

The differential oracle runs one beside each of the driver's queries, over its own
memory streams fed the same offsets, and moves its clock to the time of each trigger
the driver ran a batch in. The query's trigger interval is 1 ms: a trigger the driver
runs at the processing time of the one before (the no-data batch after a moved
watermark) runs here 1 ms later, Spark's next trigger time, and every other trigger at
exactly the driver's time.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from datetime import datetime, timezone
from typing import Any

from pyspark.sql import DataFrame, Row, SparkSession

from ..errors import hide_our_frames
from .jvm import JavaObject, Jvm, java_error_text
from .query.memory_stream import wrap_dataframe
from .query.start import failure_text, last_progress, start_query, stream_execution
from .query.watermark import force_query_watermark, query_watermark_ms

__tracebackhide__ = hide_our_frames

INTERVAL_MS = 1
"""The trigger interval: Spark's next trigger after one at ``t`` is at ``t + 1``."""


def progress_time(ms: int) -> str:
    """A progress event's ``timestamp`` for a trigger that started at ``ms``."""
    moment = datetime.fromtimestamp(ms // 1000, timezone.utc)
    return f"{moment:%Y-%m-%dT%H:%M:%S}.{ms % 1000:03d}Z"


class AloneQueryError(Exception):
    """The query run by Spark alone failed (its text is Spark's)."""


class AloneQuery:
    """``df`` started through ``startQuery`` with a JVM ``ManualClock`` at ``start_ms``
    and a ``MemorySink``; Spark runs its first trigger at once."""

    def __init__(self, jvm: Jvm, df: DataFrame, *, name: str, checkpoint: str,
                 output_mode: str, start_ms: int, timeout_s: float) -> None:
        self._jvm = jvm
        self._timeout_s = timeout_s
        self._schema = df.schema
        self.clock: JavaObject = jvm.jvm.org.apache.spark.util.ManualClock(int(start_ms))
        self.now_ms = int(start_ms)
        self._sink: JavaObject = (
            jvm.jvm.org.apache.spark.sql.execution.streaming.sources.MemorySink())
        self.query: JavaObject = start_query(
            jvm, df, name=name, checkpoint=checkpoint, output_mode=output_mode,
            trigger_interval_ms=INTERVAL_MS, clock=self.clock, sink=self._sink)

    # --- triggers -----------------------------------------------------------------------
    def last_batch_id(self) -> int | None:
        """The id of the last batch the sink got (no-data batches included): Spark calls
        the sink once in every batch, and never in a trigger that runs none."""
        latest = self._sink.latestBatchId()
        return int(latest.get()) if latest.isDefined() else None

    def await_first_trigger(self) -> dict[str, Any] | None:
        """Wait for the trigger Spark runs on start; its batch's progress, or None if it
        ran no batch."""
        def over() -> bool:
            status = self.query.status()
            return (str(status.message()).startswith("Waiting")
                    and not status.isTriggerActive())

        self._wait(over, "end of its first trigger")
        return None if self.last_batch_id() is None else last_progress(self.query)

    def run_trigger_at(self, ms: int, batch_id: int) -> dict[str, Any]:
        """Move the clock to ``ms`` (at least the next trigger time) and wait for batch
        ``batch_id``, which that trigger should run; its progress."""
        self.now_ms = max(int(ms), self.now_ms + INTERVAL_MS)
        wanted = progress_time(self.now_ms)
        self.clock.setTime(self.now_ms)

        def done() -> bool:
            if self.last_batch_id() != batch_id:
                return False
            progress = self.query.lastProgress()
            return (progress is not None and progress.timestamp() == wanted
                    and not self.query.status().isTriggerActive())

        self._wait(done, f"batch {batch_id} at {wanted}")
        progress = last_progress(self.query)
        assert progress is not None
        return progress

    def _wait(self, condition: Callable[[], bool], what: str) -> None:
        deadline = time.monotonic() + self._timeout_s
        pause = threading.Event()
        while not condition():
            error = failure_text(self.query)
            if error is not None:
                raise AloneQueryError(error)
            if time.monotonic() > deadline:
                raise TimeoutError(f"Spark alone reached no {what} within "
                                   f"{self._timeout_s:.0f} s (its last batch: "
                                   f"{self.last_batch_id()})")
            pause.wait(0.001)  # bounded polling: a JVM clock has no callback to wait on

    # --- what it shows --------------------------------------------------------------------
    def batch_rows(self) -> list[Row]:
        """The rows the sink got in the last batch."""
        jvm = self._jvm
        data = self._sink.latestBatchData()
        if data.isEmpty():  # most no-data batches: no Spark job to convert nothing
            return []
        jlist = jvm.jvm.scala.collection.JavaConverters.seqAsJavaList(data)
        jschema = jvm.jspark.parseDataType(self._schema.json())
        return wrap_dataframe(jvm, jvm.jspark.createDataFrame(jlist, jschema)).collect()

    def watermark_ms(self) -> int:
        return query_watermark_ms(stream_execution(self.query))

    def force_watermark(self, ms: int, next_batch_id: int) -> None:
        force_query_watermark(stream_execution(self.query), ms, next_batch_id)

    def stop(self) -> None:
        try:
            self.query.stop()
        except Exception as error:
            raise AloneQueryError(java_error_text(error)) from None


def is_deterministic(df: DataFrame) -> bool:
    """No expression of ``df``'s plan is non-deterministic (``uuid()``, ``rand()``
    without a seed, a non-deterministic UDF): two runs of it give the same rows."""
    try:
        return bool(df._jdf.queryExecution().analyzed().deterministic())
    except Exception:  # a line without QueryPlan.deterministic: compare everything
        return True


_CLOCK_READERS = ("current_timestamp(", "now(", "current_date(", "localtimestamp(",
                  "current_time(", "FlatMapGroupsWithState", "FlatMapGroupsInPandasWithState",
                  "TransformWithState")


def reads_processing_time(df: DataFrame) -> bool:
    """``df``'s plan reads the batch's processing time: ``current_timestamp()`` and its
    kin, or a stateful operator with timeouts or timers (``flatMapGroupsWithState``,
    ``applyInPandasWithState``, ``transformWithState``: each may read it)."""
    plan = str(df._jdf.queryExecution().analyzed().treeString())
    return any(token.lower() in plan.lower() for token in _CLOCK_READERS)


def state_rows(spark: SparkSession, checkpoint: str, operator_id: int) -> list[Row] | str:
    """The state store rows of operator ``operator_id`` at the checkpoint's last batch
    (``format("statestore")``, PySpark 4.0+), or why they cannot be read."""
    try:
        return (spark.read.format("statestore").option("path", checkpoint)
                .option("operatorId", operator_id).load().collect())
    except Exception as error:
        text = java_error_text(error) if hasattr(error, "java_exception") else str(error)
        return text.strip().splitlines()[0] if text.strip() else type(error).__name__
