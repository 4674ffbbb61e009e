"""Read-only views of a query's state stores (the face is :mod:`pyspark_streamtest.state`)."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import TYPE_CHECKING, Any, Literal

from ..core.time import aware_datetime, to_micros, utc_from_micros
from ..errors import InvalidArgumentError, StateStoreError, hide_our_frames

__tracebackhide__ = hide_our_frames

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

__all__ = [
    "OperatorDescription",
    "QueryDescription",
    "StateEntry",
    "StateStoreView",
    "StateVariableDescription",
    "TopologyDescription",
    "Window",
    "WindowStoreView",
]


@dataclass(frozen=True, order=True, init=False, repr=False)
class Window:
    """A time window ``[start, end)``, kept exactly as Spark keeps it: ``start_us`` and
    ``end_us`` are its bounds in microseconds since the epoch (Spark's timestamp unit),
    and equality, order and hashing use them. ``start`` and ``end`` are the same bounds
    as aware UTC datetimes.

    Make one from aware datetimes, ``Window(start, end)``, or from microseconds,
    ``Window.from_micros(start_us, end_us)``.

    **Past year 9999.** Spark's timestamps end at 9999-12-31T23:59:59.999999Z, but the
    windows it computes may end later: an event at 9999-12-31T23:59:59Z in a 1-hour
    window is in ``[9999-12-31T23:00Z, 10000-01-01T00:00Z)``, and a session window ends
    a gap after its last event. No Python datetime holds such a bound: the window keeps
    it exactly in ``end_us`` (here ``253402300800000000``, which ``repr`` shows as
    ``end_us=253402300800000000``), and reading ``end`` raises
    :class:`~pyspark_streamtest.errors.TimeOutOfRangeError`. The same holds for a
    ``start`` before 0001-01-01. Compare such a window with
    ``Window.from_micros(...)``.
    """

    start_us: int
    end_us: int

    def __init__(self, start: datetime, end: datetime) -> None:
        object.__setattr__(self, "start_us", to_micros(aware_datetime(start, "window start")))
        object.__setattr__(self, "end_us", to_micros(aware_datetime(end, "window end")))

    @classmethod
    def from_micros(cls, start_us: int, end_us: int) -> Window:
        """The window with these bounds, in microseconds since the epoch."""
        window = cls.__new__(cls)
        object.__setattr__(window, "start_us", int(start_us))
        object.__setattr__(window, "end_us", int(end_us))
        return window

    @property
    def start(self) -> datetime:
        """The first instant of the window (aware UTC)."""
        return utc_from_micros(self.start_us, "this window's start (see start_us)")

    @property
    def end(self) -> datetime:
        """The instant after the window's last (aware UTC); past year 9999 this raises
        :class:`~pyspark_streamtest.errors.TimeOutOfRangeError`: read ``end_us``."""
        return utc_from_micros(self.end_us, "this window's end (see end_us)")

    def __repr__(self) -> str:
        """``Window(start=datetime(...), end=datetime(...))``; a bound no datetime holds
        shows as its microseconds (``end_us=...``)."""
        return f"Window({_bound('start', self.start_us)}, {_bound('end', self.end_us)})"


def _bound(name: str, micros: int) -> str:
    try:
        return f"{name}={utc_from_micros(micros, name)!r}"
    except ValueError:  # TimeOutOfRangeError
        return f"{name}_us={micros}"


@dataclass(frozen=True)
class StateEntry:
    """One entry of a state store: ``key`` (bare value or tuple; a time window inside a
    key is a :class:`Window`), ``value`` (a dict, or None where the store keeps keys
    only), the ``window`` of window and session stores, and the shuffle ``partition``
    that holds it. Unpacks as ``(key, value)``: ``for key, value in store.all()``.

    ``ttl_expiration`` is set for an entry of a ``transformWithState(InPandas)`` state
    variable with a TTL (value, list or map state alike): the instant (aware UTC, exact
    to the millisecond Spark keeps) from which the entry is expired; ``value`` is then
    the value itself, as for a variable without TTL. Spark removes expired entries
    in a batch whose processing time has reached their expiration; until then a read
    still lists them. None for every other entry.

    ``expires_at`` is set for an entry of a ``dropDuplicatesWithinWatermark`` store
    (whose ``value`` is then None, as ``dropDuplicates`` keeps keys only): Spark's
    ``expiresAtMicros`` as an aware UTC instant, the key's event time plus the
    watermark delay; Spark evicts the key in a batch whose watermark has passed it.
    None for every other entry."""

    key: Any
    value: Any
    window: Window | None = None
    partition: int = 0
    ttl_expiration: datetime | None = None
    expires_at: datetime | None = None

    def __iter__(self) -> Iterator[Any]:
        yield self.key
        yield self.value


def _sort_key(value: Any) -> tuple[Any, ...]:
    """Orders keys of mixed shapes deterministically (None first, then by type name)."""
    if isinstance(value, tuple):
        return (1, "tuple", tuple(_sort_key(v) for v in value))
    if value is None:
        return (0, "", 0)
    if isinstance(value, Mapping):
        return (1, "dict", tuple(sorted((k, _sort_key(v)) for k, v in value.items())))
    return (1, type(value).__name__, value)


class StateStoreView:
    """A read-only snapshot of one state store (or join side, or state variable).

    ``output``, ``operator_id``, ``store_name``, ``state_var`` and ``batch_id`` say what
    was read: the state as of the end of batch ``batch_id`` (None when the query had
    committed no batch yet: the view is then empty).
    """

    def __init__(
        self,
        entries: Sequence[StateEntry],
        *,
        output: str,
        operator_id: int,
        store_name: str | None,
        state_var: str | None,
        batch_id: int | None,
        key_names: tuple[str, ...],
        frame: Callable[[], DataFrame] | None = None,
    ) -> None:
        self._frame = frame
        hashable = (replace(e, key=_hashable(e.key)) for e in entries)
        self._entries = tuple(
            sorted(hashable, key=lambda e: (_sort_key(e.key), _sort_key(e.window), e.partition))
        )
        self.output = output
        self.operator_id = operator_id
        self.store_name = store_name
        self.state_var = state_var
        self.batch_id = batch_id
        self.key_names = key_names
        by_key: dict[Any, list[StateEntry]] = {}
        for entry in self._entries:
            by_key.setdefault(_hashable(entry.key), []).append(entry)
        self._by_key = by_key

    # --- reads ----------------------------------------------------------------------------
    def to_dataframe(self) -> DataFrame:
        """The entries as a Spark DataFrame, as Spark's state data source
        (``spark.read.format("statestore")``) returns them for this batch and store:
        columns ``key`` and ``value`` (structs in Spark's state schema; the other
        columns the source gives for list, map and timer reads), without
        ``partition_id``. For ``chispa.assert_df_equality`` or
        ``pyspark.testing.assertDataFrameEqual`` (compare ignoring row order: the
        source reads partitions in no promised order).

        Raises :class:`~pyspark_streamtest.errors.StateStoreError` for the empty view of
        a query that has run no batch (Spark has no state schema to give yet)."""
        if self._frame is None:
            raise StateStoreError(
                f"output {self.output!r} has run no batch yet, so its state has no schema "
                "to build a DataFrame with; run a batch first (the view itself is empty)"
            )
        return self._frame()

    def get(self, key: Any, default: Any = None) -> Any:
        """The value stored for ``key``, or ``default`` when there is none. Raises
        :class:`~pyspark_streamtest.errors.InvalidArgumentError` (a ``ValueError``) if
        the key holds several entries (use :meth:`get_all`)."""
        found = self._by_key.get(self._normalize(key))
        if not found:
            return default
        if len(found) > 1:
            raise InvalidArgumentError(
                f"key {key!r} holds {len(found)} entries in this store (join buffers, list "
                "or map state, or several windows); use get_all(key)"
            )
        return found[0].value

    def get_all(self, key: Any) -> list[Any]:
        """Every value stored for ``key`` (possibly none), in a deterministic order."""
        return [e.value for e in self._by_key.get(self._normalize(key), [])]

    def entries(self, key: Any) -> list[StateEntry]:
        """Every entry stored for ``key`` (possibly none), in :meth:`get_all`'s order:
        the values with their window, partition and ``ttl_expiration``."""
        return list(self._by_key.get(self._normalize(key), []))

    def all(self) -> list[StateEntry]:
        """Every entry, ordered by key (then window)."""
        return list(self._entries)

    def range(self, from_key: Any = None, to_key: Any = None) -> list[StateEntry]:
        """Entries whose key is between ``from_key`` and ``to_key``, both inclusive (as
        Kafka's ``KeyValueStore.range``); None leaves that end open."""
        low = None if from_key is None else _sort_key(self._normalize(from_key))
        high = None if to_key is None else _sort_key(self._normalize(to_key))
        return [
            e for e in self._entries
            if (low is None or _sort_key(e.key) >= low)
            and (high is None or _sort_key(e.key) <= high)
        ]

    def prefix(self, prefix: Any) -> list[StateEntry]:
        """Entries whose key starts with ``prefix``: a string prefix of a string key, or
        the leading columns (a value or a tuple) of a multi-column key."""
        if isinstance(prefix, str):
            one = [e for e in self._entries if isinstance(e.key, str) and e.key.startswith(prefix)]
            if one or not any(isinstance(e.key, tuple) for e in self._entries):
                return one
        lead = prefix if isinstance(prefix, tuple) else (prefix,)
        return [
            e for e in self._entries
            if isinstance(e.key, tuple) and e.key[: len(lead)] == lead
        ]

    def keys(self) -> list[Any]:
        """The distinct keys, ordered."""
        return [found[0].key for found in self._by_key.values()]

    def items(self) -> list[tuple[Any, Any]]:
        """(key, value) pairs, ordered (a key with several entries appears once each)."""
        return [(e.key, e.value) for e in self._entries]

    def to_dict(self) -> dict[Any, Any]:
        """``{key: value}``; raises :class:`~pyspark_streamtest.errors.InvalidArgumentError`
        (a ``ValueError``) if a key holds several entries."""
        for found in self._by_key.values():
            if len(found) > 1:
                raise InvalidArgumentError(
                    f"to_dict() needs one entry per key, but key {found[0].key!r} holds "
                    f"{len(found)} (join buffers, list or map state, or several windows); "
                    "use all() for every entry, or get_all(key)")
        return {found[0].key: found[0].value for found in self._by_key.values()}

    def __len__(self) -> int:
        return len(self._entries)

    def __iter__(self) -> Iterator[Any]:
        return iter(self.keys())

    def __contains__(self, key: object) -> bool:
        return self._normalize(key) in self._by_key

    def _normalize(self, key: Any) -> Any:
        if isinstance(key, Mapping):
            missing = [n for n in self.key_names if n not in key]
            if missing:
                raise KeyError(f"key is missing column(s) {missing}; the key columns are "
                               f"{list(self.key_names)}")
            values = tuple(key[n] for n in self.key_names)
            return _hashable(values[0] if len(values) == 1 else values)
        if isinstance(key, list):
            key = tuple(key)
        return _hashable(key)

    def __repr__(self) -> str:
        what = f"state var {self.state_var!r}" if self.state_var else f"store {self.store_name!r}"
        return (
            f"<{type(self).__name__} output={self.output!r} operator={self.operator_id} {what} "
            f"batch={self.batch_id} entries={len(self)}>"
        )


class WindowStoreView(StateStoreView):
    """A window or session store: each entry's ``key`` is the grouping key without the
    window, and its ``window`` is the time window (or session) it aggregates."""

    def fetch(
        self, key: Any, time_from: datetime | None = None, time_to: datetime | None = None
    ) -> list[tuple[Window, Any]]:
        """``(window, value)`` for ``key``'s windows that start within ``[time_from,
        time_to]`` (inclusive, None = open), ordered by window, as Kafka's
        ``WindowStore.fetch(key, timeFrom, timeTo)``."""
        found = self._by_key.get(self._normalize(key), [])
        low = None if time_from is None else to_micros(aware_datetime(time_from, "time_from"))
        high = None if time_to is None else to_micros(aware_datetime(time_to, "time_to"))
        return [
            (e.window, e.value) for e in found
            if e.window is not None
            and (low is None or e.window.start_us >= low)
            and (high is None or e.window.start_us <= high)
        ]

    def windows(self) -> list[Window]:
        """Every distinct window held, ordered."""
        return sorted({e.window for e in self._entries if e.window is not None})


def _hashable(value: Any) -> Any:
    """A key as a dict key: lists and tuples as tuples, a window struct (aware ``start``
    and ``end``) as a :class:`Window`, another struct as its ``(name, value)`` pairs,
    sorted by name."""
    if isinstance(value, (list, tuple)):
        return tuple(_hashable(v) for v in value)
    if isinstance(value, Mapping):
        if set(value) == {"start", "end"} and all(
            isinstance(v, datetime) and v.utcoffset() is not None for v in value.values()
        ):
            return Window(value["start"], value["end"])
        return tuple(sorted((k, _hashable(v)) for k, v in value.items()))
    return value


# --- describe() ---------------------------------------------------------------------------------
StateKind = Literal["value", "list", "map"]
"""A state variable's kind: ``getValueState``, ``getListState``, ``getMapState``."""
TimerKind = Literal["processing time", "event time"]
"""The timers an operator keeps, by its time mode."""


@dataclass(frozen=True)
class StateVariableDescription:
    """One state variable of a ``transformWithState(InPandas)`` operator, as Spark
    recorded it in the checkpoint.

    ``name`` is the name the processor gave it (``handle.getValueState("total", ...)``):
    read it with ``get_state_store(output, state_var=name)``. ``kind`` is ``"value"``,
    ``"list"`` or ``"map"``. ``key_schema`` is the grouping key's schema;
    ``value_schema`` the variable's value schema (a list's element; a map's value);
    ``user_key_schema`` a map's key schema (None for value and list state). Schemas are
    Spark's ``simpleString()`` (``struct<n:bigint>``); a schema Spark refused to give
    is None. ``ttl`` says whether the variable has a TTL: Spark records that, not the
    duration (each entry's expiration is read as
    :attr:`StateEntry.ttl_expiration`)."""

    name: str
    kind: StateKind
    key_schema: str | None
    value_schema: str | None
    user_key_schema: str | None = None
    ttl: bool = False

    def __str__(self) -> str:
        ttl = " with TTL" if self.ttl else ""
        lines = [f"state variable {self.name!r}: {self.kind} state{ttl}"]
        for label, schema in (("key", self.key_schema), ("map key", self.user_key_schema),
                              ("value", self.value_schema)):
            if schema is not None:
                lines.append(f"  {label + ':':<9} {schema}")
        return "\n".join(lines)


@dataclass(frozen=True)
class OperatorDescription:
    """One stateful operator of a query: Spark's operator id and name (e.g.
    ``stateStoreSave`` for aggregations, ``dedupe``, ``symmetricHashJoin``,
    ``sessionWindowStateStoreSaveExec``, ``applyInPandasWithState``,
    ``transformWithStateInPandasExec``, ``transformWithStateInPySparkExec``), its state
    store names, and the key and value schemas of its default store (None until a batch
    has committed state, on PySpark 3.5, and for ``transformWithState(InPandas)``,
    whose state variables each have their own schema).

    For ``transformWithState(InPandas)`` (PySpark 4.0+): ``time_mode`` as Spark records
    it (``"ProcessingTime"``, ``"EventTime"``, or ``"NoTime"`` for the ``"None"`` time
    mode), ``state_variables`` (see
    :class:`StateVariableDescription`, ordered by name), and ``timers``: which timers
    the operator keeps (``"processing time"`` or ``"event time"``; None for time mode
    ``"None"``, which has none), read with ``get_state_store(output, timers=True)``.
    ``note`` says what could not be shown and why (None when nothing is missing).

    For a stream-stream join (``symmetricHashJoin``, PySpark 4.0+), whose state is two
    sides of four stores, ``join_sides`` gives each side's key and value schemas as its
    rows are read with ``get_join_store(output, side)``: ``(side, key, value)``."""

    operator_id: int
    kind: str
    store_names: tuple[str, ...]
    key_schema: str | None = None
    value_schema: str | None = None
    join_sides: tuple[tuple[str, str, str], ...] = ()
    time_mode: str | None = None
    state_variables: tuple[StateVariableDescription, ...] = ()
    timers: TimerKind | None = None
    note: str | None = None

    def state_variable(self, name: str) -> StateVariableDescription:
        """The state variable ``name``; KeyError naming the ones there are if none."""
        for variable in self.state_variables:
            if variable.name == name:
                return variable
        raise KeyError(f"operator {self.operator_id} has no state variable {name!r}; its "
                       f"variables are {[v.name for v in self.state_variables]}")

    def lines(self, output: str) -> list[str]:
        """The operator as printed by :class:`QueryDescription` (``output`` names the
        query in the hint to read the timers)."""
        lines = [f"operator {self.operator_id}: {self.kind} "
                 f"(stores: {', '.join(self.store_names) or '-'})"]
        if self.key_schema is not None:
            lines.append(f"  key:   {self.key_schema}")
        if self.value_schema is not None:
            lines.append(f"  value: {self.value_schema}")
        for side, key, value in self.join_sides:
            lines.append(f"  {side + ' key:':<12} {key}")
            lines.append(f"  {side + ' value:':<12} {value}")
        if self.time_mode is not None:
            timers = (f"{self.timers} (read: get_state_store({output!r}, timers=True))"
                      if self.timers else "none")
            lines.append(f"  time mode: {self.time_mode}; timers: {timers}")
        for variable in self.state_variables:
            lines.extend("  " + line for line in str(variable).splitlines())
        if self.note is not None:
            lines.append(f"  ({self.note})")
        return lines


@dataclass(frozen=True)
class QueryDescription:
    """One output's query: its output mode, watermarks and stateful operators.

    ``planned`` is False before the query's first batch: Spark plans the stateful
    operators then, so ``operators`` is empty and says nothing yet (the text says so)."""

    output: str
    output_mode: str
    kafka: bool
    watermarks: tuple[tuple[str, str], ...]
    """(event-time column, delay) per ``withWatermark``."""
    operators: tuple[OperatorDescription, ...] = field(default=())
    planned: bool = True

    def __str__(self) -> str:
        sink = "Kafka sink" if self.kafka else "sink"
        lines = [f"Query {self.output!r} ({sink}, output mode {self.output_mode})"]
        if self.watermarks:
            lines.append("  watermarks: " + ", ".join(
                f"{column} delayed by {delay}" for column, delay in self.watermarks))
        else:
            lines.append("  watermarks: none")
        if not self.planned:
            lines.append("  stateful operators: not known before the first batch (Spark "
                         "plans them then)")
        elif not self.operators:
            lines.append("  stateless")
        for op in self.operators:
            lines.extend("  " + line for line in op.lines(self.output))
        return "\n".join(lines)


@dataclass(frozen=True)
class TopologyDescription:
    """Every query of a topology, printable like Kafka's ``Topology#describe()``."""

    queries: tuple[QueryDescription, ...]

    def query(self, output: str) -> QueryDescription:
        for query in self.queries:
            if query.output == output:
                return query
        raise KeyError(f"no query for output {output!r}")

    def __str__(self) -> str:
        return "Topology\n" + "\n".join(str(q) for q in self.queries)
