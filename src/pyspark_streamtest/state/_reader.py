"""Turns Spark's state data source rows into the views of :mod:`pyspark_streamtest.state`."""

from __future__ import annotations

from typing import Any, Literal

from pyspark.sql import SparkSession
from pyspark.sql.types import StructType, TimestampType

from .._spark.state import StoreMetadata, read_metadata, read_state, state_reader_options
from ..core._values import row_decoder
from ..errors import StateStoreError
from .views import StateEntry, StateStoreView, Window, WindowStoreView

Shape = Literal["generic", "key_value", "window", "session", "join"]


def store_metadata(spark: SparkSession, checkpoint: str, output: str) -> list[StoreMetadata]:
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


def _is_window(dtype: Any) -> bool:
    return (
        isinstance(dtype, StructType)
        and [f.name for f in dtype.fields] == ["start", "end"]
        and all(isinstance(f.dataType, TimestampType) for f in dtype.fields)
    )


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
) -> StateStoreView:
    options = state_reader_options(batch_id, operator_id, store_name, join_side, state_var)
    if timers:
        options["readRegisteredTimers"] = "true"
    schema, rows = read_state(spark, checkpoint, options)
    key_type = schema["key"].dataType
    value_type = schema["value"].dataType if "value" in schema.fieldNames() else None
    decode = row_decoder(schema)
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
    for raw in rows:
        row = decode(raw)
        key_dict = row["key"] or {}
        if "value" in row:
            value = row["value"]
        elif "list_element" in row:  # transformWithState list state: one row per element
            value = row["list_element"]
        else:  # map state (user_map_key, user_map_value), registered timers, ...
            value = {k: v for k, v in row.items() if k not in ("key", "partition_id")}
        window = None
        if shape == "window" and window_field is not None:
            w = key_dict[window_field]
            window = Window(w["start"], w["end"])
        if shape == "session" and session_value_window is not None and value is not None:
            w = value[session_value_window]
            window = Window(w["start"], w["end"])
            value = {k: v for k, v in value.items()
                     if k != session_value_window and k not in key_dict}
        if shape in ("window", "session"):
            key_values = tuple(key_dict[n] for n in kept_key)
        else:
            key_values = tuple(key_dict[n] for n in key_names)
        if isinstance(value, dict):
            if set(value) == {"__dummy__"}:  # dropDuplicates keeps keys only
                value = None
            elif shape == "key_value" and "groupState" in value:
                value = value["groupState"]
        entries.append(StateEntry(
            key=key_values[0] if len(key_values) == 1 else key_values,
            value=value,
            window=window,
            partition=int(row.get("partition_id") or 0),
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
        frame=lambda: spark.createDataFrame(rows, schema).drop("partition_id"),
    )
