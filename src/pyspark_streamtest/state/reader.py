"""Turns Spark's state data source rows into the views of :mod:`pyspark_streamtest.state`.

Timestamps are read exactly and without PySpark's conversion: the read selects every
TIMESTAMP as its microseconds since the epoch (``unix_micros``) before collecting, so a
bound Python cannot hold (a window ending at 10000-01-01, which Spark computes for the
last hour of 9999) and the first day of year 1 (which PySpark's local-time conversion
cannot make) are read too. Window structs in keys, and a session store's session window,
become :class:`~pyspark_streamtest.state.Window` values (exact microseconds); any other
timestamp becomes an aware UTC datetime, or a
:class:`~pyspark_streamtest.errors.TimeOutOfRangeError` naming it if no datetime can hold
it. ``to_dataframe()`` rebuilds the rows read with Spark's own schema.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Any, Literal, cast

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql.types import ArrayType, BinaryType, DataType, MapType, StructType, TimestampType

from .._spark.connect import functions as F
from .._spark.query.memory_stream import with_exact_schema
from .._spark.query.state import StoreMetadata, read_metadata, state_reader_options
from .._spark.query.tws_metadata import (
    TTL_EXPIRATION_FIELD,
    TTL_VALUE_FIELD,
    RecordedOperator,
    is_transform_with_state,
    recorded_operator,
    ttl_inner_type,
    variable_schema,
)
from ..core.costs import spending
from ..core.time import utc_from_micros
from ..errors import InvalidArgumentError, StateStoreError, hide_our_frames
from .views import (
    OperatorDescription,
    StateEntry,
    StateKind,
    StateStoreView,
    StateVariableDescription,
    TimerKind,
    Window,
    WindowStoreView,
)

__tracebackhide__ = hide_our_frames

Shape = Literal["generic", "key_value", "window", "session", "join"]


def store_metadata(spark: SparkSession, checkpoint: str, output: str) -> list[StoreMetadata]:
    with spending("state reads"):
        stores = read_metadata(spark, checkpoint)
    if not stores:
        raise StateStoreError(
            f"output {output!r} has no stateful operator: its query is stateless and keeps no "
            "state (aggregations, dropDuplicates, stream-stream joins and "
            "(flat)MapGroupsWithState / transformWithState keep state)"
        )
    return stores


_SESSION, _AGGREGATION, _JOIN = "sessionWindowStateStoreSaveExec", "stateStoreSave", (
    "symmetricHashJoin"
)


def _fits(shape: Shape, kind: str) -> bool:
    """Whether an operator of Spark's name ``kind`` can hold a store of ``shape``."""
    if shape == "session":
        return kind == _SESSION
    if shape == "window":
        return kind == _AGGREGATION
    if shape == "join":
        return kind == _JOIN
    if shape == "key_value":
        return kind not in (_SESSION, _JOIN)
    return True


def choose_operator(
    stores: list[StoreMetadata], output: str, operator_id: int | None, shape: Shape = "generic"
) -> int:
    """The operator to read: ``operator_id`` if given, else the only one that fits
    ``shape`` (a dedup before a session window leaves one session operator)."""
    ids = sorted({s.operator_id for s in stores})
    names = {i: next(s.operator_name for s in stores if s.operator_id == i) for i in ids}
    listed = ", ".join(f"{i} ({names[i]})" for i in ids)
    if operator_id is None:
        fitting = [i for i in ids if _fits(shape, names[i])] or ids
        if len(fitting) == 1:
            return fitting[0]
        which = "" if len(fitting) == len(ids) else (
            f" ({len(fitting)} of them can hold this read: "
            + ", ".join(str(i) for i in fitting) + ")")
        raise StateStoreError(
            f"output {output!r} has {len(ids)} stateful operators: {listed}{which}; pass "
            "operator_id= (see driver.describe())"
        )
    if operator_id not in ids:
        raise StateStoreError(
            f"output {output!r} has no stateful operator {operator_id}; its operators are "
            f"{listed}"
        )
    return operator_id


def recorded_operators(stores: list[StoreMetadata]) -> dict[int, RecordedOperator | None]:
    """Each transformWithState operator's id, with what Spark recorded about it (None:
    nothing recorded)."""
    return {s.operator_id: recorded_operator(s.operator_properties)
            for s in stores if is_transform_with_state(s.operator_name)}


def _variables_text(recorded: dict[int, RecordedOperator | None]) -> str:
    return "; ".join(
        f"operator {i}: " + ("nothing recorded" if rec is None else
                             ", ".join(repr(v.name) for v in rec.variables) or "none")
        for i, rec in recorded.items()) or "no operator is a transformWithState"


def choose_for_variable(
    stores: list[StoreMetadata], output: str, operator_id: int | None,
    state_var: str | None, timers: bool,
) -> int | None:
    """The transformWithState operator holding ``state_var`` (or, with ``timers``,
    keeping timers) when ``operator_id`` is None: the only one that does. Raises
    :class:`InvalidArgumentError` when several do (pass ``operator_id=``) and
    :class:`StateStoreError`, listing the variables there are, when none does; also when
    the operator ``operator_id`` has no such variable or timers. None when there is
    nothing to choose by (no ``state_var`` and no ``timers``, no transformWithState
    operator, or an operator with nothing recorded: Spark's read then decides)."""
    recorded = recorded_operators(stores)
    if (state_var is None and not timers) or not recorded:
        return None
    what = f"state variable {state_var!r}" if state_var is not None else "timers"

    def holds(rec: RecordedOperator) -> bool:
        return rec.variable(state_var) is not None if state_var is not None else rec.has_timers

    if operator_id is not None:
        rec = recorded.get(operator_id)
        if rec is not None and not holds(rec):
            raise StateStoreError(
                f"output {output!r} operator {operator_id} has no {what} (time mode "
                f"{rec.time_mode}); its state variables are "
                + (", ".join(repr(v.name) for v in rec.variables) or "none"))
        return None
    holders = [i for i, rec in recorded.items() if rec is not None and holds(rec)]
    if len(holders) > 1:
        names = {s.operator_id: s.operator_name for s in stores}
        raise InvalidArgumentError(
            f"output {output!r}: {len(holders)} operators hold {what}: "
            + ", ".join(f"{i} ({names[i]})" for i in holders)
            + "; pass operator_id= to say which (see driver.describe())")
    if holders and all(rec is not None for rec in recorded.values()):
        return holders[0]
    if not holders and all(rec is not None for rec in recorded.values()):
        raise StateStoreError(
            f"output {output!r} has no {what}; the state variables are: "
            f"{_variables_text(recorded)} (see driver.describe())")
    return None


_KINDS = {"ValueState": "value", "ListState": "list", "MapState": "map"}
_VALUE_COLUMNS = {"value": "value", "list": "list_element", "map": "user_map_value"}


def describe_transform_with_state(
    spark: SparkSession, checkpoint: str, *, batch_id: int, stores: list[StoreMetadata],
) -> OperatorDescription:
    """A transformWithState operator (``stores``: its rows of the state metadata) as of
    ``batch_id``: its time mode, timers and state variables, each with its schemas read
    through the state data source (one schema read per variable, no job)."""
    first = stores[0]
    names = tuple(s.store_name for s in stores)
    recorded = recorded_operator(first.operator_properties)
    if recorded is None:
        return OperatorDescription(
            first.operator_id, first.operator_name, names,
            note="Spark recorded no time mode or state variables for this operator in "
                 "the checkpoint's state metadata; read a variable with "
                 "get_state_store(output, state_var=..., operator_id=...)")
    variables, refused = [], []
    for var in recorded.variables:
        kind = cast(StateKind | None, _KINDS.get(var.spark_type))
        if kind is None:
            refused.append(f"{var.name!r} is a {var.spark_type}, which this version does "
                           "not describe")
            continue
        with spending("state reads"):
            schema = variable_schema(spark, checkpoint, batch_id=batch_id,
                                     operator_id=first.operator_id, state_var=var.name)
        if isinstance(schema, str):
            refused.append(f"Spark gives no schema of {var.name!r}: {schema}")
            variables.append(StateVariableDescription(var.name, kind, None, None,
                                                      ttl=var.ttl_enabled))
            continue
        value_type = schema[_VALUE_COLUMNS[kind]].dataType
        if var.ttl_enabled:
            value_type = ttl_inner_type(value_type) or value_type
        variables.append(StateVariableDescription(
            name=var.name,
            kind=kind,
            key_schema=schema["key"].dataType.simpleString(),
            value_schema=value_type.simpleString(),
            user_key_schema=(schema["user_map_key"].dataType.simpleString()
                             if kind == "map" else None),
            ttl=var.ttl_enabled,
        ))
    timers: TimerKind | None = None
    if recorded.has_timers:
        timers = "event time" if recorded.time_mode.lower() == "eventtime" else "processing time"
    return OperatorDescription(
        first.operator_id, first.operator_name, names,
        time_mode=recorded.time_mode,
        state_variables=tuple(variables),
        timers=timers,
        note="; ".join(refused) or None,
    )


def _is_window(dtype: Any) -> bool:
    return (
        isinstance(dtype, StructType)
        and [f.name for f in dtype.fields] == ["start", "end"]
        and all(isinstance(f.dataType, TimestampType) for f in dtype.fields)
    )


# --- timestamps as exact microseconds ----------------------------------------------------
def _has_timestamp(dtype: DataType) -> bool:
    if isinstance(dtype, TimestampType):
        return True
    if isinstance(dtype, StructType):
        return any(_has_timestamp(f.dataType) for f in dtype.fields)
    if isinstance(dtype, ArrayType):
        return _has_timestamp(dtype.elementType)
    if isinstance(dtype, MapType):
        return _has_timestamp(dtype.keyType) or _has_timestamp(dtype.valueType)
    return False


def _map_timestamps(
    column: Column, dtype: DataType, leaf: Callable[[Column], Column], nullable: bool = True
) -> Column:
    """``column`` with ``leaf`` applied to every TIMESTAMP inside it (structs rebuilt,
    arrays and maps transformed); parts without a timestamp are left as they are."""
    if not _has_timestamp(dtype):
        return column
    if isinstance(dtype, TimestampType):
        return leaf(column)
    if isinstance(dtype, StructType):
        rebuilt = F.struct(*[
            _map_timestamps(column.getField(f.name), f.dataType, leaf, f.nullable).alias(f.name)
            for f in dtype.fields
        ])
        return F.when(column.isNull(), F.lit(None)).otherwise(rebuilt) if nullable else rebuilt
    if isinstance(dtype, ArrayType):
        element = dtype.elementType
        return F.transform(column, lambda x: _map_timestamps(x, element, leaf))
    assert isinstance(dtype, MapType)
    key_type, value_type = dtype.keyType, dtype.valueType
    if _has_timestamp(key_type):
        column = F.transform_keys(column, lambda k, _: _map_timestamps(k, key_type, leaf))
    return F.transform_values(column, lambda _, v: _map_timestamps(v, value_type, leaf))


def _exact_decoder(dtype: DataType, path: str, windows: bool) -> Callable[[Any], Any] | None:
    """A function making one collected value (timestamps as microseconds) plain Python,
    or None when it already is. With ``windows``, window structs become Windows.
    ``path`` names the value in errors."""
    if isinstance(dtype, TimestampType):
        return lambda micros: utc_from_micros(micros, path)
    if isinstance(dtype, StructType):
        if windows and _is_window(dtype):
            return lambda w: Window.from_micros(w[0], w[1])
        plan = [(f.name, _exact_decoder(f.dataType, f"{path}.{f.name}", windows))
                for f in dtype.fields]
        return lambda row: {
            name: (v if decode is None or v is None else decode(v))
            for (name, decode), v in zip(plan, row, strict=True)
        }
    if isinstance(dtype, ArrayType):
        inner = _exact_decoder(dtype.elementType, f"{path}[]", windows)
        if inner is None:
            return list
        return lambda items: [None if x is None else inner(x) for x in items]
    if isinstance(dtype, MapType):
        key = _exact_decoder(dtype.keyType, f"{path} key", windows) or (lambda k: k)
        val = _exact_decoder(dtype.valueType, f"{path}[]", windows) or (lambda v: v)
        return lambda items: {key(k): (None if v is None else val(v)) for k, v in items.items()}
    if isinstance(dtype, BinaryType):
        return bytes
    return None


def _read_exact(
    spark: SparkSession, checkpoint: str, options: dict[str, str], *, session: bool,
    output: str,
) -> tuple[StructType, list[dict[str, Any]], Callable[[], DataFrame]]:
    """(Spark's schema of the store, its rows decoded, a function making the rows a
    DataFrame with that schema). Timestamps are collected as microseconds."""
    with spending("state reads"):
        frame = spark.read.format("statestore").options(**options).load(checkpoint)
        schema = frame.schema
        exact = frame.select(*[
            _map_timestamps(frame[f.name], f.dataType, F.unix_micros).alias(f.name)
            for f in schema.fields
        ])
        exact_schema = exact.schema
        raw = exact.collect()
    plan = [
        (f.name, _exact_decoder(f.dataType, f"the state of output {output!r}: {f.name}",
                                windows=f.name == "key" or (session and f.name == "value")))
        for f in schema.fields
    ]
    rows = [
        {name: (v if decode is None or v is None else decode(v))
         for (name, decode), v in zip(plan, row, strict=True)}
        for row in raw
    ]

    def dataframe() -> DataFrame:
        restored = spark.createDataFrame(raw, exact_schema).select(*[
            _map_timestamps(F.col(f.name), f.dataType, F.timestamp_micros, f.nullable)
            .alias(f.name)
            for f in schema.fields
        ])
        if restored.schema != schema:  # a rebuilt struct's nullability: Spark's schema
            restored = with_exact_schema(spark, restored, schema.json())
        return restored.drop("partition_id")

    return schema, rows, dataframe


def read_view(
    spark: SparkSession,
    checkpoint: str,
    *,
    output: str,
    operator_id: int,
    store_name: str | None,
    state_var: str | None,
    join_side: str | None,
    batch_id: int,
    shape: Shape,
    timers: bool = False,
    ttl: bool = False,
    to_user: Callable[[DataFrame], DataFrame] | None = None,
) -> StateStoreView:
    """A view of one store. With ``ttl`` (a state variable Spark recorded with a TTL)
    each entry's value is taken out of Spark's ``{value, ttlExpirationMs}`` struct, and
    its expiration becomes the entry's ``ttl_expiration``. ``to_user`` turns the view's
    DataFrame (of ``spark``) into the one the user gets (a Connect one over Connect)."""
    options = state_reader_options(batch_id, operator_id, store_name, join_side, state_var)
    if timers:
        options["readRegisteredTimers"] = "true"
    schema, rows, dataframe = _read_exact(spark, checkpoint, options,
                                          session=shape == "session", output=output)
    ttl_column = None
    if ttl:
        ttl_column = next((c for c in ("value", "list_element", "user_map_value")
                           if c in schema.fieldNames()), None)
        if ttl_column is None or ttl_inner_type(schema[ttl_column].dataType) is None:
            raise StateStoreError(
                f"output {output!r} operator {operator_id}: state variable {state_var!r} "
                f"has a TTL, but Spark's state schema ({schema.simpleString()}) has no "
                f"{{{TTL_VALUE_FIELD}, {TTL_EXPIRATION_FIELD}}} struct to read it from")
    key_type = schema["key"].dataType
    value_type = schema["value"].dataType if "value" in schema.fieldNames() else None
    assert isinstance(key_type, StructType)
    key_names = tuple(key_type.fieldNames())
    window_field = next((f.name for f in key_type.fields if _is_window(f.dataType)), None)
    session_value_window = None
    if isinstance(value_type, StructType):
        session_value_window = next(
            (f.name for f in value_type.fields if _is_window(f.dataType)), None
        )
    if shape == "window" and window_field is None:
        raise StateStoreError(
            f"output {output!r} operator {operator_id}: its state key "
            f"({key_type.simpleString()}) has no time window; use get_state_store, or "
            "get_session_store for session windows"
        )
    if shape == "session" and ("sessionStartTime" not in key_names or not session_value_window):
        raise StateStoreError(
            f"output {output!r} operator {operator_id} does not hold session windows (key "
            f"{key_type.simpleString()}); use get_window_store or get_state_store"
        )
    kept_key = [n for n in key_names if n != window_field and
                not (shape == "session" and n == "sessionStartTime")]
    entries: list[StateEntry] = []
    for row in rows:
        key_dict = row["key"] or {}
        expiration = None
        if ttl_column is not None and row[ttl_column] is not None:
            wrapped = row[ttl_column]
            row = {**row, ttl_column: wrapped[TTL_VALUE_FIELD]}
            expiration = _expiration(wrapped[TTL_EXPIRATION_FIELD], output)
        if "value" in row:
            value = row["value"]
        elif "list_element" in row:  # transformWithState list state: one row per element
            value = row["list_element"]
        else:  # map state (user_map_key, user_map_value), registered timers, ...
            value = {k: v for k, v in row.items() if k not in ("key", "partition_id")}
        window = None
        if shape == "window" and window_field is not None:
            window = key_dict[window_field]
        if shape == "session" and session_value_window is not None and value is not None:
            window = value[session_value_window]
            value = {k: v for k, v in value.items()
                     if k != session_value_window and k not in key_dict}
        if shape in ("window", "session"):
            key_values = tuple(key_dict[n] for n in kept_key)
        else:
            key_values = tuple(key_dict[n] for n in key_names)
        expires_at = None
        if isinstance(value, dict):
            if set(value) == {"__dummy__"}:  # dropDuplicates keeps keys only
                value = None
            elif set(value) == {"expiresAtMicros"}:  # dropDuplicatesWithinWatermark
                micros = value["expiresAtMicros"]
                expires_at = None if micros is None else utc_from_micros(
                    micros, f"output {output!r}: a deduplicated key's expiresAtMicros")
                value = None
            elif shape == "key_value" and "groupState" in value:
                value = value["groupState"]
        entries.append(StateEntry(
            key=key_values[0] if len(key_values) == 1 else key_values,
            value=value,
            window=window,
            partition=int(row.get("partition_id") or 0),
            ttl_expiration=expiration,
            expires_at=expires_at,
        ))
    view_class = WindowStoreView if shape in ("window", "session") else StateStoreView
    return view_class(
        entries,
        output=output,
        operator_id=operator_id,
        store_name=store_name,
        state_var=state_var,
        batch_id=batch_id,
        key_names=tuple(kept_key) if shape in ("window", "session") else key_names,
        frame=dataframe if to_user is None else (lambda: to_user(dataframe())),
    )


def _expiration(ms: int | None, output: str) -> datetime | None:
    """A TTL'd entry's ``ttlExpirationMs`` as an aware UTC datetime (None stays None)."""
    if ms is None:
        return None
    return utc_from_micros(int(ms) * 1000, f"the state of output {output!r}: ttlExpirationMs")
