"""Queries that read the backlog they find when they start, then end:
``trigger(availableNow=True)`` and ``trigger(once=True)``, run as Spark runs them.

The driver's query runs on its processing-time trigger and manual clock; what Spark's
``MultiBatchExecutor`` (``availableNow``) does is played by releasing one trigger after
another at the same processing time: each constructs the next batch (the read limits
admitting part of the backlog fixed at the start, then the no-data batches the
watermark asks for) until one constructs none, when Spark sets the query TERMINATED.
``once`` (``SingleBatchExecutor``) runs its first trigger alone, reading everything
available (``ReadAllAvailable``, whatever the read limits).
"""

from __future__ import annotations

from collections.abc import Callable

from ...core.records import BatchRecord
from ...errors import BackfillNeverEndsError, hide_our_frames
from ._runner import QueryRunner

__tracebackhide__ = hide_our_frames

__all__ = ["MAX_BACKFILL_TRIGGERS", "run_backfill"]

MAX_BACKFILL_TRIGGERS = 100_000
"""How many triggers one run of an ``availableNow`` query may take (a bound on the
wait: a backlog of more batches than this is not a test's)."""
_NEVER_ENDS_AFTER = 3
"""No-data batches in a row that move no watermark: Spark asks for them forever."""


def run_backfill(runner: QueryRunner, first: list[BatchRecord],
                 record: Callable[[list[BatchRecord]], None]) -> None:
    """After ``runner.start()`` of a backfill query (``first``: what its first trigger
    ran): the rest of its triggers, each one's batches given to ``record``, then its
    end. A first trigger that constructed no batch ends it at once, as in Spark."""
    if runner.built.spec.trigger == "availableNow" and first:
        last = first[-1]
        idle_no_data = 0
        for _ in range(MAX_BACKFILL_TRIGGERS):
            ran = runner.finish_trigger(runner.clock_release())
            record(ran)
            if not ran:
                break
            batch = ran[-1]
            # A no-data batch that moved no watermark was asked for by a processing-time
            # timeout or timer, which asks again at every trigger: Spark never ends it.
            idle_no_data = idle_no_data + 1 if (
                not batch.is_data_batch and batch.watermark == last.watermark) else 0
            last = batch
            if idle_no_data >= _NEVER_ENDS_AFTER:
                break
        if idle_no_data:  # stopped early, or the bound ran out
            runner.stop()
            raise BackfillNeverEndsError(
                f"the availableNow query of output {runner.name!r} would never end: after "
                f"its backlog Spark ran {idle_no_data} no-data batches in a row without "
                "moving the watermark, and asks for one at every trigger (a processing-time "
                "timeout or timer does), so Spark's Trigger.AvailableNow runs them forever "
                "in production too. The queries are stopped. Use an event-time timeout or "
                "a processingTime trigger for this query, or set "
                "spark.sql.streaming.noDataMicroBatches.enabled=false (sql_conf=)")
    runner.backfill_ended()
