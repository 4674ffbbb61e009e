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

from ..core.records import BatchRecord
from ..errors import StreamTestError, hide_our_frames
from ._runner import QueryRunner

__tracebackhide__ = hide_our_frames

__all__ = ["MAX_BACKFILL_TRIGGERS", "run_backfill"]

MAX_BACKFILL_TRIGGERS = 10_000
"""How many triggers one run of an ``availableNow`` query may take before the driver
gives up on its end."""


def run_backfill(runner: QueryRunner, first: list[BatchRecord],
                 record: Callable[[list[BatchRecord]], None]) -> None:
    """After ``runner.start()`` of a backfill query (``first``: what its first trigger
    ran): the rest of its triggers, each one's batches given to ``record``, then its
    end. A first trigger that constructed no batch ends it at once, as in Spark."""
    if runner.built.spec.trigger == "availableNow" and first:
        for _ in range(MAX_BACKFILL_TRIGGERS):
            ran = runner.finish_trigger(runner.clock_release())
            record(ran)
            if not ran:
                break
        else:
            raise StreamTestError(
                f"the availableNow query of output {runner.name!r} ran "
                f"{MAX_BACKFILL_TRIGGERS} batches in one run and Spark still constructed "
                "more: a processing-time timeout or timer asks for a no-data batch at every "
                "trigger, so Spark would not end it either")
    runner.backfill_ended()
