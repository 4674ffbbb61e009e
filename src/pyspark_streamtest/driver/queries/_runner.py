"""One output's streaming query, as the driver sees it: start, feed, trigger, stop.

A runner turns what the adapter reports (sink callbacks, progress, the shadow
watermark) into immutable :class:`BatchRecord` values.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from dataclasses import replace
from datetime import datetime
from functools import partial
from typing import Any

from ..._spark.jvm import JavaObject, Jvm, java_error_text
from ..._spark.query import clock as _clock
from ..._spark.query.callbacks import CallbackConnections, forget_proxies
from ..._spark.query.checkpoints.offset_log import last_committed, last_logged, logged_batch
from ..._spark.query.checkpoints.settings import local_checkpoint_conf
from ..._spark.query.conf import scoped_sql_conf
from ..._spark.query.file_source import read_failure_text
from ..._spark.query.late_rows import OperatorInput, Reached, rows_reaching
from ..._spark.query.plan import LateRule
from ..._spark.query.providers import unload_providers
from ..._spark.query.python_traceback import without_pyspark_frames
from ..._spark.query.sink import CollectingSink, InjectedCrashError
from ..._spark.query.start import (
    failure_text,
    start_query,
    stop_query,
    stream_execution,
)
from ..._spark.query.watermark import ShadowWatermark, force_query_watermark, query_watermark_ms
from ...core.costs import count_batches, spending
from ...core.decoding import row_decoder
from ...core.query_names import ALONE_SUFFIX, QUERY_PREFIX
from ...core.records import BatchRecord, LazyComputed, TestRecord
from ...core.time import EPOCH, from_ms, to_ms
from ...errors import StepTimeoutError, TopologyError, hide_our_frames
from ...kafka.broker import Broker
from ...state.late import late_records
from ..oracle import OracleQuery, oracle_enabled
from ..topology import BuiltOutput, LandedInputs
from . import _batch_records as batch_records
from ._culprit import CulpritSearch, batch_failure, raising_record
from ._feed import SourceFeed
from ._piped import RecordQueue

__tracebackhide__ = hide_our_frames

_QUERY_SERIALS = itertools.count(1)


class QueryRunner:
    """One output's query, from its start to its stop: what the driver runs of it.

    It owns the query's Spark side (the JVM query, its manual clock, the driver's sink,
    the callback connections of its stream thread, the watermark it reads and forces),
    what its sources are handed (the feed: piped records queued until a trigger, the
    landed files, a failed batch's records kept for the retry), the injected crash armed
    for its next batch, and its :class:`OracleQuery` (the same output run by Spark alone)
    when the oracle is on. Each trigger it finishes becomes a :class:`BatchRecord`
    (``_batch_records``); it keeps no history: the driver's :class:`History` does."""

    def __init__(
        self, jvm: Jvm, built: BuiltOutput, checkpoint: str, trigger_interval_ms: int,
        timeout_s: float, sql_conf: Mapping[str, str] | None = None,
        broker: Broker | None = None,
    ) -> None:
        self._broker = broker or Broker()
        self.name = built.spec.name
        # Spark refuses two active queries with one name in a session, and two drivers of
        # one topology may be open at once: number them (the name survives restarts).
        self._query_name = f"{QUERY_PREFIX}{self.name}-{next(_QUERY_SERIALS)}"
        # The driver's checkpoint and idle-trigger settings first, so the user's sql_conf
        # can override them.
        self._sql_conf = {**local_checkpoint_conf(jvm), **_clock.IDLE_TRIGGER_CONF,
                          **(sql_conf or {})}
        self._oracle: OracleQuery | None = None
        if built.rebuild is not None and oracle_enabled():
            # The differential oracle: the same query run by Spark alone, fed the same
            # offsets through the streams (see oracle.py).
            with scoped_sql_conf(jvm.spark, self._sql_conf):
                self._oracle = OracleQuery(
                    jvm, built.rebuild, output=built.spec.name,
                    alone_of=self._query_name, checkpoint=checkpoint + ALONE_SUFFIX,
                    output_mode=built.spec.output_mode, timeout_s=timeout_s)
            built = replace(built, streams=self._oracle.tee(built.streams))
        self.built = built
        self.input_names = tuple(name for name, _ in built.streams)
        self._time_columns = dict(built.time_columns)
        self._streams = dict(built.streams)
        self._files = LandedInputs(built.sources, self._streams)
        self._jvm = jvm
        self.checkpoint = checkpoint
        self._interval_ms = trigger_interval_ms
        self._timeout_s = timeout_s
        self._schema_json = built.dataframe.schema.json()
        self._decode = row_decoder(built.dataframe.schema)
        self._feed = SourceFeed(built, self._streams)
        self._written = partial(batch_records.written, built.spec, self._broker, self._decode)
        if built.spec.writes is not None:  # what spark.read.format("kafka") reads in it
            built.spec.writes.topics = lambda: self._broker.kept
        # The records of a failed batch: a restart retries exactly that batch (its
        # offsets are in the offset log), before anything piped after the failure.
        self._retry: tuple[TestRecord, ...] | None = None
        self.last_batch: BatchRecord | None = None
        self.next_batch_id = 0
        self.clock: _clock.ManualClock | None = None
        self._callbacks: CallbackConnections | None = None
        self._sink: CollectingSink | None = None
        self._jquery: Any = None
        self._shadow: ShadowWatermark | None = None
        self._watermark_ms = 0
        self._forced_ms: int | None = None
        self._crash: str | None = None  # armed for the next batch (see arm_crash)
        self._attempt = 1  # the attempt of the next batch recorded (2 after a crash)
        self._resumed_watermark: datetime | None = None  # the watermark the checkpoint's
        # last batch ran with, for the late records of the first batch after an upgrade
        self.ended = False  # by itself: an availableNow or once query read its backlog

    # --- lifecycle ------------------------------------------------------------------------
    @property
    def running(self) -> bool:
        return self._jquery is not None

    @property
    def retry_pending(self) -> bool:
        """A batch failed and its retry has not run yet."""
        return self._retry is not None

    def start(self, now_ms: int) -> list[BatchRecord]:
        """Start (or restart from the checkpoint) at ``now_ms``, with every record piped
        so far handed to the sources. Spark runs the first trigger at once; returns the
        batch it ran, if any."""
        self.flush()
        self._feed.admitted.restarted()
        self.ended = False
        if self.built.spec.trigger == "availableNow":
            self._feed.admitted.fix_end()
        if self._retry is None:  # a retried batch reads its logged offsets, nothing new
            self._admit(now_ms)
        self._callbacks = CallbackConnections(self._jvm.gateway)
        self.clock = _clock.ManualClock(self._jvm, now_ms)
        self._sink = CollectingSink(self._jvm, then=self.built.spec.foreach_batch,
                                    crash=self._crash, on_call=self._callbacks.note)
        try:
            with scoped_sql_conf(self._jvm.spark, self._sql_conf), spending("queries"):
                self._jquery = self._start_query()
        except Exception as error:
            # Spark checks the query when it starts (unsupported operations, output modes).
            raise TopologyError(
                f"output {self.name!r}: Spark refused to start its query: "
                f"{java_error_text(error).strip().splitlines()[0]}"
            ) from error
        self._shadow = None
        ran = self.finish_trigger(0, first=True)
        if self._forced_ms is not None and (
            query_watermark_ms(stream_execution(self._jquery)) < self._forced_ms
        ):
            # The forced watermark reached no offset log entry (no batch ran after it):
            # put it back, so a restart keeps it.
            force_query_watermark(
                stream_execution(self._jquery), self._forced_ms, self.next_batch_id
            )
            if self._oracle is not None:
                self._oracle.force_watermark(self._forced_ms, self.next_batch_id)
        return ran

    @property
    def backfill(self) -> bool:
        """The query reads what it finds when it starts, then ends (``availableNow``,
        ``once``): :func:`~._backfill.run_backfill` runs it after :meth:`start`."""
        return self.built.spec.trigger in ("availableNow", "once")

    def backfill_ended(self) -> None:
        """The backfill read its backlog: stop the query, as Spark ends it."""
        self._feed.admitted.release_end()
        self.stop()
        self.ended = True

    def _start_query(self) -> Any:
        assert self.clock is not None and self._sink is not None
        return start_query(
            self._jvm,
            self.built.dataframe,
            name=self._query_name,
            checkpoint=self.checkpoint,
            output_mode=self.built.spec.output_mode,
            trigger_interval_ms=self._interval_ms,
            clock=self.clock.java,
            sink=self._sink.to_java(self._schema_json),
        )

    def stop(self) -> None:
        """Stop the query and close its clock (no callback can block after this).

        The JVM may hold the Python clock and sink objects a little longer; Py4J drops
        them from its proxy pool when the JVM garbage-collects them.
        """
        if self._jquery is None or self.clock is None:
            return
        jquery, self._jquery = self._jquery, None
        with spending("queries"):
            stop_query(jquery, self.clock, self._callbacks)
            unload_providers(self._jvm, jquery, self.checkpoint)
        # The stream thread has ended: nothing in the JVM calls the sink again.
        forget_proxies(self._jvm.gateway, self._sink)
        if self._oracle is not None:
            with scoped_sql_conf(self._jvm.spark, self._sql_conf):
                self._oracle.stop(self.checkpoint, self.last_batch)

    # --- upgrades ---------------------------------------------------------------------------
    def saved(self) -> dict[str, Any]:
        """What the driver knows of this query beyond Spark's files, saved beside them."""
        last = self.last_batch.watermark if self.last_batch is not None else None
        return {"name": self.name, "sources": list(self.built.sources),
                "next_batch_id": self.next_batch_id, "watermark_ms": self._watermark_ms,
                "forced_ms": self._forced_ms,
                "last_watermark_ms": None if last is None else to_ms(last)}

    def resume(self, saved: Mapping[str, Any], carried: QueryRunner | None = None) -> None:
        """Go on from the checkpoint copied into this query's folder (before the start).

        Each new memory stream is padded to where the checkpoint's source at its
        position stood (Spark gives offsets to sources by position), so the next batch
        reads just what is piped after. ``carried`` is the old version's runner of the
        same output, in an upgrade in place: its records not yet committed (a failed
        batch awaiting its retry, records handed over but not run) and its queued ones
        go on in this query, as a topic's records outlive a deploy."""
        if self._oracle is not None:  # Spark alone goes on from its own copy (see oracle.py)
            self._oracle.resume()
        committed = last_committed(self.checkpoint)
        last_id = last_logged(self.checkpoint)
        logged = None if last_id is None else logged_batch(self.checkpoint, last_id)
        old = set(carried.built.sources) if carried is not None else set()
        for position, input_name in enumerate(self.built.sources):
            stream = self._streams[input_name]
            if committed is not None and position < len(committed.offsets):
                stream.pad_to(committed.offsets[position])
            if carried is not None and input_name in old:
                old.discard(input_name)  # a source read twice (a self-union) is one stream
                lines = carried._feed.in_flight.lines_of(input_name, carried._feed.lines)
                if lines:
                    stream.add_json_lines(lines)
            if logged is not None and position < len(logged.offsets):
                stream.pad_to(logged.offsets[position])
        self.next_batch_id = int(saved["next_batch_id"])
        self._watermark_ms = int(saved["watermark_ms"])
        forced = saved.get("forced_ms")
        self._forced_ms = None if forced is None else int(forced)
        last = saved.get("last_watermark_ms")
        self._resumed_watermark = None if last is None else from_ms(int(last))
        if carried is None:
            return
        self.last_batch = carried.last_batch
        kept = set(self.input_names)
        self._feed.carry(carried._feed, kept)
        if carried._retry is not None:
            self._retry = tuple(r for r in carried._retry if r.topic in kept)

    # --- input ----------------------------------------------------------------------------
    def enqueue(
        self, input_name: str, lines: list[str], records: Sequence[TestRecord]
    ) -> None:
        self._feed.enqueue(input_name, lines, records)

    # --- late records ---------------------------------------------------------------------
    @property
    def resumed_watermark(self) -> datetime | None:
        """The watermark the saved checkpoint's last batch ran with (None unless the
        query went on from one): the first batch after compares late rows with it."""
        return self._resumed_watermark

    @property
    def late_known_per_batch(self) -> bool:
        """Each batch's late records follow from the piped records' event time (one
        stateful operator whose watermark is on an input's ``timestamp_column``); else
        they are evaluated on request (:meth:`reach`)."""
        rule = self.built.late_rule
        return isinstance(rule, LateRule) and rule.column in self._time_columns.values()

    def source_line(self, record: TestRecord) -> tuple[int, str] | None:
        """The source (its leaf's expression id) and JSON line ``record`` reached this
        query as (a landed file's source with no line); None if it did not reach it."""
        line, stream = self._feed.lines.get(id(record)), self._streams.get(record.topic)
        if line is None or stream is None:
            return None if stream is None else self._files.source_line(record)
        return stream.raw_expr_id, line

    def reach(
        self, operator_input: OperatorInput, lines: Mapping[int, Sequence[tuple[int, str]]]
    ) -> list[Reached] | str:
        """The rows reaching ``operator_input`` when the sources hold ``lines`` (the
        replay refuses an operator below which a file source is read: it cannot feed
        one; the operators of the query's other inputs are replayed)."""
        with spending("state reads"):
            reached = rows_reaching(self._jvm, operator_input, self.leaves(), lines)
        if isinstance(reached, str) and self._files and "does not feed" in reached:
            return self._files.why_untraced()  # the source it cannot feed reads files
        return reached

    def leaves(self) -> dict[int, JavaObject]:
        """Each memory stream's leaf attribute, by its expression id (for batch replays;
        a file source has none: a replay cannot feed it)."""
        streams = self._streams.values()
        return {s.raw_expr_id: s.raw_attribute for s in streams if s.raw_attribute is not None}

    def enqueue_empty(self, input_name: str) -> None:
        """Queue an offset of zero rows for ``input_name`` (a data batch with no rows)."""
        self._feed.enqueue_empty(input_name)

    def flush(self) -> None:
        """Hand everything piped since the last trigger to the sources (see
        :class:`SourceFeed`)."""
        self._feed.flush()

    @property
    def has_backlog(self) -> bool:
        return self._feed.has_backlog  # (see SourceFeed, for these two)

    @property
    def counts_every_trigger(self) -> bool:
        return self._feed.counts_every_trigger

    def _admit(self, now_ms: int) -> None:
        self._feed.admit(now_ms, read_all=self.built.spec.trigger == "once")

    # --- triggers -------------------------------------------------------------------------
    @property
    def next_trigger_ms(self) -> int | None:
        """When the idle query's next trigger is due."""
        assert self.clock is not None
        return self.clock.next_trigger_ms

    def clock_set(self, now_ms: int) -> int | None:
        """Move this query's clock; if a trigger comes due (the query wakes), the clock's
        count of waits it woke from (for :meth:`finish_trigger`), else None."""
        assert self.clock is not None
        due = self.clock.next_trigger_ms
        if due is not None and due <= now_ms:
            self._admit(now_ms)
        return self.clock.advance_to(now_ms)

    def clock_release(self) -> int:
        """Let this query run one trigger at the current time; returns the clock's count
        of waits it is released from (for :meth:`finish_trigger`)."""
        assert self.clock is not None
        self._admit(self.clock.now_ms)
        return self.clock.release_once()

    def watermark_ms(self) -> int | None:
        return self._watermark_ms if self.built.has_watermark else None

    def force_watermark(self, ms: int) -> None:
        """Set the query's watermark (and the shadow's) to ``ms``; the query is idle."""
        force_query_watermark(stream_execution(self._jquery), ms, self.next_batch_id)
        if self._oracle is not None:
            self._oracle.force_watermark(ms, self.next_batch_id)
        if self._shadow is not None:
            self._shadow.force(ms)
        self._watermark_ms = ms
        self._forced_ms = ms

    def finish_trigger(self, wait_calls_before: int, *, first: bool = False
                       ) -> list[BatchRecord]:
        """Wait until the trigger(s) let run have finished; return the batches they ran.
        ``first``: the trigger Spark runs when the query starts."""
        assert self.clock is not None and self._sink is not None
        try:
            with spending("batches"):
                self.clock.await_idle(
                    wait_calls_before + 1, self._jquery.isActive, self._timeout_s
                )
        except _clock.QueryInactiveError:
            if self._oracle is not None:
                self._oracle.drop("a batch failed" if not isinstance(
                    self._sink.error, InjectedCrashError) else "a crash injected by the test")
            if self._retry is None:
                self._retry = tuple(self._feed.in_flight)  # builds them: reported in the error
            if isinstance(self._sink.error, InjectedCrashError):
                return self._recover_from_crash()
            cause = without_pyspark_frames(
                (read_failure_text if self._files else java_error_text)(self._sink.error).strip()
                if self._sink.error is not None
                else failure_text(self._jquery) or "the query stopped without an error"
            )
            read = (*self._retry, *self._files.of_batch(self.checkpoint, self.next_batch_id))
            def culprit() -> CulpritSearch:  # never a landed file: say why none is named
                found = raising_record(self._jvm, self, cause, read, self._sql_conf)
                note = self._files.no_culprit(read) if found.why_none is not None else None
                return found if note is None else replace(found, why_none=note)

            raise batch_failure(self.name, self.next_batch_id, cause, read, culprit,
                                from_app=self.built.spec.from_app) from None
        except _clock.ClockWaitTimeoutError:
            raise StepTimeoutError(
                f"the query of output {self.name!r} did not finish batch {self.next_batch_id} "
                f"within {self._timeout_s:.0f} s; raise the driver's timeout= if the batch is "
                "legitimately slow"
            ) from None
        ran = [(self._record(batch_id, rows), rows) for batch_id, rows in self._sink.take_batches()]
        count_batches(len(ran))
        if self._oracle is not None:
            with scoped_sql_conf(self._jvm.spark, self._sql_conf):
                if first:
                    assert self.clock is not None
                    self._oracle.start(self.clock.now_ms, ran)
                else:
                    self._oracle.after_trigger(ran)
        return [record for record, _ in ran]

    # --- injected crashes ------------------------------------------------------------------
    def arm_crash(self, kind: str) -> None:
        """Fail the next batch ``"before_sink"`` or ``"before_commit"``; the runner then
        restarts the query from its checkpoint, and Spark runs the same batch again."""
        self._crash = kind
        if self._sink is not None:
            self._sink.crash = kind

    def _recover_from_crash(self) -> list[BatchRecord]:
        """What Spark's recovery does after the crash: restart from the checkpoint, which
        runs the uncommitted batch again (same id, same offsets) at once. The crashed
        attempt is recorded before the run that follows it. Kafka and foreachBatch sinks
        are at-least-once: what the crashed attempt wrote stays."""
        assert self._sink is not None and self.clock is not None
        kind, self._crash = self._crash or "before_commit", None
        crashed = self._crashed_attempt(kind)
        now_ms = self.clock.now_ms
        self.stop()
        self._attempt = crashed.attempt + 1
        replayed = self.start(now_ms)  # the same offsets: a data batch if the replay is one
        again = next((b for b in replayed if b.batch_id == crashed.batch_id), None)
        return [replace(crashed, new_data=again.new_data if again else crashed.new_data),
                *replayed]

    def _crashed_attempt(self, kind: str) -> BatchRecord:
        assert self._sink is not None and self.clock is not None
        spec, batch_id = self.built.spec, self.next_batch_id
        rows = self._sink.crashed if spec.kafka or spec.foreach_batch else None
        self._sink.crashed = None
        read = tuple(self._retry or ())
        if self._files:
            read = (*read, *self._files.of_batch(self.checkpoint, batch_id))
        processing_time = from_ms(self.clock.now_ms)
        running = (self.last_batch.watermark_after if self.last_batch is not None
                   else self._resumed_watermark or EPOCH) if self.built.has_watermark else None
        attempt, self._attempt = self._attempt, 1
        return batch_records.crashed(
            self.name, batch_id, kind, processing_time=processing_time, watermark=running,
            read=read, outputs=self._written(rows or [], batch_id, processing_time),
            attempt=attempt)

    def _record(self, batch_id: int, rows: list[Any]) -> BatchRecord:
        assert self.clock is not None
        attempt, self._attempt = self._attempt, 1
        has_wm = self.built.has_watermark
        if has_wm and self._shadow is None:
            self._shadow = ShadowWatermark(
                self._jvm, stream_execution(self._jquery), self._watermark_ms
            )
        progress = batch_records.progress_of(self._jquery, self.name, batch_id)
        num_input, new_data = int(progress.get("numInputRows", 0)), batch_records.new_data(progress)
        consumed = RecordQueue()
        if self._retry is not None:  # the retried batch reads what the failed one read
            if num_input:
                consumed.add(self._retry)
                self._feed.in_flight.drop_first(len(self._retry))
            self._retry = None
        elif num_input:
            consumed = self._feed.in_flight.take()
        if self._files and new_data:  # the files Spark's log says the batch read
            consumed.add(self._files.of_batch(self.checkpoint, batch_id))
        processing_time = from_ms(self.clock.now_ms)
        if self._shadow is not None:  # only queries with a watermark have one
            self._watermark_ms = self._shadow.after_batch()
        operators = tuple(progress.get("stateOperators") or ())
        late: LazyComputed | None = None
        rule = self.built.late_rule
        if self.late_known_per_batch:
            assert isinstance(rule, LateRule)
            previous = (self.last_batch.watermark if self.last_batch is not None
                        else self._resumed_watermark)
            # Worked out on the first read: everything it needs is fixed now, and a batch
            # nobody asks about then builds neither its records nor its late records.
            late = LazyComputed(partial(
                late_records, rule, consumed, self._time_columns, batch_id, previous or EPOCH,
                str(operators[0].get("operatorName")) if operators else None))
        record = batch_records.committed(
            self.name, batch_id, progress, processing_time=processing_time,
            watermark_after=from_ms(self._watermark_ms) if has_wm else None, consumed=consumed,
            outputs=self._written(rows, batch_id, processing_time), late=late,
            attempt=attempt)
        self.last_batch = record
        self.next_batch_id = batch_id + 1
        return record
