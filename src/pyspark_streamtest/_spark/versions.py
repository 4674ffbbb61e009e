"""Which Spark internals this session offers, detected once by reflection.

Every per-version branch of the adapter reads a field of :class:`Capabilities`;
nothing else in the package compares version strings. Facts per line (3.5 to 4.3)
are listed in the project's shared reference notes; detection here prefers "does
the class / overload exist" over "which version is this".
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from importlib.util import find_spec
from typing import Any
from weakref import WeakKeyDictionary

import pyspark
from pyspark.sql import GroupedData

from ..errors import UnsupportedSparkVersionError, hide_our_frames
from .jvm import Jvm

__tracebackhide__ = hide_our_frames

MINIMUM_PYSPARK = (3, 5)

_MEMORY_STREAM_CLASSES = (
    "org.apache.spark.sql.execution.streaming.runtime.MemoryStream",  # 4.1 and later
    "org.apache.spark.sql.execution.streaming.MemoryStream",  # 3.5, 4.0
)
_FILE_SYSTEM_CHECKPOINT_MANAGER_CLASSES = (
    # 4.1 and later
    "org.apache.spark.sql.execution.streaming.checkpointing.FileSystemBasedCheckpointFileManager",
    "org.apache.spark.sql.execution.streaming.FileSystemBasedCheckpointFileManager",  # 3.5, 4.0
)
_PIPELINES_REGISTRY_CLASS = "org.apache.spark.sql.connect.pipelines.DataflowGraphRegistry"
_DATAFLOW_GRAPH_CLASS = "org.apache.spark.sql.pipelines.graph.DataflowGraph"
_STATE_DATA_SOURCE_CLASS = "org.apache.spark.sql.execution.datasources.v2.state.StateDataSource"
_STATE_STORE_OBJECT = "org.apache.spark.sql.execution.streaming.state.StateStore$"
_DATASET_CLASSES = ("org.apache.spark.sql.classic.Dataset", "org.apache.spark.sql.Dataset")
_WATERMARK_TRACKER_CLASSES = (
    "org.apache.spark.sql.execution.streaming.runtime.WatermarkTracker",  # 4.1 and later
    "org.apache.spark.sql.execution.streaming.WatermarkTracker",  # 3.5, 4.0
)


@dataclass(frozen=True)
class Capabilities:
    """What the running Spark offers the adapter."""

    spark_version: str
    memory_stream_class: str
    memory_stream_takes_session: bool
    """``MemoryStream.apply(Encoder, SparkSession)`` exists (4.1+); else ``(Encoder,
    SQLContext)``."""
    start_query_has_sink_name: bool
    """``startQuery`` has the ``userSpecifiedSinkName`` parameter (4.2+, 13 parameters)."""
    watermark_tracker_class: str
    watermark_tracker_takes_plan: bool
    """``WatermarkTracker.apply(conf, logicalPlan)`` (4.x) rather than ``apply(conf)``."""
    file_system_checkpoint_manager_class: str
    """``FileSystemBasedCheckpointFileManager`` (moved to a ``checkpointing`` package in 4.1)."""
    state_data_source: bool
    """Spark's state data source (``format("statestore")``, ``"state-metadata"``): 4.0+."""
    transform_with_state_in_pandas: bool
    """``GroupedData.transformWithStateInPandas`` (PySpark 4.0+)."""
    transform_with_state: bool
    """Row-based ``GroupedData.transformWithState`` (PySpark 4.1+)."""
    state_store_unload: tuple[str, int]
    """How ``object StateStore`` unloads one provider: ``("unload", 1)`` (3.5, 4.0),
    ``("removeFromLoadedProvidersAndClose", 2)`` (4.1, 4.2: id and an optional
    provider), ``("removeFromLoadedProvidersAndClose", 1)`` (4.3)."""
    dataset_class: str = "org.apache.spark.sql.Dataset"
    """The JVM Dataset with ``ofRows(session, plan)``: ``classic.Dataset`` on 4.x."""
    declarative_pipelines: bool = False
    """Spark Declarative Pipelines: the engine's Connect handler in the JVM and
    ``pyspark.pipelines`` in Python (PySpark 4.1+)."""
    pipeline_resolve_takes_flag: bool = False
    """``DataflowGraph.resolve(boolean)`` (4.3) rather than ``resolve()`` (4.1, 4.2)."""


_CACHE: WeakKeyDictionary[Any, Capabilities] = WeakKeyDictionary()


def pyspark_version_tuple(version: str = pyspark.__version__) -> tuple[int, int]:
    major, minor = version.split(".")[:2]
    return int(major), int("".join(ch for ch in minor if ch.isdigit()) or 0)


def check_pyspark_version(version: str = pyspark.__version__) -> None:
    """Raise :class:`UnsupportedSparkVersionError` for PySpark older than 3.5."""
    if pyspark_version_tuple(version) < MINIMUM_PYSPARK:
        raise UnsupportedSparkVersionError(
            f"PySpark {version} is not supported: pyspark-streamtest needs PySpark 3.5 or "
            "later (3.5, 4.0, 4.1, 4.2 and 4.3 are tested). Upgrade pyspark."
        )


def query_context_loggers() -> list[logging.Logger]:
    """PySpark's loggers of an error's query context (4.0+: every captured JVM error
    with a DataFrame or SQL context logs itself, with its JVM stack, as one JSON line on
    stderr); none on 3.5. Made as PySpark makes them (a plain logger of that name would
    break PySpark's calls with their extra fields)."""
    try:
        from pyspark.logger import PySparkLogger
    except ImportError:  # PySpark 3.5: no such logging
        return []
    return [PySparkLogger.getLogger(name)
            for name in ("DataFrameQueryContextLogger", "SQLQueryContextLogger")]


def capabilities(jvm: Jvm) -> Capabilities:
    """Detect (once per JVM gateway) what this Spark offers."""
    key = jvm.gateway
    found = _CACHE.get(key)
    if found is None:
        found = _detect(jvm)
        _CACHE[key] = found
    return found


def _first_existing(jvm: Jvm, names: tuple[str, ...], what: str) -> str:
    for name in names:
        if jvm.class_exists(name):
            return name
    raise UnsupportedSparkVersionError(
        f"this Spark ({jvm.spark.version}) has no {what} class (looked for {', '.join(names)}); "
        "pyspark-streamtest supports PySpark 3.5 to 4.3"
    )


def _detect(jvm: Jvm) -> Capabilities:
    check_pyspark_version(jvm.spark.version)
    memory_stream = _first_existing(jvm, _MEMORY_STREAM_CLASSES, "MemoryStream")
    applies = jvm.method_param_types(jvm.class_for_name(memory_stream + "$"), "apply")
    takes_session = ["org.apache.spark.sql.Encoder", "org.apache.spark.sql.SparkSession"] in applies

    manager = jvm.jspark.streams()
    start_query = jvm.method_param_types(manager.getClass(), "startQuery")
    if len(start_query) != 1 or len(start_query[0]) not in (12, 13):
        raise UnsupportedSparkVersionError(
            f"this Spark ({jvm.spark.version}) has an unknown StreamingQueryManager.startQuery "
            f"({[len(p) for p in start_query]} parameters); supported: PySpark 3.5 to 4.3"
        )
    tracker = _first_existing(jvm, _WATERMARK_TRACKER_CLASSES, "WatermarkTracker")
    store = jvm.class_for_name(_STATE_STORE_OBJECT)
    unload = next(
        ((name, len(params[0])) for name in ("unload", "removeFromLoadedProvidersAndClose")
         if (params := jvm.method_param_types(store, name))),
        None,
    )
    if unload is None:
        raise UnsupportedSparkVersionError(
            f"this Spark ({jvm.spark.version}) has no StateStore.unload or "
            "removeFromLoadedProvidersAndClose; supported: PySpark 3.5 to 4.3"
        )
    tracker_applies = jvm.method_param_types(jvm.class_for_name(tracker + "$"), "apply")
    pipelines = (jvm.class_exists(_PIPELINES_REGISTRY_CLASS)
                 and find_spec("pyspark.pipelines") is not None)
    return Capabilities(
        spark_version=str(jvm.spark.version),
        memory_stream_class=memory_stream,
        memory_stream_takes_session=takes_session,
        start_query_has_sink_name=len(start_query[0]) == 13,
        watermark_tracker_class=tracker,
        watermark_tracker_takes_plan=any(len(p) == 2 for p in tracker_applies),
        file_system_checkpoint_manager_class=_first_existing(
            jvm, _FILE_SYSTEM_CHECKPOINT_MANAGER_CLASSES, "FileSystemBasedCheckpointFileManager"
        ),
        state_data_source=jvm.class_exists(_STATE_DATA_SOURCE_CLASS),
        transform_with_state_in_pandas=hasattr(GroupedData, "transformWithStateInPandas"),
        transform_with_state=hasattr(GroupedData, "transformWithState"),
        state_store_unload=unload,
        dataset_class=_first_existing(jvm, _DATASET_CLASSES, "Dataset"),
        declarative_pipelines=pipelines,
        pipeline_resolve_takes_flag=pipelines and [
            "boolean"] in jvm.method_param_types(jvm.class_for_name(_DATAFLOW_GRAPH_CLASS),
                                                 "resolve"),
    )
