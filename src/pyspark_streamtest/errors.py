"""Typed errors. Each message names the problem and the fix.

User errors subclass ``ValueError`` or ``TypeError`` (and :class:`StreamTestError`),
so ``pytest.raises(ValueError)`` works as well as the precise type. After a user
error the driver is unchanged and still usable. After :class:`StreamingQueryFailedError`
the driver's queries are stopped with their checkpoints (``restart()`` retries the
failed batch, as Spark's recovery does). After :class:`StepTimeoutError`,
:class:`SparkDiedError` or an interrupt (:class:`DriverInterruptedError` on every later
call) the driver has closed itself (queries stopped, checkpoints deleted).
"""

from __future__ import annotations

from typing import Any

__all__ = [
    "BackfillNeverEndsError",
    "BatchFailedError",
    "CallbackChannelError",
    "CheckpointMissingError",
    "ClusterError",
    "ClusterRunningError",
    "DeserializationError",
    "DriverClosedError",
    "DriverInterruptedError",
    "DriverLeftOpenError",
    "DriverStoppedError",
    "IncompatibleCheckpointError",
    "InvalidArgumentError",
    "InvalidArgumentTypeError",
    "InvalidDurationError",
    "LostRowsError",
    "NaiveDatetimeError",
    "NoSuchRecordError",
    "NotASparkSessionError",
    "OracleMismatchError",
    "PipelineDefinitionError",
    "PipelineError",
    "PipelineHazardError",
    "PipelineUpdateError",
    "SchemaMismatchError",
    "SparkConnectNotSupportedError",
    "SparkDiedError",
    "SparkInfrastructureError",
    "StaleTopicError",
    "StateStoreError",
    "StepTimeoutError",
    "StreamTestError",
    "StreamingQueryFailedError",
    "TimeOutOfRangeError",
    "TimeWentBackwardsError",
    "TopologyError",
    "UninitializedTopicError",
    "UnknownDatasetError",
    "UnknownTopicError",
    "UnsupportedAppCallError",
    "UnsupportedSchemaError",
    "UnsupportedSparkVersionError",
    "WarmJvmError",
]


class StreamTestError(Exception):
    """Base class of every error raised by pyspark-streamtest."""


def hide_our_frames(excinfo: Any) -> bool:
    """pytest's ``__tracebackhide__`` for every module of the package.

    pytest asks it about each frame of the package in a failing test's traceback. A
    failure the package reports (a :class:`StreamTestError` or an ``AssertionError``,
    whose message says what went wrong, with the batch and records involved) shows the
    user's frames only; any other exception (a bug of ours or of a library under us)
    shows every frame. ``pytest --fulltrace`` shows every frame always.
    """
    if excinfo is None:
        return False
    return bool(excinfo.errisinstance((StreamTestError, AssertionError)))


__tracebackhide__ = hide_our_frames


class InvalidArgumentError(StreamTestError, ValueError):
    """An argument with a value the call cannot use (the message names the argument and
    what it accepts)."""


class InvalidArgumentTypeError(StreamTestError, TypeError):
    """An argument of a type the call cannot use (the message names the argument and the
    types it accepts)."""


class TopologyError(StreamTestError, ValueError):
    """The topology function declared something the driver cannot run."""


class UnsupportedAppCallError(TopologyError):
    """A job run by ``from_app`` made a streaming call the driver cannot run (a source,
    sink, trigger or option); the message names the call and what is supported."""


class ClusterError(StreamTestError, RuntimeError):
    """The standalone cluster command could not start, find or stop a cluster (no Java,
    a busy port, a worker that did not register in time); the message names the fix."""


class ClusterRunningError(ClusterError):
    """``cluster start`` while a cluster it started is still running."""


class UnknownTopicError(StreamTestError, ValueError):
    """A topic (input or output) name the topology does not declare."""


class SchemaMismatchError(StreamTestError, TypeError):
    """A piped value does not fit the input's schema (the message names the field)."""


class UnsupportedSchemaError(StreamTestError, TypeError):
    """An input schema uses a type the driver cannot pipe (the message says which)."""


class NaiveDatetimeError(StreamTestError, ValueError):
    """A datetime without a time zone where an instant is needed."""


class TimeWentBackwardsError(StreamTestError, ValueError):
    """Processing time or record time asked to move backwards."""


class InvalidDurationError(StreamTestError, ValueError):
    """A duration the driver cannot use: not a whole number of milliseconds (Spark's
    clock unit), or zero where it must be positive."""


class TimeOutOfRangeError(StreamTestError, ValueError):
    """A time the driver cannot represent (past 9999-12-31, Spark's and Python's last
    day); nothing was changed."""


class DriverClosedError(StreamTestError, RuntimeError):
    """The driver (or a topic handle of it) is used after ``close()``."""


class DriverInterruptedError(DriverClosedError):
    """The driver was interrupted (``KeyboardInterrupt``, ``SystemExit``) in the middle of
    a step and closed itself: a half-run batch cannot be trusted. Create a new driver."""


class DriverLeftOpenError(StreamTestError, RuntimeError):
    """A test ended with a driver it made still open (raised by the pytest plugin at
    teardown, after it closed the driver)."""


class StaleTopicError(StreamTestError, RuntimeError):
    """A topic handle made before ``driver.reset()`` was used: make it again."""


class DriverStoppedError(StreamTestError, RuntimeError):
    """A verb that needs running queries (``process_all_available``,
    ``advance_watermark_to``) was called after ``driver.stop()``; ``driver.start()``
    resumes them."""


class BackfillNeverEndsError(StreamTestError, RuntimeError):
    """A query with ``trigger(availableNow=True)`` would never end: Spark asks for a
    no-data batch at every trigger (a processing-time timeout or timer), so its
    ``Trigger.AvailableNow`` runs them forever in production too. The queries are
    stopped with their checkpoints."""


class DeserializationError(StreamTestError, ValueError):
    """An output topic handle's deserializer failed on a record (the message names its
    partition and offset); the record stays unread."""


class NoSuchRecordError(StreamTestError, LookupError):
    """A read from an output topic that holds no unread record."""


class UninitializedTopicError(NoSuchRecordError):
    """A read from a topic nothing was ever written to (a typo, or a routing bug)."""


class CheckpointMissingError(StreamTestError, RuntimeError):
    """A query's checkpoint is gone (deleted by something else) when the driver would
    start it from there: Spark would silently start over, losing state and repeating
    batch ids. Nothing was stopped or started."""


class StateStoreError(StreamTestError, LookupError):
    """A state store that cannot be read as asked: a stateless query, an unknown
    operator, a batch that has not run, or a store of another shape."""


class NotASparkSessionError(StreamTestError, TypeError):
    """``spark=`` was given something that is not a SparkSession."""


class OracleMismatchError(StreamTestError, AssertionError):
    """With the differential oracle on (``--streamtest-oracle``), a batch the driver ran
    differs from the same batch run by Spark alone: the message names the output, the
    batch and the first field that differs, with both values."""


class SparkDiedError(StreamTestError, RuntimeError):
    """The Spark JVM is gone (killed, crashed, out of memory). The driver closed itself;
    nothing that needs Spark can run in this process any more. Under pytest, the
    plugin fails each later test that uses Spark, naming the test the JVM died in."""


class WarmJvmError(StreamTestError, RuntimeError):
    """A warm JVM (one that outlives a pytest run, for the next runs) cannot be used as
    set up: e.g. its folder belongs to another user. The message names the fix; turning
    warm JVMs off (``--streamtest-warm-jvm=off``) always works."""


class SparkConnectNotSupportedError(StreamTestError, TypeError):
    """A Spark Connect session was given; the driver needs a classic session."""


class UnsupportedSparkVersionError(StreamTestError, RuntimeError):
    """This PySpark/Spark version lacks what the driver (or a feature) needs."""


class BatchFailedError(StreamTestError, RuntimeError):
    """A batch did not complete. The driver's queries are stopped with their checkpoints,
    and :meth:`~pyspark_streamtest.TopologyTestDriver.restart` retries the batch (same
    batch id, same records), as Spark's recovery does. Two kinds:
    :class:`StreamingQueryFailedError` (the query failed: the user's code or the batch's
    data) and :class:`SparkInfrastructureError` (Spark's machinery failed, not the
    batch)."""


class StreamingQueryFailedError(BatchFailedError):
    """A query failed while running a batch. The driver's queries are now stopped, with
    their checkpoints: :meth:`~pyspark_streamtest.TopologyTestDriver.restart` retries the
    failed batch (same batch id, same records) as Spark's recovery does, failing again
    while the cause remains; :meth:`~pyspark_streamtest.TopologyTestDriver.close` ends it.

    Attributes: ``output`` (the output whose query failed), ``batch_id`` (the batch that
    failed), ``cause`` (Spark's error text, including the Python traceback of a failing
    UDF) and ``records`` (the input records the failed batch read, as
    :class:`~pyspark_streamtest.TestRecord` values). The message names the records'
    topics, and for Kafka inputs their partitions and offset ranges, so a poison pill
    can be found. ``culprit`` is the record that raised the error: when a batch of several
    records fails with a Python UDF's exception (or a Spark error class such as
    ``[CAST_OVERFLOW]``), the driver replays the records through the query's row-wise
    plan (sources to the first stateful operator) as batch jobs, halving them until one
    record alone raises the same error (about 2 log2 n small jobs); None when there is
    one record, or the error does not come from one record there (a stateful
    processor, a ``foreachBatch`` function, a sink). Each input of a stream-stream join
    is replayed on its own, so a record of either input can be named. ``culprit_note``
    says why no record is named when the search ran and found none, or could not run.
    """

    def __init__(
        self, output: str, batch_id: int, cause: str, records: tuple[Any, ...] = (),
        *, culprit: Any = None, culprit_note: str | None = None,
    ) -> None:
        self.output = output
        self.batch_id = batch_id
        self.cause = cause
        self.records = records
        self.culprit = culprit
        self.culprit_note = culprit_note
        read = _describe_records(records)
        why = f"no record named as the one that raised it: {culprit_note}\n" if culprit_note else ""
        shown = (why + _shown_records(records) if culprit is None else
                 f"the record that raised it (the batch's records replayed one half at a "
                 f"time):\n{_shown_records((culprit,))}")
        super().__init__(
            f"the query of output {output!r} failed in batch {batch_id}{read}\n{shown}"
            f"the driver's queries are stopped: restart() retries batch {batch_id} from the "
            f"checkpoint, as Spark does.\nSpark's error:\n{cause}"
        )

    def __reduce__(self) -> tuple[Any, ...]:
        # Made from its fields, not its message: pickled (pytest-xdist, multiprocessing)
        # it is rebuilt from them, with any attribute set later.
        return (_rebuilt, (type(self), (self.output, self.batch_id, self.cause, self.records),
                           self._keywords()), self.__dict__)

    def _keywords(self) -> dict[str, Any]:
        found = {"culprit": self.culprit, "culprit_note": self.culprit_note}
        return {key: value for key, value in found.items() if value is not None}


class SparkInfrastructureError(BatchFailedError):
    """A batch could not run because of Spark's machinery, not the batch's data: Spark
    could not start or reach a Python worker in time (it waits a fixed 10 s for a new
    worker to connect back), which happens on a heavily loaded machine. Not a
    :class:`StreamingQueryFailedError`, so ``pytest.raises(StreamingQueryFailedError)``
    never passes on it. The driver's queries are stopped with their checkpoints, as
    after a failed batch: :meth:`~pyspark_streamtest.TopologyTestDriver.restart` retries
    the batch.

    Attributes: ``output``, ``batch_id``, ``reason`` (what went wrong, in a few words),
    ``load`` (the machine's load averages when it happened) and ``cause`` (Spark's own
    error text)."""

    def __init__(self, output: str, batch_id: int, cause: str, reason: str, load: str
                 ) -> None:
        self.output = output
        self.batch_id = batch_id
        self.cause = cause
        self.reason = reason
        self.load = load
        super().__init__(
            f"the query of output {output!r} could not run batch {batch_id}: {reason} "
            f"({load}). This is the machine, not the batch's data or your code: run fewer "
            f"Spark processes at once (fewer pytest-xdist workers) or on more cores. The "
            f"driver's queries are stopped: restart() retries batch {batch_id} from the "
            f"checkpoint.\nSpark's error:\n{cause}"
        )

    def __reduce__(self) -> tuple[Any, ...]:
        return (_rebuilt, (type(self), (self.output, self.batch_id, self.cause,
                                        self.reason, self.load), {}), self.__dict__)


class CallbackChannelError(SparkInfrastructureError):
    """A batch could not run because Py4J's channel between Spark's JVM and this Python
    process failed, not because of the batch's data or the user's code: the JVM called
    a Python object (the driver's clock or sink, a ``foreachBatch`` function, a
    listener) that this process no longer knew (Py4J's "Object ID unknown"), the two ends
    lost step on a connection ("Unknown command"), or a callback connection could not be
    opened or broke. The test harness's plumbing failed; the message says whether the run
    was attached to a warm JVM (``warm_jvm_pid``, else None) and how to turn warm JVMs
    off. Not a :class:`StreamingQueryFailedError`; the driver's queries are stopped with
    their checkpoints, as after any failed batch."""

    def __init__(self, output: str, batch_id: int, cause: str, reason: str, load: str,
                 *, warm_jvm_pid: int | None = None) -> None:
        super().__init__(output, batch_id, cause, reason, load)
        self.warm_jvm_pid = warm_jvm_pid
        warm = (f"This run is attached to a warm JVM (pid {warm_jvm_pid}) that earlier "
                f"pytest runs used: run with --streamtest-warm-jvm=off (or "
                f"STREAMTEST_WARM_JVM=off) to rule it out, and report the failure with "
                f"Spark's error below."
                if warm_jvm_pid is not None else
                "This run has a JVM of its own (warm JVMs are off, or could not be used "
                "here: --streamtest-warm-jvm=off / STREAMTEST_WARM_JVM=off keeps them "
                "off); report the failure with Spark's error below.")
        self.args = (
            f"the query of output {output!r} could not run batch {batch_id}: {reason}. "
            f"This is the test harness's Py4J channel between Spark's JVM and this Python "
            f"process, not the batch's data or your code. {warm} The driver's queries are "
            f"stopped: restart() retries batch {batch_id} from the checkpoint.\n"
            f"Spark's error:\n{cause}",
        )

    def __reduce__(self) -> tuple[Any, ...]:
        return (_rebuilt, (type(self), (self.output, self.batch_id, self.cause,
                                        self.reason, self.load),
                           {"warm_jvm_pid": self.warm_jvm_pid}), self.__dict__)

    def __str__(self) -> str:
        return str(self.args[0])


class IncompatibleCheckpointError(StreamingQueryFailedError):
    """A query cannot go on from its checkpoint after an upgrade
    (``restart(topology=...)`` or ``TopologyTestDriver(..., checkpoint=...)``): Spark
    refused the new version's stateful operators against the state in the checkpoint
    (another key or value schema, another operator), or its sources no longer match the
    checkpoint's. Spark checks state when it plans the first batch that runs after the
    upgrade, so that batch raises this; the queries are then stopped with their
    checkpoints, as after any failed batch, and ``restart(topology=previous_version)``
    (``restart(app=...)`` for a driver made by ``from_app``, which ``from_app`` says)
    rolls back. ``operator`` names the stateful operator when Spark says which, and
    ``cause`` holds Spark's own words."""

    def __init__(
        self, output: str, batch_id: int, cause: str, records: tuple[Any, ...] = (),
        *, change: str, operator: str | None = None, from_app: bool = False,
    ) -> None:
        super().__init__(output, batch_id, cause, records)
        self.change = change
        self.operator = operator
        self.from_app = from_app
        where = f" ({operator})" if operator else ""
        upgrade = "restart(app=...)" if from_app else "restart(topology=...)"
        self.args = (
            f"output {output!r} cannot continue from its checkpoint: {change}{where}. Spark "
            f"refuses this change on restart from the same checkpoint (batch {batch_id}); "
            "keep the old state's shape, or start the new version on a fresh checkpoint. "
            f"The queries are stopped: {upgrade} with a compatible version goes "
            f"on.\nSpark's error:\n{cause}",
        )

    def _keywords(self) -> dict[str, Any]:
        return {"change": self.change, "operator": self.operator, "from_app": self.from_app}

    def __str__(self) -> str:
        return str(self.args[0])


def _rebuilt(cls: type[Any], args: tuple[Any, ...], keywords: dict[str, Any]) -> Any:
    """An error made again from its fields (see ``StreamingQueryFailedError.__reduce__``)."""
    return cls(*args, **keywords)


_SHOWN_RECORDS = 3
_SHOWN_WIDTH = 100


def _shown_records(records: tuple[Any, ...]) -> str:
    """The first few records the failed batch read (key and value), a line each."""
    lines = []
    for record in records[:_SHOWN_RECORDS]:
        where = f"{record.topic}"
        if record.offset is not None:
            where += f" p{record.partition}@{record.offset}"
        text = repr(record.value) if record.key is None else f"{record.key!r}: {record.value!r}"
        if len(text) > _SHOWN_WIDTH:
            text = text[: _SHOWN_WIDTH - 3] + "..."
        lines.append(f"  {where}  {text}\n")
    if len(records) > _SHOWN_RECORDS:
        lines.append(f"  ... {len(records) - _SHOWN_RECORDS} more (error.records has them all)\n")
    return "".join(lines)


def _describe_records(records: tuple[Any, ...]) -> str:
    """`` (it read topic 'a' partition 0 offsets 3-5, ...)`` for the failure message."""
    if not records:
        return ""
    spans: dict[tuple[str, int | None], list[int]] = {}
    counts: dict[str, int] = {}
    for record in records:
        counts[record.topic] = counts.get(record.topic, 0) + 1
        if record.offset is not None:
            spans.setdefault((record.topic, record.partition), []).append(record.offset)
    parts: list[str] = []
    for topic, count in counts.items():
        keyed = sorted((p, o) for (t, p), o in spans.items() if t == topic)
        if keyed:
            parts.extend(
                f"topic {topic!r} partition {p} offset"
                + (f" {min(o)}" if min(o) == max(o) else f"s {min(o)}-{max(o)}")
                for p, o in keyed
            )
        else:
            parts.append(f"{count} record{'s' if count != 1 else ''} of input {topic!r}")
    return " (it read " + ", ".join(parts) + ")"


class StepTimeoutError(StreamTestError, TimeoutError):
    """A query did not finish a trigger within the driver's ``timeout``. The driver closed."""


class PipelineError(StreamTestError):
    """A declarative pipeline could not be loaded, registered or updated."""


class PipelineDefinitionError(PipelineError, ValueError):
    """A pipeline's spec or definitions were refused (the spec file, a Python or SQL
    file of its libraries); the message names the file and the fix. Nothing ran."""


class PipelineUpdateError(PipelineError, RuntimeError):
    """An update of a pipeline ended with a flow failed (after the engine's attempts) or
    did not end in time. ``update`` is the :class:`~pyspark_streamtest.PipelineUpdate`
    as far as it went: each flow's states, attempts, batches and errors. The tables keep
    what the completed flows wrote; the driver can run the next update."""

    def __init__(self, message: str, update: Any = None) -> None:
        super().__init__(message)
        self.update = update


class PipelineHazardError(PipelineDefinitionError):
    """The pipeline's graph has a shape that fails in Spark's engine whatever the data.
    ``hazards`` lists each with the fix. Two streaming flows into one file-format table
    (their batch ids collide in the table's commit log, and one flow's rows are lost):
    ``from_pipeline(..., allow_hazards=True)`` runs it anyway, as Spark would, and the
    updates then raise :class:`LostRowsError` when rows were lost. An AutoCDC flow into
    a table without MERGE (the engine fails every update): refused either way."""

    def __init__(self, message: str, hazards: tuple[Any, ...] = ()) -> None:
        super().__init__(message)
        self.hazards = hazards


class LostRowsError(PipelineUpdateError):
    """An update ended with rows a flow wrote that never became visible in their table
    (data files its commit log does not name), though the engine reported the update
    COMPLETED. ``lost`` maps each table to the rows lost, ``flows`` the flows whose
    attempts the engine failed on the table's commit log in that update."""

    def __init__(self, message: str, update: Any = None, lost: Any = None,
                 flows: tuple[str, ...] = ()) -> None:
        super().__init__(message, update)
        self.lost = lost or {}
        self.flows = flows


class UnknownDatasetError(PipelineError, LookupError):
    """A name that is not one of the pipeline's datasets or flows (the message lists them)."""
