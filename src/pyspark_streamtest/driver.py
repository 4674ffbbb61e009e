"""The TopologyTestDriver: run a topology's real streaming queries, deterministically."""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from collections import deque
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime, timedelta
from types import TracebackType

from pyspark.sql import SparkSession

from ._broker import Broker
from ._files import safe_file_name
from ._runner import QueryRunner
from ._spark.jvm import Jvm
from ._spark.plan import LateRule
from ._spark.session import build_test_session, ensure_classic_session
from ._spark.state import read_metadata, read_state_schema, state_reader_options
from ._spark.versions import capabilities
from ._state_reader import Shape, choose_operator, read_view, store_metadata
from ._time import duration_ms, from_ms, require_aware, to_ms
from .clock import DEFAULT_START_TIME, _PythonClockFreeze
from .errors import (
    DriverClosedError,
    StateStoreError,
    StreamTestError,
    TimeWentBackwardsError,
    UnknownTopicError,
)
from .features import Feature, require_feature, supported_features
from .kafka import DeserializerSpec, SerializerSpec, deserializer, serializer
from .records import BatchRecord, LateRecord, TestRecord
from .state import (
    OperatorDescription,
    QueryDescription,
    StateStoreView,
    TopologyDescription,
    WindowStoreView,
)
from .topics import TestInputTopic, TestOutputTopic
from .topology import TopologyFunction, _InputSpec, build_topology

__all__ = ["TopologyTestDriver"]

_MAX_ROUNDS = 10_000


class TopologyTestDriver:
    """Drives a topology's streaming queries on a clock the test controls.

    **What runs.** Every output declared by the topology function runs as a real Spark
    Structured Streaming micro-batch query (``Trigger.ProcessingTime(trigger_interval)``,
    a checkpoint in a temporary directory, a sink the driver owns). Inputs are Spark
    memory sources. The queries start when the driver is created; the first trigger
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
    per batch.

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
        start_time: datetime = DEFAULT_START_TIME,
        trigger_interval: timedelta = timedelta(seconds=1),
        freeze_python_clock: bool = False,
        checkpoint_root: str | os.PathLike[str] | None = None,
        timeout: timedelta = timedelta(minutes=2),
        sql_conf: Mapping[str, str] | None = None,
    ) -> None:
        """Build the topology and start its queries.

        ``spark`` defaults to :func:`~pyspark_streamtest.test_spark_session` (a local,
        test-tuned session). ``checkpoint_root`` is where the temporary checkpoint
        directory is made (default: ``/dev/shm`` when writable, else the system temp
        directory). ``timeout`` bounds how long one trigger may take before the driver
        gives up with :class:`~pyspark_streamtest.errors.StepTimeoutError`.

        ``sql_conf`` holds Spark SQL settings for this driver's queries only: they are set
        on the session while each query starts (a query copies the session's settings
        then) and put back at once, so other drivers and batch jobs do not see them. For
        example ``transformWithState`` needs the RocksDB state store provider::

            sql_conf={"spark.sql.streaming.stateStore.providerClass":
                      "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider"}

        Settings Spark records in the checkpoint (the state store provider, shuffle
        partitions) keep their first values across :meth:`restart`, as in production.

        The queries write their checkpoints through Spark's
        ``FileSystemBasedCheckpointFileManager``
        (``spark.sql.streaming.checkpointFileManagerClass``; a ``sql_conf`` entry
        overrides it). Locally it starts no process per file, where Spark's default
        ``FileContext`` manager, without Hadoop's native library, starts a ``chmod`` or
        ``readlink`` process for most checkpoint files (20 per stateless batch). The
        files and the write-then-rename protocol are the same.
        """
        if not callable(topology):
            raise TypeError(
                f"topology must be a function taking a Topology, got {type(topology).__name__}"
            )
        sql_conf = _check_sql_conf(sql_conf)
        self._now_ms = to_ms(require_aware(start_time, "start_time"))
        self._interval_ms = duration_ms(trigger_interval, "trigger_interval", allow_zero=False)
        timeout_ms = duration_ms(timeout, "timeout", allow_zero=False)
        self._closed = False
        self._runners: list[QueryRunner] = []
        self._history: list[BatchRecord] = []
        self._broker = Broker()
        self._topic_queues: dict[str, deque[TestRecord]] = {}
        self._written: dict[str, int] = {}
        self._freeze: _PythonClockFreeze | None = None
        self._checkpoints: str | None = None
        session = spark if spark is not None else build_test_session()
        ensure_classic_session(session)
        self._spark = session
        jvm = Jvm(session)
        capabilities(jvm)
        try:
            self._inputs, built = build_topology(topology, session, jvm)
            self._plain_outputs = [b.spec.name for b in built if b.spec.kafka is None]
            self._kafka_outputs = [b.spec for b in built if b.spec.kafka is not None]
            for name in self._plain_outputs:
                self._topic_queues[name] = deque()
            self._checkpoints = tempfile.mkdtemp(
                prefix="pyspark-streamtest-", dir=_checkpoint_root(checkpoint_root)
            )
            for index, output in enumerate(built):
                name = safe_file_name(output.spec.name)
                folder = os.path.join(self._checkpoints, f"{index}-{name}")
                runner = QueryRunner(
                    jvm, output, folder, self._interval_ms, timeout_ms / 1000, sql_conf,
                    self._broker,
                )
                self._runners.append(runner)
                self._absorb(runner.start(self._now_ms))
            if freeze_python_clock:
                self._freeze = _PythonClockFreeze(self.current_time)
        except BaseException:
            self._close_after_failure()
            raise

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

    def close(self) -> None:
        """Stop every query, release their clocks, delete the checkpoints, unfreeze
        Python's clock. Idempotent. The history (:attr:`batches`) stays readable."""
        if not self._closed:
            self._shutdown()

    @property
    def closed(self) -> bool:
        return self._closed

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
        spec = self._input_spec(name)
        start = self.current_time if start_timestamp is None else start_timestamp
        if spec.kafka is None and (key_serializer is not None or value_serializer is not None):
            raise TypeError(
                f"input {name!r} is not a Kafka input; serializers apply to inputs declared "
                "with t.kafka_input(...) (plain inputs take values that match their schema)"
            )
        return TestInputTopic._create(
            self,
            spec,
            require_aware(start, "start_timestamp"),
            timedelta(0) if auto_advance is None else auto_advance,
            serializer(key_serializer or "auto") if spec.kafka is not None else None,
            serializer(value_serializer or "auto") if spec.kafka is not None else None,
        )

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
        if name in self._plain_outputs:
            if key_deserializer is not None or value_deserializer is not None:
                raise TypeError(
                    f"output {name!r} is not a Kafka output; its records are rows (dicts), "
                    "so there is nothing to deserialize"
                )
            return TestOutputTopic._create(self, name, kafka=False)
        if not isinstance(name, str) or not name:
            raise UnknownTopicError(f"topic names are non-empty strings, got {name!r}")
        if not self._may_write(name):
            raise UnknownTopicError(
                f"unknown output {name!r}; this topology's outputs are "
                f"{_names(r.name for r in self._runners)}"
                + (f" and its Kafka outputs write {_names(self._fixed_topics())}"
                   if self._kafka_outputs else "")
            )
        return TestOutputTopic._create(
            self, name, kafka=True,
            key_deserializer=deserializer(key_deserializer),
            value_deserializer=deserializer(value_deserializer),
        )

    def produced_topic_names(self) -> set[str]:
        """The names of every topic (or plain output) a batch has written a record to,
        as Kafka's ``TopologyTestDriver.producedTopicNames()``."""
        return {name for name, count in self._written.items() if count}

    def _fixed_topics(self) -> list[str]:
        """Topics written by Kafka outputs that do not route by a ``topic`` column."""
        return [
            spec.kafka.topic or spec.name
            for spec in self._kafka_outputs
            if spec.kafka is not None and not spec.kafka.routes_by_column
        ]

    def _may_write(self, topic: str) -> bool:
        return (
            topic in self._topic_queues
            or topic in self._fixed_topics()
            or any(s.kafka is not None and s.kafka.routes_by_column for s in self._kafka_outputs)
        )

    def _topic_queue(self, topic: str) -> deque[TestRecord] | None:
        return self._topic_queues.get(topic)

    def _written_count(self, topic: str) -> int:
        return self._written.get(topic, 0)

    @property
    def input_names(self) -> tuple[str, ...]:
        return tuple(self._inputs)

    @property
    def output_names(self) -> tuple[str, ...]:
        return tuple(r.name for r in self._runners)

    # --- time -----------------------------------------------------------------------------
    @property
    def current_time(self) -> datetime:
        """The driver's processing time (aware, UTC)."""
        return from_ms(self._now_ms)

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
        target = self._now_ms + duration_ms(delta, "delta")
        ran: list[BatchRecord] = []
        while True:
            due = [r.next_trigger_ms for r in self._runners]
            next_trigger = min((t for t in due if t is not None), default=None)
            if next_trigger is None or next_trigger > target:
                break
            batches = self._move_clock(next_trigger)
            ran.extend(batches)
            if not batches:
                break
        ran.extend(self._move_clock(target))
        return ran

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
        busy = list(self._runners)
        ran: list[BatchRecord] = []
        for _ in range(_MAX_ROUNDS):
            if not busy:
                return ran
            before = {id(r): r.last_batch for r in busy}
            batches = self._release_triggers(busy)
            ran.extend(batches)
            still_busy = []
            for runner in busy:
                last = runner.last_batch
                if last is None or last is before[id(runner)]:
                    continue
                if last.is_data_batch and not runner.built.runs_no_data_batches:
                    continue  # no watermark, no timeouts: Spark owes nothing without data
                previous = before[id(runner)]
                timeout_only = (
                    not last.is_data_batch
                    and previous is not None
                    and last.watermark == previous.watermark
                )
                if not timeout_only:
                    still_busy.append(runner)
            busy = still_busy
        self._close_after_failure()
        raise StreamTestError(
            f"process_all_available() ran {_MAX_ROUNDS} rounds and Spark still had batches to "
            "run; the queries never become idle. The driver is closed."
        )

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
        target = to_ms(require_aware(watermark, "watermark"))
        if output is not None:
            runners = [self._runner(output)]
            if runners[0].watermark_ms() is None:
                raise ValueError(
                    f"output {output!r} has no event-time watermark (no withWatermark in its "
                    "query), so there is nothing to advance"
                )
        else:
            runners = [r for r in self._runners if r.watermark_ms() is not None]
            if not runners:
                raise ValueError(
                    "no query of this topology has an event-time watermark (withWatermark); "
                    "there is nothing to advance"
                )
        for runner in runners:
            current = runner.watermark_ms()
            assert current is not None
            if target < current:
                raise TimeWentBackwardsError(
                    f"cannot move the watermark of output {runner.name!r} back from "
                    f"{from_ms(current).isoformat()} to {from_ms(target).isoformat()}; "
                    "watermarks only move forward"
                )
        self._flush_inputs()  # records piped before the call are processed first
        ran = self.process_all_available()
        try:
            for runner in runners:
                if target > (runner.watermark_ms() or 0):
                    runner.force_watermark(target)
        except BaseException:
            self._close_after_failure()
            raise
        return ran + self.process_all_available()

    # --- state -------------------------------------------------------------------------------
    def get_state_store(
        self,
        output: str,
        *,
        operator_id: int | None = None,
        store_name: str | None = None,
        state_var: str | None = None,
        batch_id: int | None = None,
        timers: bool = False,
    ) -> StateStoreView:
        """A read-only view of the state of ``output``'s query, as of the end of batch
        ``batch_id`` (default: the last batch run). Needs PySpark 4.0+ (Spark's state
        data source); see :mod:`pyspark_streamtest.state` for keys and values.

        ``operator_id`` picks the stateful operator when the query has several (see
        :meth:`describe`); ``store_name`` a store of it other than ``"default"``;
        ``state_var`` a ``transformWithState(InPandas)`` state variable. Entries are as
        Spark stores them: for ``applyInPandasWithState`` a value is
        ``{"groupState": {...}, "timeoutTimestamp": ms}``; for ``dropDuplicates`` it is
        None (the store keeps keys only); a transformWithState list variable has one entry
        per element (``get_all(key)`` in list order), a map variable one per map key
        (``{"user_map_key": {...}, "user_map_value": {...}}``), and ``timers=True``
        reads the registered timers (``{"expiration_timestamp_ms": ms}`` per timer).
        Before the query's first batch the view is empty. Reading never changes the query.
        """
        return self._read_state(output, operator_id, store_name, state_var, None, batch_id,
                                "generic", timers)

    def get_key_value_store(
        self, output: str, *, operator_id: int | None = None, batch_id: int | None = None,
    ) -> StateStoreView:
        """The state of an aggregation without windows (``groupBy(k).agg(...)``), a
        ``dropDuplicates`` (values None) or an ``applyInPandasWithState`` (values are the
        user's state, the ``groupState`` struct), as ``key -> value``."""
        return self._read_state(output, operator_id, None, None, None, batch_id, "key_value")

    def get_window_store(
        self, output: str, *, operator_id: int | None = None, batch_id: int | None = None,
    ) -> WindowStoreView:
        """The state of a windowed aggregation (``groupBy(window(...), k)``): entries keyed
        by the other grouping columns, each with its :class:`~pyspark_streamtest.state.
        Window` (start and end as datetimes). ``fetch(key, time_from, time_to)`` reads a
        key's windows, as Kafka's ``WindowStore.fetch``."""
        view = self._read_state(output, operator_id, None, None, None, batch_id, "window")
        assert isinstance(view, WindowStoreView)
        return view

    def get_session_store(
        self, output: str, *, operator_id: int | None = None, batch_id: int | None = None,
    ) -> WindowStoreView:
        """The state of a session-window aggregation (``groupBy(session_window(...), k)``):
        the open sessions per key, each with its window (first event to last event plus
        the gap) and its aggregate values."""
        view = self._read_state(output, operator_id, None, None, None, batch_id, "session")
        assert isinstance(view, WindowStoreView)
        return view

    def get_join_store(
        self,
        output: str,
        side: str,
        *,
        operator_id: int | None = None,
        batch_id: int | None = None,
    ) -> StateStoreView:
        """The rows a stream-stream join buffers on ``side`` (``"left"`` or ``"right"``),
        keyed by the join key (``get_all(key)``: a key can buffer several rows). Rows
        leave the buffer when the watermark passes the join's time bound."""
        if side not in ("left", "right"):
            raise ValueError(f"side must be 'left' or 'right', got {side!r}")
        return self._read_state(output, operator_id, None, None, side, batch_id, "join")

    def late_records(self, output: str) -> list[LateRecord]:
        """Every input record ``output``'s query has dropped as late so far, oldest first,
        each with the batch that dropped it and the watermark it was compared with.

        The driver applies the rule of the query's stateful operator to each piped
        record's event time: Spark 3.4+ drops a row by the watermark of the *previous*
        batch; ``dropDuplicates`` (and ``applyInPandasWithState`` with event-time
        timeouts) when its event time is at or behind it; a windowed aggregation per
        window, when the window ended at or before it (a sliding-window record can be
        dropped from one window and counted in another: ``partial``); a session window
        when event time + gap is at or behind it. Spark's own count is
        ``BatchRecord.num_rows_dropped_by_watermark`` (for aggregations it counts rows
        after partial aggregation, so it can be lower).

        Raises ``ValueError`` with the reason when the driver cannot tell exactly: a
        stream-stream join (each side drops by a state watermark derived from the join
        condition), several watermarks or stateful operators, an aggregation not grouped
        by a window of the event time, transformWithState, or event time that is not an
        input's ``timestamp_column`` (e.g. parsed from a Kafka value).
        """
        self._check_open()
        runner = self._runner(output)
        rule = runner.built.late_rule
        if not isinstance(rule, LateRule):
            raise ValueError(f"cannot tell which records output {output!r} drops as late: "
                             f"{rule}")
        columns = dict(runner.built.time_columns)
        if rule.column not in columns.values():
            raise ValueError(
                f"cannot tell which records output {output!r} drops as late: its watermark is "
                f"on column {rule.column!r}, which is not the event-time column of any input it "
                f"reads ({', '.join(f'{n}: {c}' for n, c in columns.items())}); declare the "
                "input with that timestamp_column, or read BatchRecord.num_rows_dropped_by_"
                "watermark"
            )
        return [
            late
            for batch in self._history
            if batch.output == runner.name and batch.late_records
            for late in batch.late_records
        ]

    def assert_num_state_rows(
        self,
        output: str,
        *,
        total: int | Sequence[int],
        updated: int | Sequence[int] | None = None,
        batch_id: int | None = None,
    ) -> None:
        """Assert the state rows of ``output``'s query after batch ``batch_id`` (default:
        its last batch), per stateful operator, as Spark's ``assertNumStateRows``.

        ``total`` (and ``updated``) is one number per stateful operator in operator order,
        or a single number for a query with one. On a mismatch the ``AssertionError``
        shows expected and actual per operator.
        """
        self._check_open()
        runner = self._runner(output)
        batches = [b for b in self._history if b.output == runner.name]
        if not batches:
            raise AssertionError(f"output {output!r} has run no batch yet, so it has no state "
                                 "rows to check")
        if batch_id is None:
            batch = batches[-1]
        else:
            found = [b for b in batches if b.batch_id == batch_id]
            if not found:
                raise AssertionError(
                    f"output {output!r} has no batch {batch_id} (batches run: "
                    f"{batches[0].batch_id}..{batches[-1].batch_id})"
                )
            batch = found[0]
        metrics = batch.state_metrics
        actual_total = [m.rows_total for m in metrics]
        actual_updated = [m.rows_updated for m in metrics]
        want_total = [total] if isinstance(total, int) else list(total)
        want_updated = None if updated is None else (
            [updated] if isinstance(updated, int) else list(updated))
        if actual_total == want_total and (want_updated is None or want_updated == actual_updated):
            return
        lines = [f"state rows of output {output!r} after batch {batch.batch_id} differ:",
                 "  operator                         total (expected/actual)"
                 + ("   updated (expected/actual)" if want_updated is not None else "")]
        for index in range(max(len(metrics), len(want_total))):
            name = metrics[index].operator_name if index < len(metrics) else "(none)"
            cell = f"{_at(want_total, index)}/{_at(actual_total, index)}"
            mark = "" if _at(want_total, index) == _at(actual_total, index) else "  <-"
            row = f"  {index}: {name:<29} {cell:<25}"
            if want_updated is not None:
                cell_u = f"{_at(want_updated, index)}/{_at(actual_updated, index)}"
                if _at(want_updated, index) != _at(actual_updated, index):
                    mark = "  <-"
                row += f" {cell_u}"
            lines.append(row + mark)
        raise AssertionError("\n".join(lines))

    def describe(self) -> TopologyDescription:
        """Each query's output mode, watermarks (column and delay) and stateful operators
        (Spark's operator id and name, state store names, key and value schemas),
        printable like Kafka's ``Topology#describe()``. Operators are known once a batch
        has run (Spark plans them then); schemas need PySpark 4.0+."""
        self._check_open()
        queries = []
        for runner in self._runners:
            spec = runner.built.spec
            queries.append(QueryDescription(
                output=runner.name,
                output_mode=spec.output_mode,
                kafka=spec.kafka is not None,
                watermarks=runner.built.watermarks,
                operators=self._operators(runner),
            ))
        return TopologyDescription(tuple(queries))

    def _operators(self, runner: QueryRunner) -> tuple[OperatorDescription, ...]:
        if runner.last_batch is None:
            return ()
        if Feature.STATE_STORE_READS not in supported_features(self._spark):
            return tuple(
                OperatorDescription(index, str(op.get("operatorName", "?")), ())
                for index, op in enumerate(runner.last_batch.state_operators)
            )
        stores = read_metadata(self._spark, runner.checkpoint)
        described = []
        for operator_id in sorted({s.operator_id for s in stores}):
            mine = [s for s in stores if s.operator_id == operator_id]
            names = tuple(s.store_name for s in mine)
            key_schema = value_schema = None
            if "default" in names:
                schema = read_state_schema(self._spark, runner.checkpoint, state_reader_options(
                    runner.last_batch.batch_id, operator_id, "default", None, None))
                key_schema = schema["key"].dataType.simpleString()
                value_schema = schema["value"].dataType.simpleString()
            described.append(OperatorDescription(
                operator_id, mine[0].operator_name, names, key_schema, value_schema))
        return tuple(described)

    def _read_state(
        self,
        output: str,
        operator_id: int | None,
        store_name: str | None,
        state_var: str | None,
        join_side: str | None,
        batch_id: int | None,
        shape: Shape,
        timers: bool = False,
    ) -> StateStoreView:
        self._check_open()
        runner = self._runner(output)
        require_feature(self._spark, Feature.STATE_STORE_READS)
        last = runner.last_batch
        if batch_id is not None and (
            isinstance(batch_id, bool) or not isinstance(batch_id, int) or batch_id < 0
        ):
            raise ValueError(f"batch_id must be a batch id (an int >= 0), got {batch_id!r}")
        if last is None:
            if batch_id is not None:
                raise StateStoreError(
                    f"output {output!r} has run no batch yet, so there is no state as of batch "
                    f"{batch_id}"
                )
            empty_view = WindowStoreView if shape in ("window", "session") else StateStoreView
            return empty_view((), output=output, operator_id=operator_id or 0,
                              store_name=store_name, state_var=state_var, batch_id=None,
                              key_names=())
        if batch_id is not None and batch_id > last.batch_id:
            raise StateStoreError(
                f"output {output!r} has run batches up to {last.batch_id}; there is no state "
                f"as of batch {batch_id} yet"
            )
        stores = store_metadata(self._spark, runner.checkpoint, output)
        chosen = choose_operator(stores, output, operator_id)
        kind = next(s.operator_name for s in stores if s.operator_id == chosen)
        if join_side is not None and kind != "symmetricHashJoin":
            raise StateStoreError(
                f"output {output!r} operator {chosen} is {kind}, not a stream-stream join"
            )
        if join_side is None and kind == "symmetricHashJoin":
            raise StateStoreError(
                f"output {output!r} operator {chosen} is a stream-stream join; read one side "
                "with get_join_store(output, 'left' or 'right')"
            )
        names = {s.store_name for s in stores if s.operator_id == chosen}
        if store_name is not None and store_name not in names:
            raise StateStoreError(
                f"output {output!r} operator {chosen} has no store {store_name!r}; its stores "
                f"are {_names(names)}"
            )
        return read_view(
            self._spark, runner.checkpoint, output=output, operator_id=chosen,
            store_name=store_name, state_var=state_var, join_side=join_side,
            batch_id=last.batch_id if batch_id is None else batch_id, shape=shape,
            timers=timers,
        )

    def _move_clock(self, now_ms: int) -> list[BatchRecord]:
        """Move every query's clock to ``now_ms``; the queries whose next trigger is due
        run it. Returns the batches they ran."""
        self._flush_inputs()
        started = []
        for runner in self._runners:
            calls = runner.wait_calls
            if runner.clock_set(now_ms):
                started.append((runner, calls))
        self._now_ms = now_ms
        if self._freeze is not None:
            self._freeze.move_to(self.current_time)
        return self._finish_triggers(started)

    def _release_triggers(self, runners: Sequence[QueryRunner]) -> list[BatchRecord]:
        """Let each of ``runners`` run one trigger at the current time."""
        self._flush_inputs()
        started = []
        for runner in runners:
            started.append((runner, runner.wait_calls))
            runner.clock_release()
        return self._finish_triggers(started)

    def _flush_inputs(self) -> None:
        try:
            for runner in self._runners:
                runner.flush()
        except BaseException:
            self._close_after_failure()
            raise

    def _finish_triggers(self, started: list[tuple[QueryRunner, int]]) -> list[BatchRecord]:
        """Wait for the triggers let run (in query order) and record their batches. A
        failed or stuck query closes the driver."""
        batches: list[BatchRecord] = []
        try:
            for runner, calls in started:
                batches.extend(runner.finish_trigger(calls))
        except StreamTestError:
            self._close_after_failure()
            raise
        self._absorb(batches)
        return batches

    def _absorb(self, batches: Iterable[BatchRecord]) -> None:
        for batch in batches:
            self._history.append(batch)
            for record in batch.output_records:
                topic = record.topic
                queue = self._topic_queues.get(topic)
                if queue is None:
                    queue = self._topic_queues[topic] = deque()
                queue.append(record)
                self._written[topic] = self._written.get(topic, 0) + 1

    # --- state of the queries -------------------------------------------------------------
    @property
    def batches(self) -> tuple[BatchRecord, ...]:
        """Every batch run so far, in the order run (across restarts; readable after close)."""
        return tuple(self._history)

    def watermark(self, output: str) -> datetime | None:
        """The event-time watermark the next batch of ``output``'s query will use: the
        maximum event time its batches have seen minus the ``withWatermark`` delay (the
        minimum over several watermarks, Spark's default policy), never moving back.
        The epoch before any event time is seen; None if the query has no watermark."""
        self._check_open()
        ms = self._runner(output).watermark_ms()
        return None if ms is None else from_ms(ms)

    def restart(self) -> list[BatchRecord]:
        """Stop every query and start it again from its checkpoint, as after a crash or a
        deploy. State and the watermark are recovered by Spark; batch ids continue;
        records piped but not yet processed stay queued. Spark runs a first trigger at
        once on start: a data batch if records wait, else nothing. A no-data batch that
        Spark owed before the restart (to emit windows or evict state after the
        watermark moved) is *not* run: a restarted query has no last execution to ask,
        so what was due is done by the next data batch (checked by property tests
        against Spark on every supported line). Returns the batches that ran."""
        self._check_open()
        ran: list[BatchRecord] = []
        try:
            for runner in self._runners:
                runner.stop()
            for runner in self._runners:
                batches = runner.start(self._now_ms)
                self._absorb(batches)
                ran.extend(batches)
        except BaseException:
            self._close_after_failure()
            raise
        return ran

    # --- used by topic handles ------------------------------------------------------------
    def _pipe(self, input_name: str, lines: list[str], records: list[TestRecord]) -> None:
        self._check_open()
        for runner in self._runners:
            if input_name in runner.input_names:
                runner.enqueue(input_name, lines, records)

    def _check_open(self) -> None:
        if self._closed:
            raise DriverClosedError(
                "this TopologyTestDriver is closed; create a new driver (queries, clocks and "
                "checkpoints of a closed driver are gone)"
            )

    # --- internals ------------------------------------------------------------------------
    def _input_spec(self, name: str) -> _InputSpec:
        spec = self._inputs.get(name)
        if spec is None:
            raise UnknownTopicError(
                f"unknown input {name!r}; this topology's inputs are {_names(self._inputs)}"
            )
        return spec

    def _runner(self, output: str) -> QueryRunner:
        for runner in self._runners:
            if runner.name == output:
                return runner
        raise UnknownTopicError(
            f"unknown output {output!r}; this topology's outputs are "
            f"{_names(r.name for r in self._runners)}"
        )

    def _close_after_failure(self) -> None:
        """Close while another error is on its way to the caller; that error wins."""
        with contextlib.suppress(BaseException):
            self._shutdown()

    def _shutdown(self) -> None:
        self._closed = True
        errors: list[BaseException] = []
        for runner in self._runners:
            try:
                runner.stop()
            except BaseException as error:  # keep stopping the others
                errors.append(error)
        if self._freeze is not None:
            self._freeze.stop()
            self._freeze = None
        if self._checkpoints is not None:
            shutil.rmtree(self._checkpoints, ignore_errors=True)
            self._checkpoints = None
        if errors:
            raise errors[0]

    def __repr__(self) -> str:
        state = "closed" if self._closed else f"at {self.current_time.isoformat()}"
        return (
            f"<TopologyTestDriver outputs={list(self.output_names)} {state}, "
            f"{len(self._history)} batches>"
        )


def _check_sql_conf(conf: Mapping[str, str] | None) -> dict[str, str]:
    if conf is None:
        return {}
    if not isinstance(conf, Mapping):
        raise TypeError(f"sql_conf must be a mapping of setting names to values, got {conf!r}")
    checked = {}
    for key, value in conf.items():
        if not isinstance(key, str) or not key:
            raise TypeError(f"sql_conf keys must be Spark setting names (str), got {key!r}")
        if isinstance(value, bool):
            checked[key] = "true" if value else "false"
        elif isinstance(value, (str, int, float)):
            checked[key] = str(value)
        else:
            raise TypeError(
                f"sql_conf[{key!r}] must be a str, int, float or bool, got "
                f"{type(value).__name__}"
            )
    return checked


def _at(values: Sequence[int], index: int) -> str:
    return str(values[index]) if index < len(values) else "-"


def _names(names: Iterable[str]) -> str:
    listed = sorted(names)
    return ", ".join(repr(n) for n in listed) if listed else "(none)"


def _checkpoint_root(root: str | os.PathLike[str] | None) -> str | None:
    if root is not None:
        return os.fspath(root)
    shm = "/dev/shm"
    if os.path.isdir(shm) and os.access(shm, os.W_OK):
        return shm
    return None
