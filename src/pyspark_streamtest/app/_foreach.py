"""``writeStream.foreach(writer)`` under ``from_app``: the writer runs where Spark runs
it, in the executors' Python workers, once per partition of every batch."""

from __future__ import annotations

from functools import partial
from typing import Any

from pyspark.sql import DataFrame

from ..errors import UnsupportedAppCallError, hide_our_frames

__tracebackhide__ = hide_our_frames


def check_writer(writer: Any) -> None:
    """PySpark's rule: a function of one row, or an object with ``process(row)`` and
    optionally ``open(partition_id, epoch_id)`` and ``close(error)``."""
    if not callable(writer) and not callable(getattr(writer, "process", None)):
        raise UnsupportedAppCallError(
            f"writeStream.foreach({type(writer).__name__}): the writer must be a function "
            "of a row, or have a process(row) method (Spark's rule too)"
        )


class ForeachWriterBatches:
    """The batch function that runs ``writer`` over each batch's partitions."""

    def __init__(self, writer: Any) -> None:
        check_writer(writer)
        self.writer = writer
        name = getattr(writer, "__name__", None) or type(writer).__name__
        self.__name__ = "foreach" if name.startswith("<") else name

    def __call__(self, batch: DataFrame, batch_id: int) -> None:
        batch.foreachPartition(partial(write_partition, self.writer, batch_id))


def write_partition(writer: Any, epoch_id: int, rows: Any) -> None:
    """One partition of one batch, in a Python worker: ``open``, then ``process`` for
    each row if ``open`` returned true (or is absent), then ``close`` with the error
    that ended it (None), which is raised again, failing the batch, as in Spark."""
    from pyspark import TaskContext

    process = getattr(writer, "process", None)
    if process is None:  # a function of one row
        for row in rows:
            writer(row)
        return
    context = TaskContext.get()
    partition_id = context.partitionId() if context is not None else 0
    opener = getattr(writer, "open", None)
    closer = getattr(writer, "close", None)
    opened = True if opener is None else bool(opener(partition_id, epoch_id))
    error: BaseException | None = None
    try:
        if opened:
            for row in rows:
                process(row)
    except BaseException as failure:
        error = failure
        raise
    finally:
        if closer is not None:
            closer(error)
