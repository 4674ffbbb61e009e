"""What a ``foreachBatch`` function writes with ``DataFrame.write`` inside a batch, and
what a ``from_app`` job's ``main()`` writes the same way before its queries run.

While the function (or ``main()``) runs, ``batch_df.write`` (and ``df.write`` of any
DataFrame of that class) is a writer that records every write it makes:

* ``format("kafka")`` (with ``save()``) becomes records of the topic, with the columns
  and rules of Spark's Kafka sink (``value``, optional ``key``, ``topic``, ``partition``
  and ``headers``; the ``topic`` option overrides the column), read with the driver's
  ``create_output_topic(topic)``. Nothing is sent anywhere: there is no broker.
* every other write (files, tables, JDBC...) runs for real, through PySpark's writer.

Each write is counted, so a test can fail the batch right after its N-th write
(``crash_after_write``) and see what the first attempt left written before Spark's
recovery runs the batch again. A client of the job's own (sqlite3, an HTTP call) is
not a ``DataFrame.write``: the driver cannot see it or crash after it.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator, Mapping
from contextlib import ExitStack, contextmanager
from typing import Any

from pyspark.sql import DataFrame

from ..._spark.query.sink import InjectedCrashError
from ...core.attributes import replaced_attribute
from ...errors import TopologyError, hide_our_frames
from ...kafka.broker import KeptRecord
from ...kafka.shapes import kafka_sink_frame
from ._batch_reads import ChainedOptions, KafkaTopics, kafka_batch_reads

__tracebackhide__ = hide_our_frames

__all__ = ["BatchWrites"]

_SAVES = ("save", "saveAsTable", "insertInto", "json", "parquet", "csv", "orc", "text", "jdbc",
          "xml")


class _Seen(threading.local):
    """The writes of the function running on this thread (each batch function runs on
    a callback thread of its own, several queries' at once), or None."""

    writes: tuple[BatchWrites, int] | None = None


_SEEN = _Seen()
_LOCK = threading.Lock()
_INSTALLED: dict[type, tuple[int, ExitStack]] = {}
"""DataFrame class -> (how many functions run with its ``write`` (and its sessions'
``read``) replaced, what puts them back)."""


@contextmanager
def _write_seen(frame_class: type, session_class: type, writes: BatchWrites,
                batch_id: int) -> Iterator[None]:
    """``frame_class.write`` is the recording writer, and ``session_class.read`` reads
    ``format("kafka")`` from the driver's topics, on this thread while open (PySpark's
    own on every other thread); both are put back when the last such call ends."""
    with _LOCK:
        count, restore = _INSTALLED.get(frame_class, (0, ExitStack()))
        if count == 0:
            real = frame_class.write  # type: ignore[attr-defined]  # the property

            def write(df: DataFrame) -> Any:
                writer = real.__get__(df)
                seen = _SEEN.writes
                return writer if seen is None else _BatchWriter(seen[0], df, writer, seen[1])

            restore = ExitStack()
            restore.enter_context(replaced_attribute(frame_class, "write", property(write)))
            restore.enter_context(kafka_batch_reads(session_class, _seen_topics))
        _INSTALLED[frame_class] = (count + 1, restore)
    before, _SEEN.writes = _SEEN.writes, (writes, batch_id)
    try:
        yield
    finally:
        _SEEN.writes = before
        with _LOCK:
            count, restore = _INSTALLED.pop(frame_class)
            if count > 1:
                _INSTALLED[frame_class] = (count - 1, restore)
            else:
                restore.close()


def _seen_topics() -> Mapping[str, list[KeptRecord]]:
    """The topics of the driver whose batch function runs on this thread."""
    seen = _SEEN.writes
    return {} if seen is None else seen[0].topics()


class BatchWrites:
    """The writes one output's ``foreachBatch`` function makes, batch by batch.

    :meth:`call` runs the function with ``write`` intercepted; the Kafka rows it wrote
    wait in :attr:`kafka_rows` until the driver records the batch (:meth:`take`)."""

    def __init__(self, output: str, where: str | None = None) -> None:
        self.output = output
        self.where = where or f"output {output!r}'s batch"
        """What writes, as an error names it."""
        self.kafka_rows: list[dict[str, Any]] = []
        """The Kafka sink's rows (``key``, ``value``, ``topic``, ``partition``,
        ``headers``) written by the batch running or just run."""
        self.count = 0
        """How many writes the batch running (or just run) made."""
        self.crash_after: int | None = None
        """Fail the next batch right after its write number ``crash_after``."""
        self.topics: KafkaTopics = dict
        """The driver's input topics, for ``spark.read.format("kafka")`` in the function
        (the runner gives its broker's)."""

    def wrap(self, function: Callable[[DataFrame, int], object]
             ) -> Callable[[DataFrame, int], object]:
        """``function`` with its batch writes seen."""

        def call(frame: DataFrame, batch_id: int) -> object:
            return self.call(function, frame, batch_id)

        call.__name__ = getattr(function, "__name__", "foreachBatch")
        call.__qualname__ = getattr(function, "__qualname__", call.__name__)
        call.__wrapped__ = function  # type: ignore[attr-defined]
        return call

    def call(self, function: Callable[[DataFrame, int], object], frame: DataFrame,
             batch_id: int) -> object:
        self.count = 0
        self.kafka_rows = []
        with _write_seen(type(frame), type(frame.sparkSession), self, batch_id):
            return function(frame, batch_id)

    @contextmanager
    def seen_in(self, spark: Any) -> Iterator[None]:
        """While open, the writes of DataFrames of ``spark``'s class on this thread are
        recorded here (a ``from_app`` job's ``main()``: its writes before any batch)."""
        with _write_seen(type(spark.range(0)), type(spark), self, -1):
            yield

    def take(self) -> list[dict[str, Any]]:
        """The Kafka rows the last batch wrote, once."""
        rows, self.kafka_rows = self.kafka_rows, []
        return rows

    def written(self, batch_id: int) -> None:
        """One write of batch ``batch_id`` is done; fail the batch if it is the one the
        test asked for."""
        self.count += 1
        if self.crash_after is not None and self.count >= self.crash_after:
            self.crash_after = None
            raise InjectedCrashError(
                f"crash_after_write: batch {batch_id} of output {self.output!r} failed after "
                f"its write {self.count}")


class _BatchWriter(ChainedOptions):
    """``DataFrameWriter`` with each write recorded (Kafka) or counted (the rest)."""

    def __init__(self, writes: BatchWrites, df: DataFrame, real: Any, batch_id: int) -> None:
        super().__init__(real)
        self._writes = writes
        self._df = df
        self._batch_id = batch_id
        self._mode: str | None = None

    def mode(self, saveMode: str | None) -> _BatchWriter:  # noqa: N803 (PySpark's)
        self._mode = saveMode
        self._real = self._real.mode(saveMode)
        return self

    def save(self, path: str | None = None, format: str | None = None,
             mode: str | None = None, partitionBy: Any = None,  # noqa: N803 (PySpark's)
             **options: Any) -> None:
        if format is not None:
            self.format(format)
        if mode is not None:
            self.mode(mode)
        self.options(**options)
        if (self._format or "").lower() == "kafka":
            self._kafka()
        else:
            self._real.save(path, format, mode, partitionBy)
        self._writes.written(self._batch_id)

    def _kafka(self) -> None:
        """The batch written as Spark's Kafka sink writes a DataFrame."""
        mode = (self._mode or "errorifexists").lower()
        if mode in ("overwrite", "ignore"):
            raise TopologyError(
                f"a write to Kafka in {self._writes.where} uses save mode {self._mode!r}: "
                "Spark's Kafka sink refuses it (\"Save mode ... not allowed for Kafka. "
                "Allowed save modes are Append and ErrorIfExists (default)\"); use "
                "mode('append') or leave the mode out")
        topic = self._options.get("topic")
        if topic is None and "topic" not in self._df.columns:
            raise TopologyError(
                f"a write to Kafka in {self._writes.where} names no topic: "
                "Spark's Kafka sink needs the 'topic' option or a 'topic' column")
        shaped, _ = kafka_sink_frame(topic or "kafka", self._df, topic, 1)
        self._writes.kafka_rows.extend(row.asDict(recursive=True) for row in shaped.collect())

    def __getattr__(self, name: str) -> Any:
        attribute = getattr(self._real, name)
        if name in _SAVES:
            def counted(*args: Any, **kwargs: Any) -> Any:
                result = attribute(*args, **kwargs)
                self._writes.written(self._batch_id)
                return result
            return counted
        if callable(attribute):
            def chained(*args: Any, **kwargs: Any) -> Any:
                result = attribute(*args, **kwargs)
                if result is self._real or type(result) is type(self._real):
                    self._real = result
                    return self
                return result
            return chained
        return attribute
