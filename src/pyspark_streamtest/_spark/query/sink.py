"""A sink the driver owns: Spark's ``ForeachBatchSink`` calling back into Python.

For every micro-batch (no-data batches included) Spark calls ``apply(dataset,
batch_id)`` on the stream thread; we collect the batch's rows once, which is the
batch's only Spark job (a ``foreachBatch`` function's frame is persisted for its call,
so the function reads those rows, not a second execution). The callback is also how
the driver learns that a trigger ran a batch, and which one.
"""

from __future__ import annotations

import re
import threading
import traceback
from collections.abc import Callable
from typing import Any
from weakref import WeakKeyDictionary

from pyspark.sql import DataFrame, Row

from ...errors import hide_our_frames
from ..jvm import JavaObject, Jvm
from .callbacks import mark_reported
from .memory_stream import wrap_dataframe

__tracebackhide__ = hide_our_frames


class InjectedCrashError(Exception):
    """The crash a test asked for (``crash_before_sink`` / ``crash_before_commit``)."""


class SinkBatchError(Exception):
    """What the JVM sees of an error raised in the sink: one line, and the driver keeps
    the error itself (``CollectingSink.error``) to report it in full."""


# Spark's StreamExecution.PROXY_ERROR: a Python callback's error whose text has a Java
# interruption under a Py4J call is a stop, not a failure (Java's "." matches no line
# terminator). Spark runs it on the error's whole text with a recursive matcher, so a
# long text (a failed job's stack trace inside the Python traceback) overflows the
# stream thread's stack: the query thread dies of StackOverflowError mid-way through
# its failure handling. We hand Spark one line instead, plus the matching part when
# there is one, so Spark decides as it would have.
_INTERRUPTION = re.compile(
    r"py4j\.protocol\.Py4JJavaError: An error occurred while calling"
    r"[^\n\r\u0085\u2028\u2029]+(\r\n|\r|\n): (java\.lang\.InterruptedException|"
    r"java\.io\.InterruptedIOException|java\.nio\.channels\.ClosedByInterruptException)")
_MESSAGE_CHARS = 300


def jvm_message(error: BaseException, batch_id: Any) -> str:
    """The short text the JVM gets for ``error`` (see ``_INTERRUPTION``)."""
    text = "".join(traceback.format_exception(error))
    lines = [line for line in "".join(
        traceback.format_exception_only(type(error), error)).splitlines() if line.strip()]
    head = lines[0] if lines else type(error).__name__
    if len(head) > _MESSAGE_CHARS:
        head = head[:_MESSAGE_CHARS] + "..."
    message = (f"batch {batch_id} failed in the pyspark-streamtest driver's sink (the driver "
               f"reports the whole error): {head}")
    found = _INTERRUPTION.search(text)
    return message if found is None else f"{message}\n{found.group(0)}"


class CollectingSink:
    """``scala.Function2[Dataset[Row], Long, Unit]`` that keeps each batch's rows."""

    def __init__(
        self, jvm: Jvm, then: Callable[[DataFrame, int], object] | None = None,
        crash: str | None = None, on_call: Callable[[], None] = lambda: None,
    ) -> None:
        """``then``, if given, is the user's ``foreachBatch`` function: called with the
        batch's DataFrame and id after the rows are collected, inside the batch.
        ``crash`` (``"before_sink"`` or ``"before_commit"``) fails the next batch with
        :class:`InjectedCrashError` before anything is written, or after everything is.
        ``on_call`` runs on the calling (callback) thread at each call."""
        self._jvm = jvm
        self._on_call = on_call
        self._then = then
        self.crash = crash
        self.crashed: list[Row] | None = None
        """The rows written by the batch that crashed before its commit."""
        self._lock = threading.Lock()
        self._batches: list[tuple[int, list[Row]]] = []
        self.error: BaseException | None = None
        """The error that failed a batch inside this callback (clearer than Py4J's wrap)."""

    def apply(self, jds: JavaObject, batch_id: Any) -> None:
        self._on_call()
        try:
            if self.crash == "before_sink":
                self.crash = None
                raise InjectedCrashError(
                    f"crash_before_sink: batch {batch_id} failed before writing its sink")
            frame = wrap_dataframe(self._jvm, jds, own_session=self._then is not None)
            if self._then is None:
                rows = frame.collect()
            else:
                rows = self._collect_then_call(frame, int(batch_id))
            if self.crash == "before_commit":
                self.crash, self.crashed = None, rows
                raise InjectedCrashError(
                    f"crash_before_commit: batch {batch_id} wrote its sink and failed before "
                    "its commit")
        except Exception as error:
            self.error = error
            mark_reported(error)  # the driver reports it (StreamingQueryFailedError)
            short = SinkBatchError(jvm_message(error, batch_id))
            mark_reported(short)
            raise short from None
        except BaseException as error:  # KeyboardInterrupt, SystemExit: as they are
            self.error = error
            mark_reported(error)
            raise
        with self._lock:
            self._batches.append((int(batch_id), rows))
        return None

    def _collect_then_call(self, frame: DataFrame, batch_id: int) -> list[Row]:
        """Collect the batch's rows and call the user's function with its DataFrame, with
        the batch's plan executed once: Spark's ``ForeachBatchSink`` hands the function a
        frame over the batch's RDD, and every action on it runs the plan again (the source
        counts its rows again in ``numInputRows``, ``uuid()`` or ``rand()`` draw again).
        Persisting the frame for the call, as Spark's guide advises for a function that
        uses its batch twice, makes the collect the one execution: the function reads
        the rows the driver records. The cache goes when the call returns or raises."""
        frame.persist()
        try:
            rows = frame.collect()
            assert self._then is not None
            self._then(frame, batch_id)
        finally:
            frame.unpersist()
        return rows

    class Java:
        implements = ["scala.Function2"]

    def take_batches(self) -> list[tuple[int, list[Row]]]:
        """The batches written since the last call, in order."""
        with self._lock:
            batches, self._batches = self._batches, []
        return batches

    def to_java(self, schema_json: str) -> JavaObject:
        """The JVM sink object wrapping this callback."""
        jvm = self._jvm
        jschema = jvm.jspark.parseDataType(schema_json)
        encoders, sink_class = _sink_makers(jvm)
        return sink_class(self, encoders.apply(jschema))


_MAKERS: WeakKeyDictionary[object, tuple[JavaObject, JavaObject]] = WeakKeyDictionary()


def _sink_makers(jvm: Jvm) -> tuple[JavaObject, JavaObject]:
    """Spark's ``ExpressionEncoder`` object and ``ForeachBatchSink`` class, looked up once
    per JVM: a lookup by dotted name costs a Py4J round trip per package (about 20 for
    the two), and every query start needs them."""
    found = _MAKERS.get(jvm.gateway)
    if found is None:
        encoders = jvm.scala_object("org.apache.spark.sql.catalyst.encoders.ExpressionEncoder")
        sinks = jvm.jvm.org.apache.spark.sql.execution.streaming.sources
        found = _MAKERS[jvm.gateway] = (encoders, sinks.ForeachBatchSink)
    return found
