"""Reading what the queries hold: state stores, operator descriptions, state-row
counts and the records dropped as late. Reading never changes a query."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import datetime

from pyspark.sql import DataFrame, SparkSession

from .._spark.query.late_rows import dedup_operators, watermark_inputs
from .._spark.query.plan import LateRule
from .._spark.query.state import read_metadata, read_state_schema, state_reader_options
from .._spark.query.tws_metadata import is_transform_with_state
from ..core.features import Feature, require_feature, supported_features
from ..core.records import (
    BatchRecord,
    DuplicateRecord,
    LateRecord,
    Lazy,
    StateOperatorMetrics,
    field_known,
    raw_field,
    settle,
)
from ..core.time import EPOCH
from ..errors import InvalidArgumentError, StateStoreError, hide_our_frames
from ..state.duplicates import evaluate_duplicates
from ..state.late_evaluated import evaluate_event_times, evaluate_late
from ..state.reader import (
    Shape,
    choose_for_variable,
    choose_operator,
    describe_transform_with_state,
    read_view,
    recorded_operators,
    store_metadata,
)
from ..state.views import (
    OperatorDescription,
    QueryDescription,
    StateStoreView,
    TopologyDescription,
    WindowStoreView,
)
from .queries import History, Queries, QueryRunner, names_text

__tracebackhide__ = hide_our_frames

__all__ = ["StateAccess"]


class StateAccess:
    """State reads for one driver's queries (Spark's state data source, PySpark 4.0+)."""

    def __init__(self, spark: SparkSession, queries: Queries, history: History,
                 to_user: Callable[[DataFrame], DataFrame] | None = None) -> None:
        self._spark = spark
        self._to_user = to_user
        """Makes a state view's DataFrame the user's (a Connect one over Connect)."""
        self._queries = queries
        self._history = history
        self._checked: dict[str, int] = {}  # per output: batches already summed

    def read(
        self,
        output: str,
        *,
        operator_id: int | None = None,
        store_name: str | None = None,
        state_var: str | None = None,
        join_side: str | None = None,
        batch_id: int | None = None,
        shape: Shape = "generic",
        timers: bool = False,
    ) -> StateStoreView:
        """A view of one store of ``output``'s query as of ``batch_id`` (default: the
        last batch run); an empty view before the first batch."""
        runner = self._queries.runner(output)
        require_feature(self._spark, Feature.STATE_STORE_READS)
        last = runner.last_batch
        if batch_id is not None and (
            isinstance(batch_id, bool) or not isinstance(batch_id, int) or batch_id < 0
        ):
            raise InvalidArgumentError(
                f"batch_id must be a batch id (an int >= 0), got {batch_id!r}"
            )
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
        by_variable = choose_for_variable(stores, output, operator_id, state_var, timers)
        chosen = by_variable if by_variable is not None else choose_operator(
            stores, output, operator_id, shape)
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
        if (state_var is not None or timers) and "transformWithState" not in kind:
            asked = f"state_var={state_var!r}" if state_var is not None else "timers=True"
            raise StateStoreError(
                f"output {output!r} operator {chosen} is {kind}: {asked} reads a state "
                "variable (or the timers) of transformWithState(InPandas) only; read this "
                "operator's store without it, e.g. get_state_store(output)"
            )
        names = {s.store_name for s in stores if s.operator_id == chosen}
        if store_name is not None and store_name not in names:
            raise StateStoreError(
                f"output {output!r} operator {chosen} has no store {store_name!r}; its stores "
                f"are {names_text(names)}"
            )
        recorded = recorded_operators(stores).get(chosen)
        variable = recorded.variable(state_var) if recorded and state_var is not None else None
        return read_view(
            self._spark, runner.checkpoint, output=output, operator_id=chosen,
            store_name=store_name, state_var=state_var, join_side=join_side,
            batch_id=last.batch_id if batch_id is None else batch_id, shape=shape,
            timers=timers, ttl=variable is not None and variable.ttl_enabled,
            to_user=self._to_user,
        )

    def describe(self) -> TopologyDescription:
        queries = []
        for runner in self._queries.runners:
            spec = runner.built.spec
            queries.append(QueryDescription(
                output=runner.name,
                output_mode=spec.output_mode,
                kafka=spec.kafka is not None,
                watermarks=runner.built.watermarks,
                operators=self._operators(runner),
                planned=runner.last_batch is not None,
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
            if is_transform_with_state(mine[0].operator_name):
                # state in named variables, each with its own schemas: no one store schema
                described.append(describe_transform_with_state(
                    self._spark, runner.checkpoint, batch_id=runner.last_batch.batch_id,
                    stores=mine))
                continue
            sides: list[tuple[str, str, str]] = []
            batch_id = runner.last_batch.batch_id
            if "default" in names:
                schema = read_state_schema(self._spark, runner.checkpoint, state_reader_options(
                    batch_id, operator_id, "default", None, None))
                key_schema = schema["key"].dataType.simpleString()
                value_schema = schema["value"].dataType.simpleString()
            elif mine[0].operator_name == "symmetricHashJoin":
                for side in ("left", "right"):
                    schema = read_state_schema(self._spark, runner.checkpoint,
                                               state_reader_options(batch_id, operator_id,
                                                                    None, side, None))
                    sides.append((side, schema["key"].dataType.simpleString(),
                                  schema["value"].dataType.simpleString()))
            described.append(OperatorDescription(
                operator_id, mine[0].operator_name, names, key_schema, value_schema,
                join_sides=tuple(sides)))
        return tuple(described)

    def late_records(self, output: str) -> list[LateRecord]:
        runner = self._queries.runner(output)
        if runner.late_known_per_batch:
            return self._history.late_records(runner.name)
        built = runner.built
        operators = built.late_operators if built.has_watermark else built.late_rule
        if isinstance(operators, (str, LateRule)):
            raise InvalidArgumentError(
                f"cannot tell which records output {output!r} drops as late: {operators}")
        pending: list[tuple[BatchRecord, datetime]] = []
        # A batch compares late rows with the previous batch's watermark; the first one
        # after a saved checkpoint with that checkpoint's last batch's.
        previous: datetime | None = runner.resumed_watermark
        for batch in self._history.of_output(runner.name):
            if not field_known(batch, "late_records"):
                pending.append((batch, previous or EPOCH))
            previous = batch.watermark
        if pending:  # one Spark job per operator input, for every batch not evaluated yet
            found = evaluate_late(output, operators, pending, runner.source_line, runner.reach)
            for batch, _ in pending:
                settle(batch, "late_records", found[id(batch)])  # in place: held ones too
        return self._history.late_records(runner.name)

    def duplicate_records(self, output: str) -> list[DuplicateRecord]:
        runner = self._queries.runner(output)
        batches: list[tuple[BatchRecord, datetime]] = []
        previous: datetime | None = runner.resumed_watermark  # as late_records compares
        for batch in self._history.of_output(runner.name):
            batches.append((batch, previous or EPOCH))
            previous = batch.watermark

        def held(operator_id: int, batch_id: int) -> StateStoreView:
            return self.read(output, operator_id=operator_id, batch_id=batch_id)

        return evaluate_duplicates(output, dedup_operators(runner.built.dataframe), batches,
                                   runner.source_line, runner.reach, held)

    def fill_event_times(self, output: str) -> None:
        """Evaluate the event time of every record ``output``'s query read where it is
        computed in the query (one Spark job per ``withWatermark``), into the batches'
        ``input_event_times``; nothing to do where a record's timestamp is its event
        time. Raises :class:`InvalidArgumentError` when it cannot be evaluated."""
        runner = self._queries.runner(output)
        if runner.late_known_per_batch or not runner.built.has_watermark:
            return
        pending = [b for b in self._history.of_output(runner.name)
                   if not field_known(b, "input_event_times")]
        if not pending:
            return
        found = evaluate_event_times(pending, watermark_inputs(runner.built.dataframe),
                                     runner.source_line, runner.reach)
        if isinstance(found, str):
            raise InvalidArgumentError(
                f"cannot evaluate the event time of output {output!r}'s records: {found}")
        for batch in pending:  # in place: a batch a test holds reads them too
            settle(batch, "input_event_times", found[id(batch)])

    def fill_later(self, name: str, output: str) -> None:
        """A batch's lazy field ``name`` (``input_event_times`` or ``late_records``) is
        read for the first time: evaluate it for ``output``'s batches, as
        :meth:`fill_event_times` and :meth:`late_records` do. What is not evaluated
        (nothing to evaluate, or it cannot be) reads None, and is not tried again on
        the next read."""
        try:
            if name == "input_event_times":
                self.fill_event_times(output)
            elif not self._queries.runner(output).late_known_per_batch:
                self.late_records(output)
        finally:
            for batch in self._history.of_output(output):
                raw = raw_field(batch, name)
                if isinstance(raw, Lazy) and not raw.resolved:
                    settle(batch, name, None)

    def restarted(self) -> None:
        """The queries (re)started: :meth:`assert_num_state_rows` sums from here on, as
        Spark's check does for a new run of a query."""
        self._checked = {name: len(self._history.of_output(name)) for name in self._queries.names}

    def assert_num_state_rows(
        self,
        output: str,
        *,
        total: int | Sequence[int],
        updated: int | Sequence[int] | None,
        removed: int | Sequence[int] | None,
        dropped_by_watermark: int | Sequence[int] | None,
        batch_id: int | None,
    ) -> None:
        __tracebackhide__ = True
        runner = self._queries.runner(output)
        batches = self._history.of_output(runner.name)
        if not batches:
            raise AssertionError(f"output {output!r} has run no batch yet, so it has no state "
                                 "rows to check")
        if batch_id is not None:
            found = [b for b in batches if b.batch_id == batch_id]
            if not found:
                raise AssertionError(
                    f"output {output!r} has no batch {batch_id} (batches run: "
                    f"{batches[0].batch_id}..{batches[-1].batch_id})"
                )
            last, summed = found[0], [found[0]]
        else:
            last = batches[-1]
            operators = len(last.state_metrics)
            summed = [b for b in batches[self._checked.get(runner.name, 0):]
                      if len(b.state_metrics) == operators]
        metrics = last.state_metrics
        count = len(metrics)
        actual = {
            "total": [m.rows_total for m in metrics],
            "updated": _sums(summed, count, lambda m: m.rows_updated),
            "removed": _sums(summed, count, lambda m: m.rows_removed),
            "dropped_by_watermark": _sums(summed, count, lambda m: m.rows_dropped_by_watermark),
        }
        wanted = {name: _as_list(value) for name, value in (
            ("total", total), ("updated", updated), ("removed", removed),
            ("dropped_by_watermark", dropped_by_watermark)) if value is not None}
        if all(actual[name] == want for name, want in wanted.items()):
            if batch_id is None:
                self._checked[runner.name] = len(batches)
            return
        if batch_id is not None:
            span = f"batch {last.batch_id} alone"
        elif not summed:
            span = "no batch (none ran since the previous check)"
        elif len(summed) == 1:
            span = f"batch {summed[0].batch_id}"
        else:
            span = f"batches {summed[0].batch_id}..{summed[-1].batch_id}"
        lines = [f"state rows of output {output!r} differ (total after batch "
                 f"{last.batch_id}; updated, removed and dropped summed over {span}):",
                 ("  operator                       " + "".join(
                     f"{name + ' (exp/act)':<30}" for name in wanted)).rstrip()]
        for index in range(max(count, *(len(w) for w in wanted.values()))):
            name = metrics[index].operator_name if index < count else "(none)"
            cells, mark = "", ""
            for key, want in wanted.items():
                expected_cell, actual_cell = _at(want, index), _at(actual[key], index)
                cells += f"{expected_cell + '/' + actual_cell:<30}"
                mark = mark or ("  <-" if expected_cell != actual_cell else "")
            lines.append(f"  {index}: {name:<27} {cells}".rstrip() + mark)
        raise AssertionError("\n".join(lines))


def _as_list(value: int | Sequence[int]) -> list[int]:
    return [value] if isinstance(value, int) else list(value)


def _sums(
    batches: Sequence[BatchRecord], count: int, metric: Callable[[StateOperatorMetrics], int]
) -> list[int]:
    return [sum(metric(b.state_metrics[i]) for b in batches) for i in range(count)]


def _at(values: Sequence[int], index: int) -> str:
    return str(values[index]) if index < len(values) else "-"
