"""What Spark records about a transformWithState operator (PySpark 4.0 and later).

At each batch a ``transformWithState`` / ``transformWithStateInPandas`` operator writes
its metadata into the checkpoint (``state/<operator>/_metadata/v2/<batch>``), which
``format("state-metadata")`` gives as the ``operatorProperties`` JSON: the time mode,
the output mode and every state variable with its type (``ValueState``, ``ListState``,
``MapState``, and ``TimerState`` for the timers) and whether a TTL is enabled. Spark
does not record a TTL's duration: only each entry's expiration, kept beside the entry.
The schemas of one variable are those of the state data source's read of it
(``format("statestore")`` with ``stateVarName``, or ``readRegisteredTimers`` for the
timers), which Spark takes from the checkpoint's state schema file.

This is the same on 4.0 (``transformWithStateInPandasExec`` only) and on 4.1 to 4.3
(also row-based ``transformWithState``): nothing here branches on the version. A
checkpoint's operator with no ``operatorProperties`` (the column absent, or null) reads
as None: nothing recorded.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from pyspark.errors import PySparkException
from pyspark.sql import SparkSession
from pyspark.sql.types import DataType, StructType

from ...errors import hide_our_frames
from .state import read_state_schema, state_reader_options

__tracebackhide__ = hide_our_frames

__all__ = [
    "RecordedOperator",
    "RecordedVariable",
    "is_transform_with_state",
    "recorded_operator",
    "ttl_inner_type",
    "variable_schema",
]

TTL_VALUE_FIELD = "value"
"""The field of a TTL'd entry's struct that holds the user's value."""
TTL_EXPIRATION_FIELD = "ttlExpirationMs"
"""The field of a TTL'd entry's struct that holds its expiration (ms since the epoch)."""
TIMER_STATE = "TimerState"


def is_transform_with_state(operator_name: str) -> bool:
    """Whether Spark's operator name is a transformWithState's: ``transformWithStateExec``,
    ``transformWithStateInPandasExec`` (4.0+), ``transformWithStateInPySparkExec``
    (4.1+, row-based and pandas)."""
    return "transformWithState" in operator_name


@dataclass(frozen=True)
class RecordedVariable:
    """One state variable as Spark recorded it: its name, Spark's type (``ValueState``,
    ``ListState``, ``MapState``) and whether it has a TTL."""

    name: str
    spark_type: str
    ttl_enabled: bool


@dataclass(frozen=True)
class RecordedOperator:
    """A transformWithState operator as Spark recorded it: its time mode and output mode
    as Spark spells them (``"ProcessingTime"``, ``"EventTime"``, ``"NoTime"``;
    ``"Update"``, ``"Append"``), its state variables by name, and whether it keeps
    timers (a ``TimerState`` variable: Spark records one where the time mode allows
    timers)."""

    time_mode: str
    output_mode: str
    variables: tuple[RecordedVariable, ...]
    has_timers: bool

    def variable(self, name: str) -> RecordedVariable | None:
        return next((v for v in self.variables if v.name == name), None)


def recorded_operator(properties: str | None) -> RecordedOperator | None:
    """The operator recorded in ``operatorProperties`` JSON, or None when there is none or
    it has not the layout above (another operator's properties, a future layout)."""
    if not properties:
        return None
    try:
        found: Any = json.loads(properties)
    except ValueError:
        return None
    if not isinstance(found, dict) or not isinstance(found.get("stateVariables"), list):
        return None
    variables, has_timers = [], False
    for item in found["stateVariables"]:
        if not isinstance(item, dict) or "stateName" not in item:
            return None
        spark_type = str(item.get("stateVariableType", "?"))
        if spark_type == TIMER_STATE:
            has_timers = True
            continue
        variables.append(RecordedVariable(
            str(item["stateName"]), spark_type, bool(item.get("ttlEnabled", False))))
    return RecordedOperator(
        time_mode=str(found.get("timeMode", "?")),
        output_mode=str(found.get("outputMode", "?")),
        variables=tuple(sorted(variables, key=lambda v: v.name)),
        has_timers=has_timers,
    )


def variable_schema(
    spark: SparkSession,
    checkpoint: str,
    *,
    batch_id: int,
    operator_id: int,
    state_var: str | None = None,
    timers: bool = False,
) -> StructType | str:
    """The state data source's schema of one variable (``state_var``) or of the timers
    (``timers=True``) as of ``batch_id``: columns ``key`` and ``value`` (value state),
    ``list_element`` (list state), ``user_map_key`` and ``user_map_value`` (map state),
    ``expiration_timestamp_ms`` (timers), and ``partition_id``. Reads the schema only
    (no job). Spark's refusal comes back as its message instead."""
    options = state_reader_options(batch_id, operator_id, None, None, state_var)
    if timers:
        options["readRegisteredTimers"] = "true"
    try:
        return read_state_schema(spark, checkpoint, options)
    except PySparkException as refused:  # Spark's AnalysisException and kin
        return str(refused).strip().splitlines()[0] if str(refused).strip() else repr(refused)


def ttl_inner_type(dtype: DataType) -> DataType | None:
    """The user's value type inside a TTL'd entry's struct (``value``,
    ``ttlExpirationMs``), or None when ``dtype`` is not that struct."""
    if isinstance(dtype, StructType) and dtype.fieldNames() == [
            TTL_VALUE_FIELD, TTL_EXPIRATION_FIELD]:
        return dtype[TTL_VALUE_FIELD].dataType
    return None
