"""The driver's state verbs: state store views, operator descriptions, late and
duplicate records and state-row checks. :class:`~pyspark_streamtest.TopologyTestDriver`
inherits them; the work is done by
:class:`~pyspark_streamtest.driver._state_access.StateAccess`."""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import AbstractContextManager
from typing import Any

from ..core.records import DuplicateRecord, LateRecord
from ..errors import InvalidArgumentError, hide_our_frames
from ..state.views import StateStoreView, TopologyDescription, WindowStoreView
from ._state_access import StateAccess

__tracebackhide__ = hide_our_frames

__all__ = ["StateVerbs"]


class StateVerbs:
    """Reading what the queries hold. Reading never changes a query."""

    _state: StateAccess

    def _check_open(self) -> None:  # the driver's
        raise NotImplementedError

    def _spark_calls(self) -> AbstractContextManager[None]:  # the driver's
        raise NotImplementedError

    def _read(self, output: str, **options: Any) -> StateStoreView:
        with self._spark_calls():
            return self._state.read(output, **options)

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

        A variable with a TTL reads the same way: each entry's value is the value itself
        (a map entry's ``user_map_value`` too), and the entry's
        :attr:`~pyspark_streamtest.state.StateEntry.ttl_expiration` is the aware UTC
        instant it expires at (``store.entries(key)``); ``to_dataframe()`` keeps Spark's
        own ``{value, ttlExpirationMs}`` struct.

        Without ``operator_id``, ``state_var`` (and ``timers=True``) reads the operator
        that holds that variable (keeps timers) when exactly one does, as Spark recorded
        the variables in the checkpoint; when several do it raises
        :class:`~pyspark_streamtest.errors.InvalidArgumentError` naming them (pass
        ``operator_id=``), and when none does
        :class:`~pyspark_streamtest.errors.StateStoreError` listing the variables there
        are. Before the query's first batch the view is empty. Reading never changes the
        query.
        """
        self._check_open()
        return self._read(output, operator_id=operator_id, store_name=store_name,
                                state_var=state_var, batch_id=batch_id, timers=timers)

    def get_key_value_store(
        self, output: str, *, operator_id: int | None = None, batch_id: int | None = None,
    ) -> StateStoreView:
        """The state of an aggregation without windows (``groupBy(k).agg(...)``), a
        ``dropDuplicates`` (values None) or an ``applyInPandasWithState`` (values are the
        user's state, the ``groupState`` struct), as ``key -> value``."""
        self._check_open()
        return self._read(output, operator_id=operator_id, batch_id=batch_id,
                                shape="key_value")

    def get_window_store(
        self, output: str, *, operator_id: int | None = None, batch_id: int | None = None,
    ) -> WindowStoreView:
        """The state of a windowed aggregation (``groupBy(window(...), k)``): entries keyed
        by the other grouping columns, each with its :class:`~pyspark_streamtest.state.
        Window` (start and end as datetimes). ``fetch(key, time_from, time_to)`` reads a
        key's windows, as Kafka's ``WindowStore.fetch``."""
        self._check_open()
        view = self._read(output, operator_id=operator_id, batch_id=batch_id,
                                shape="window")
        assert isinstance(view, WindowStoreView)
        return view

    def get_session_store(
        self, output: str, *, operator_id: int | None = None, batch_id: int | None = None,
    ) -> WindowStoreView:
        """The state of a session-window aggregation (``groupBy(session_window(...), k)``):
        the open sessions per key, each with its window (first event to last event plus
        the gap) and its aggregate values."""
        self._check_open()
        view = self._read(output, operator_id=operator_id, batch_id=batch_id,
                                shape="session")
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
            raise InvalidArgumentError(f"side must be 'left' or 'right', got {side!r}")
        self._check_open()
        return self._read(output, operator_id=operator_id, join_side=side,
                                batch_id=batch_id, shape="join")

    def late_records(self, output: str) -> list[LateRecord]:
        """Every input record ``output``'s query has dropped as late so far, oldest first,
        each with the batch that dropped it, the watermark it was compared with and the
        operator that dropped it (see :class:`LateRecord`).

        Spark 3.4+ drops a row by the watermark of the *previous* batch, inside the
        stateful operator: ``dropDuplicates`` (and ``applyInPandasWithState`` with
        event-time timeouts, and ``transformWithState(InPandas)`` in the ``EventTime``
        time mode: in ``ProcessingTime`` and ``None`` it keeps every row) when its event
        time is at or behind it; a windowed
        aggregation per window, when the window ended at or before it (a sliding-window
        record can be dropped from one window and counted in another: ``partial``); a
        session window when its end (event time + gap) is; a stream-stream join when the
        row's own side's event-time column is. When the watermark is on an input's
        ``timestamp_column`` the driver applies that rule to each piped record as the
        batch runs. When the event time is computed in the query (parsed from a Kafka
        value), or several stateful operators or a join are chained, the first call
        evaluates the query's plan below each operator as one batch job over the piped
        records and checks the result against Spark's per-operator counts
        (``BatchRecord.state_metrics``; for aggregations Spark counts rows after
        partial aggregation, so it can be lower).

        Raises :class:`InvalidArgumentError` (a ``ValueError``) with the reason when the
        driver cannot tell exactly: an operator fed by another
        stateful operator's output that dropped rows, a plan node between the source and
        the operator that cannot be replayed, or a count that disagrees with Spark's.
        """
        self._check_open()
        return self._state.late_records(output)

    def duplicate_records(self, output: str) -> list[DuplicateRecord]:
        """Every input record ``output``'s deduplications (``dropDuplicates``,
        ``dropDuplicatesWithinWatermark``) have dropped as duplicates so far, oldest
        first, each with its batch, its key, the earlier record it repeats and the
        operator (see :class:`DuplicateRecord`).

        Spark drops a row as a duplicate when its key is in the operator's state (kept
        from an earlier batch and not yet evicted) or met earlier in the same batch;
        rows the operator drops as late are not duplicates (see :meth:`late_records`).
        The driver evaluates the query's plan below each deduplication that dropped rows
        (one batch job over the piped records), reads the keys its state held before each
        batch with drops (Spark's state data source: PySpark 4.0+), and checks the count
        per batch against Spark's ``numDroppedDuplicateRows``
        (``BatchRecord.state_metrics``, ``rows_dropped_as_duplicates``). No drops, no
        work.

        Raises :class:`InvalidArgumentError` (a ``ValueError``) with the reason when the
        driver cannot tell exactly: a deduplication fed by another stateful operator's
        output, a plan node it cannot replay, one key met in two input partitions in one
        batch (Spark keeps whichever its task reads first), or a count that disagrees
        with Spark's; :class:`UnsupportedFeatureError` before PySpark 4.0.
        """
        self._check_open()
        with self._spark_calls():
            return self._state.duplicate_records(output)

    def assert_num_state_rows(
        self,
        output: str,
        *,
        total: int | Sequence[int],
        updated: int | Sequence[int] | None = None,
        removed: int | Sequence[int] | None = None,
        dropped_by_watermark: int | Sequence[int] | None = None,
        batch_id: int | None = None,
    ) -> None:
        """Assert the state metrics of ``output``'s query exactly as Spark's own
        ``StateStoreMetricsTest.assertNumStateRows`` does.

        ``total`` is ``numRowsTotal`` after the query's last batch. ``updated``,
        ``removed`` and ``dropped_by_watermark`` (``numRowsUpdated``, ``numRowsRemoved``,
        ``numRowsDroppedByWatermark``) are **summed** over the query's batches since the
        previous successful ``assert_num_state_rows`` of this output, or since the queries
        started or were restarted (:meth:`start`, :meth:`restart`), whichever is later:
        a second call with no batch in between sees zeros. As in Spark, batches with
        another number of stateful operators than the last one are left out of the sums.
        Each value is one number per stateful operator in operator order, or a single
        number for a query with one; leave out what you do not check.

        ``batch_id`` (not in Spark) checks one batch's own numbers instead: its total and
        what that batch alone updated, removed and dropped; it does not move the point
        the next call sums from. On a mismatch the ``AssertionError`` shows expected and
        actual per operator and which batches were summed.
        """
        __tracebackhide__ = True
        self._check_open()
        self._state.assert_num_state_rows(
            output, total=total, updated=updated, removed=removed,
            dropped_by_watermark=dropped_by_watermark, batch_id=batch_id)

    def describe(self) -> TopologyDescription:
        """Each query's output mode, watermarks (column and delay) and stateful operators
        (Spark's operator id and name, state store names, key and value schemas),
        printable like Kafka's ``Topology#describe()``. A ``transformWithState(InPandas)``
        operator shows its time mode, its timers and every state variable (name, kind,
        key, value and map-key schemas, TTL): see
        :class:`~pyspark_streamtest.state.OperatorDescription`. Operators are known once a
        batch has run (Spark plans them then; before, the description says so, with
        ``planned`` False); schemas and state variables need PySpark 4.0+."""
        self._check_open()
        with self._spark_calls():
            return self._state.describe()
