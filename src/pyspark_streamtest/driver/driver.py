"""The TopologyTestDriver face: run a topology's real streaming queries,
deterministically. The work is done by the collaborators it delegates to."""

from __future__ import annotations

import contextlib
import os
import weakref
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from types import TracebackType
from typing import Any

from pyspark.sql import DataFrame, SparkSession

from .._spark.connect.session import ConnectLink, is_connect_session
from .._spark.jvm import Jvm
from .._spark.query.conf import scoped_sql_conf
from .._spark.runtime.liveness import ensure_alive
from .._spark.runtime.python_logs import quiet_query_context_logs
from .._spark.runtime.session import build_test_session, ensure_classic_session
from .._spark.versions import capabilities
from ..core.records import BatchRecord, TestRecord
from ..core.time import (
    duration_ms,
    from_ms,
)
from ..errors import InvalidArgumentTypeError, StreamTestError, hide_our_frames
from ..kafka.broker import Broker, kafka_output_records
from ..kafka.serdes import DeserializerSpec, SerializerSpec
from ..pipelines import PipelineTestDriver
from ._app_verbs import AppVerbs
from ._fault_verbs import FaultVerbs
from ._frames import records_frame
from ._lifecycle import Lifecycle
from ._state_access import StateAccess
from ._state_verbs import StateVerbs
from ._time_control import TimeControl
from ._topic_handles import TopicHandles
from ._upgrade_verbs import UpgradeVerbs
from .queries import History, Queries, SavedCheckpoint, check_sql_conf, load_checkpoint, start_ms
from .topics import InputLink, OutputLink, TestInputTopic, TestOutputTopic
from .topology import BuiltOutput, TopologyFunction, build_topology, kept_topics_of

__tracebackhide__ = hide_our_frames

__all__ = ["TopologyTestDriver"]


@dataclass(frozen=True)
class _RunSettings:
    """What each run of a driver's built topology is made with (see ``reset``)."""

    jvm: Jvm
    checkpoint_root: str | os.PathLike[str] | None
    interval_ms: int | None
    """None: each query on its own trigger interval (1 s for a query without one)."""
    timeout_ms: int
    sql_conf: Mapping[str, str]
    freeze_python_clock: bool
    start_ms: int
    saved: SavedCheckpoint | None = None
    """The saved checkpoint each run starts from (``checkpoint=``)."""


class TopologyTestDriver(Lifecycle, StateVerbs, FaultVerbs, UpgradeVerbs, AppVerbs):
    """Drives a topology's streaming queries on a clock the test controls.

    **What runs.** Every output declared by the topology function runs as a real Spark
    Structured Streaming micro-batch query (``Trigger.ProcessingTime(trigger_interval)``,
    a checkpoint in a temporary directory, a sink the driver owns). Inputs of records are
    Spark memory sources; a file input is Spark's own file source over a directory the
    test lands files in. The queries start when the driver is created; the first trigger
    finds no data and runs no batch.

    **Processing time** starts at ``start_time`` and moves only when the test says so.
    It is each query's trigger clock, so it is the batch timestamp Spark uses for
    ``current_timestamp()`` and processing-time timeouts. Spark schedules triggers at
    multiples of ``trigger_interval`` since the epoch.

    **When batches run.** Piping records only buffers them. A micro-batch runs only
    inside :meth:`advance_wall_clock` (at each trigger time the clock passes) or
    :meth:`process_all_available` (at the current time, until Spark has nothing left
    to do). At a trigger Spark runs at most one batch per query: a *data batch* with
    every record piped to that query since its previous batch, or a *no-data batch*
    when the watermark moved far enough to emit or evict state, or when the query has
    processing-time timeouts; otherwise nothing. All queries step in lock-step on the
    one clock.

    **Outputs** are read through :meth:`create_output_topic` (reading removes records,
    like a queue). :attr:`batches` keeps the whole history, one :class:`BatchRecord`
    per batch (per attempt, for a batch the test crashed: see :meth:`crash_before_commit`).

    **Differences from production.** Batches take no processing time (the clock stands
    still while Spark works). A trigger that comes due while the clock jumps is not
    "late": the driver stops at each trigger time on the way.

    Use as a context manager, or call :meth:`close`. ``close()`` stops every query,
    releases their clocks and deletes the checkpoints.
    """

    def __init__(
        self,
        topology: TopologyFunction,
        *,
        spark: SparkSession | None = None,
        start_time: datetime | None = None,
        trigger_interval: timedelta | None = timedelta(seconds=1),
        freeze_python_clock: bool = False,
        checkpoint_root: str | os.PathLike[str] | None = None,
        timeout: timedelta = timedelta(minutes=2),
        sql_conf: Mapping[str, str] | None = None,
        checkpoint: str | os.PathLike[str] | None = None,
    ) -> None:
        """Build the topology and start its queries.

        ``start_time`` is processing time at the start (default
        2024-01-01T00:00:00Z, or the saved time with ``checkpoint``).

        ``checkpoint`` is a folder written by :meth:`save_checkpoint`: every output goes
        on from the saved query of the same name, as a new version of a job deployed on
        an old version's checkpoint (the topology may be changed; Spark decides what a
        checkpoint allows and refuses the rest with
        :class:`~pyspark_streamtest.errors.IncompatibleCheckpointError` at the first batch).
        Batch ids, state, watermarks and Kafka topics' offsets go on; outputs the saved
        version lacks start fresh. The driver copies the folder and never changes it.
        ``start_time`` may not be before the saved processing time.

        ``trigger_interval=None`` runs each query on the interval it sets itself (a job's
        ``trigger(processingTime=...)`` under :meth:`from_app`), 1 second for a query
        that sets none: queries then trigger at different times, each at multiples of
        its own interval.

        ``spark`` defaults to :func:`~pyspark_streamtest.test_spark_session` (a local,
        test-tuned session). It may be a Spark Connect session whose server runs in this
        process's JVM (``pytest --streamtest-connect``'s, or
        ``SparkSession.builder.remote("local[2]")``'s): the topology then gets Connect
        DataFrames, and what the driver hands back is Connect's; a session of a remote
        server raises :class:`~pyspark_streamtest.errors.SparkConnectNotSupportedError`.
        ``checkpoint_root`` is where the temporary checkpoint
        directory is made (default: ``/dev/shm`` when writable, else the system temp
        directory). ``timeout`` bounds how long one trigger may take before the driver
        gives up with :class:`~pyspark_streamtest.errors.StepTimeoutError`.

        ``sql_conf`` holds Spark SQL settings for this driver's queries only: they are set
        on the session while the topology function builds its DataFrames (so what Spark
        resolves then, such as the session time zone of ``hour()`` or ANSI mode, sees
        them) and while each query starts (a query copies the session's settings then),
        and put back at once, also on errors, so other drivers and batch jobs do not see
        them. For
        example ``transformWithState`` needs the RocksDB state store provider::

            sql_conf={"spark.sql.streaming.stateStore.providerClass":
                      "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider"}

        Settings Spark records in the checkpoint (the state store provider, shuffle
        partitions) keep their first values across :meth:`restart`, as in production.

        Checkpoints are written through Spark's ``FileSystemBasedCheckpointFileManager``
        (same files, same write-then-rename protocol, but no ``chmod``/``readlink``
        process per file as Spark's default manager starts locally); ``sql_conf`` can
        set ``spark.sql.streaming.checkpointFileManagerClass`` back.
        """
        if not callable(topology):
            raise InvalidArgumentTypeError(
                f"topology must be a function taking a Topology, got {type(topology).__name__}"
            )
        conf = check_sql_conf(sql_conf)
        saved = None if checkpoint is None else load_checkpoint(checkpoint)
        now_ms = start_ms(start_time, saved)
        interval_ms = (
            None if trigger_interval is None
            else duration_ms(trigger_interval, "trigger_interval", allow_zero=False)
        )
        timeout_ms = duration_ms(timeout, "timeout", allow_zero=False)
        self._closed = False
        self._closed_because = None
        self._app_settings = None
        self._readers: dict[str, tuple[DeserializerSpec, DeserializerSpec]] = {}
        users = spark if spark is not None else build_test_session()
        self._link = ConnectLink(users) if is_connect_session(users) else None
        session = users if self._link is None else self._link.server
        ensure_classic_session(session)
        ensure_alive(session)  # a dead JVM is SparkDiedError, not a connection error
        quiet_query_context_logs()  # the driver reports a failed batch's error itself
        self._spark = session
        """The classic session the queries run in (over Connect: the server's session of
        the client, ``self._users_spark``)."""
        self._users_spark = users
        jvm = Jvm(session)
        capabilities(jvm)
        # made before the job is built: a job's spark.read in main() finds what the topics
        # held when the checkpoint was saved
        self._broker = _new_broker(saved)
        with scoped_sql_conf(session, conf):  # build-time analysis sees it too (time zone...)
            self._inputs, built, job_rows = build_topology(topology, users, jvm, self._link,
                                                           kept_topics_of(self))
        self._outputs: dict[str, BuiltOutput] = {b.spec.name: b for b in built}
        self._run = _RunSettings(jvm, checkpoint_root, interval_ms, timeout_ms, conf,
                                 freeze_python_clock, now_ms, saved)
        self._generation = 0
        self._job_rows = job_rows
        """The Kafka rows the job's ``main()`` wrote: records of every run's start."""
        self._begin_run(now_ms, first=True)

    def _begin_run(self, now_ms: int, *, first: bool = False) -> None:
        """Make and start a run of the built topology: broker, history, queries on a
        fresh checkpoint, clock, state access and topic handles (handles check that
        they belong to the current run)."""
        run = self._run
        if not first:  # the first run's broker was made before the job was built
            self._broker = _new_broker(run.saved)
        self._history = History((n for n, b in self._outputs.items() if b.spec.kafka is None),
                                fill=weakref.WeakMethod(self._fill_later))
        self._absorb_job_writes(self._job_rows, now_ms)  # a reset's run starts as a new one
        self._queries = Queries(  # removes its checkpoint folder if it fails
            run.jvm, self._outputs.values(), checkpoint_root=run.checkpoint_root,
            interval_ms=run.interval_ms, timeout_ms=run.timeout_ms, sql_conf=run.sql_conf,
            broker=self._broker, saved=run.saved,
        )
        self._time = TimeControl(self._queries, self._history, now_ms=now_ms,
                                 on_failure=self._close_after_failure,
                                 on_query_failed=self._stop_after_failure)
        self._track(register=first)
        try:
            self._queries.start(now_ms, self._history.absorb)
            if run.freeze_python_clock:
                self._time.freeze_python_clock()
        except BaseException as error:
            failure = self._close_after_failure(error)
            if failure is error:
                raise
            raise failure from None
        self._after_new_queries()

    def _absorb_job_writes(self, rows: list[dict[str, Any]], now_ms: int) -> None:
        """The records of a ``from_app`` job's Kafka writes in ``main()`` (no batch's)."""
        self._job_rows = rows
        if rows:
            self._history.absorb_written(
                kafka_output_records(self._broker, 1, rows, None, from_ms(now_ms)))

    def _after_new_queries(self) -> None:
        """State access and topic handles for the current queries (handles check that
        they belong to the current run)."""
        self._state = StateAccess(self._spark, self._queries, self._history,
                                  None if self._link is None else self._link.to_connect)
        generation = self._generation

        def check() -> None:
            self._check_current(generation)

        self._handles = TopicHandles(
            self._inputs, self._outputs, self._history,
            InputLink(check, self._pipe, self._queries.pipe_empty,
                      lambda: self.current_time, self._broker),
            OutputLink(check, self._history, self._frame), self._readers,
        )

    @staticmethod
    def from_pipeline(
        spec: str | os.PathLike[str],
        *,
        configuration: Mapping[str, str] | None = None,
        file_inputs: Mapping[str, str] | None = None,
        allow_hazards: bool = False,
        spark: SparkSession | None = None,
        timeout: timedelta = timedelta(minutes=5),
    ) -> PipelineTestDriver:
        """A :class:`~pyspark_streamtest.PipelineTestDriver` for the declarative pipeline
        of ``spec`` (a ``spark-pipeline.yml`` or its folder), run update by update by
        Spark's own engine in the test's JVM; the options are its constructor's."""
        return PipelineTestDriver(spec, configuration=configuration, file_inputs=file_inputs,
                                  allow_hazards=allow_hazards, spark=spark, timeout=timeout)

    # --- context manager ------------------------------------------------------------------
    def __enter__(self) -> TopologyTestDriver:
        self._check_open()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    # --- topics ---------------------------------------------------------------------------
    def create_input_topic(
        self,
        name: str,
        *,
        key_serializer: SerializerSpec | None = None,
        value_serializer: SerializerSpec | None = None,
        start_timestamp: datetime | None = None,
        auto_advance: timedelta | None = None,
    ) -> TestInputTopic:
        """A handle to pipe records into input ``name``.

        The handle has its own record time, starting at ``start_timestamp`` (default:
        the driver's ``start_time``) and moving by ``auto_advance`` (default: not at all)
        after each record piped without an explicit timestamp. Record time is event
        time; it never moves processing time.

        ``key_serializer`` and ``value_serializer`` apply to Kafka inputs only: a name
        (``"string"``, ``"bytes"``, ``"json"``, ``"int"``, ``"long"``, ``"double"``,
        ``"auto"``, the default) or a function returning bytes; see
        :mod:`pyspark_streamtest.kafka`. Partitions and offsets belong to the topic, so
        all handles of one Kafka input share them.
        """
        self._check_open()
        start = self.current_time if start_timestamp is None else start_timestamp
        return self._handles.input_topic(name, key_serializer, value_serializer, start,
                                         auto_advance)

    def create_output_topic(
        self,
        name: str,
        *,
        key_deserializer: DeserializerSpec = None,
        value_deserializer: DeserializerSpec = None,
    ) -> TestOutputTopic:
        """A handle to read what was written to ``name``: a plain output's name, or a
        topic a Kafka output writes to.

        For Kafka topics, ``key_deserializer`` and ``value_deserializer`` (a name such as
        ``"string"`` or ``"json"``, or a function taking bytes) turn the written bytes
        back into values; without them keys and values are read as ``bytes``. A Kafka
        output may write any topic its ``topic`` column names, so a handle can be made
        for a topic nothing has written yet; reading it then raises
        :class:`~pyspark_streamtest.errors.UninitializedTopicError`, while reading a
        written topic whose records were all read raises
        :class:`~pyspark_streamtest.errors.NoSuchRecordError`.
        """
        self._check_open()
        return self._handles.output_topic(name, key_deserializer, value_deserializer)

    def produced_topic_names(self) -> set[str]:
        """The names of every topic (or plain output) a batch has written a record to,
        as Kafka's ``TopologyTestDriver.producedTopicNames()``."""
        return self._history.produced_topic_names()

    @property
    def input_names(self) -> tuple[str, ...]:
        """The inputs the topology declared, in declaration order."""
        return tuple(self._inputs)

    @property
    def output_names(self) -> tuple[str, ...]:
        """The outputs the topology declared (one query each), in declaration order."""
        return tuple(self._outputs)

    # --- time -----------------------------------------------------------------------------
    @property
    def current_time(self) -> datetime:
        """The driver's processing time (aware, UTC)."""
        return from_ms(self._time.now_ms)

    def advance_wall_clock(self, delta: timedelta) -> list[BatchRecord]:
        """Move processing time forward by ``delta`` and run the triggers Spark runs.

        The clock stops at every trigger time in ``(now, now + delta]`` and each query
        runs that trigger (a data batch, a no-data batch, or nothing) before the clock
        moves on; it ends at ``now + delta``. Once a trigger runs no batch in any query,
        the later trigger times in the span would run none either (nothing changes
        without data or time-based work), so the clock goes straight to the end.
        Queries with processing-time timeouts run a batch at every trigger, as in
        production. ``delta`` of zero runs nothing. Returns the batches run, in order.
        """
        self._check_open()
        return self._time.advance_wall_clock(delta)

    def jump_wall_clock(self, delta: timedelta) -> list[BatchRecord]:
        """Move processing time forward by ``delta`` in one jump and run ONE trigger at the
        new time, as Spark's trigger executor does after a stall (Spark's
        ``AdvanceManualClock`` past several intervals): each query whose trigger came due
        runs exactly one trigger (a data batch, a no-data batch, or nothing) at ``now +
        delta``; the intervals skipped run nothing, and the next trigger is the first
        interval after the new time. Processing-time timeouts that expired during the
        jump fire in that one batch. Compare :meth:`advance_wall_clock`, which stops at
        every trigger time on the way (a clock that never stalls). Records piped before
        the call are processed first. While the queries are stopped the clock moves and
        nothing runs. Returns the batches run."""
        self._check_open()
        return self._time.jump_wall_clock(delta)

    def process_all_available(self) -> list[BatchRecord]:
        """Run batches at the current processing time until Spark has nothing left to do.

        Each round lets every still-busy query run one trigger without moving the
        clock. A query is done after a trigger that runs no batch, or that runs a
        no-data batch with an unchanged watermark (such a batch is due to
        processing-time timeouts only and repeating it at the same time changes
        nothing). This covers the data batch for piped records and the no-data batches
        that follow when the watermark moves (closing windows, evicting state, firing
        event-time timeouts). The clock does not move. Returns the batches run.
        """
        self._check_open()
        return self._time.process_all_available()

    def advance_watermark_to(
        self, watermark: datetime, *, output: str | None = None
    ) -> list[BatchRecord]:
        """Move the event-time watermark of ``output``'s query (default: every query
        with a watermark) forward to ``watermark``, then run the batches Spark then runs.

        Between batches the driver sets the query's watermark as Spark does when it
        recovers one from a checkpoint, then calls :meth:`process_all_available`: Spark
        plans the next batch with the new watermark, so append-mode windows ending at
        or before it are emitted, state older than it is evicted, and event-time
        timeouts and timers up to it fire, in a no-data batch. Records piped before the
        call are processed first, with the old watermark. As always in Spark 3.4+, rows
        are dropped as late by the watermark of the *previous* batch, so the first batch
        that runs with the new watermark evicts with it and the batches after it also
        drop rows behind it. Like Beam's ``advance_watermark_to`` and Flink's
        ``processWatermark``.

        This is a test-only control: in production only event time seen in data moves
        the watermark. It moves forward only (a later batch's data can move it further;
        nothing moves it back). With several watermarks in one query (a join), Spark
        keeps one per input and combines them with the multiple-watermark policy; this
        sets the combined (global) value that the stateful operators use, and the next
        data moves it only if the policy's result is higher. The new value is written to
        the offset log by the next batch; if none ran before :meth:`restart`, the driver
        sets it again after the restart, so a restart keeps it.

        Raises :class:`~pyspark_streamtest.errors.TimeWentBackwardsError` for a value
        below a query's current watermark (nothing is changed), and ``ValueError`` if the
        query (or, without ``output``, every query) has no ``withWatermark``.
        """
        self._check_open()
        return self._time.advance_watermark_to(watermark, output)

    def watermark(self, output: str) -> datetime | None:
        """The event-time watermark the next batch of ``output``'s query will use: the
        maximum event time its batches have seen minus the ``withWatermark`` delay (the
        minimum over several watermarks, Spark's default policy), never moving back.
        The epoch before any event time is seen; None if the query has no watermark.

        This is the value Spark will report as ``eventTime.watermark`` in the *next*
        batch's progress, and the last batch's :attr:`BatchRecord.watermark_after
        <pyspark_streamtest.BatchRecord.watermark_after>` (or a value set since by
        :meth:`advance_watermark_to`). The watermark a batch *ran with* (the one in its
        own progress) is :attr:`BatchRecord.watermark
        <pyspark_streamtest.BatchRecord.watermark>`."""
        self._check_open()
        ms = self._queries.runner(output).watermark_ms()
        return None if ms is None else from_ms(ms)

    # --- history and restarts -------------------------------------------------------------
    @property
    def batches(self) -> tuple[BatchRecord, ...]:
        """Every batch run so far, in the order run (across restarts; readable after close)."""
        return self._history.batches

    def evaluate_event_times(self) -> tuple[BatchRecord, ...]:
        """Every batch so far, with the event time of each record and the records
        dropped as late evaluated where a query computes its event time (parsed from a
        Kafka value): ``BatchRecord.input_event_times`` and ``late_records``, as
        :meth:`late_records` evaluates them (one small Spark job per ``withWatermark``
        and per stateful operator input, once). What cannot be evaluated stays None.
        ``driver.batches`` give the same on the first read of a batch's
        ``input_event_times`` or ``late_records`` (what a picture of them reads) while
        the driver is open; this evaluates every output's at once."""
        self._check_open()
        for output in self.output_names:
            try:
                self._state.fill_event_times(output)
                self._state.late_records(output)
            except StreamTestError:
                pass  # left None: BatchRecord says what None means
        return self._history.batches

    # --- internals ------------------------------------------------------------------------
    def _fill_later(self, name: str, output: str) -> None:
        """A batch's ``input_event_times`` or ``late_records`` is read for the first time:
        evaluate it for ``output``'s batches while the driver is open (else None)."""
        if not self._closed:
            with contextlib.suppress(StreamTestError):  # None: BatchRecord says what it means
                self._state.fill_later(name, output)

    def _pipe(self, input_name: str, lines: list[str], records: Sequence[TestRecord]) -> None:
        self._check_open()
        self._queries.pipe(input_name, lines, records)

    def _frame(self, topic: str, kafka: bool, records: Sequence[TestRecord]) -> DataFrame:
        schema = None if kafka else self._outputs[topic].dataframe.schema
        return records_frame(self._users_spark, schema, records)

    def __repr__(self) -> str:
        state = "closed" if self._closed else f"at {self.current_time.isoformat()}"
        return (f"<TopologyTestDriver outputs={list(self.output_names)} {state}, "
                f"{len(self._history)} batches>")


def _new_broker(saved: SavedCheckpoint | None) -> Broker:
    """A run's broker: empty, or holding what a saved checkpoint's topics held."""
    return Broker() if saved is None else Broker.from_json(saved.broker)
