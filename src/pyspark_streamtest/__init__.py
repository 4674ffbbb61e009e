"""pyspark-streamtest: a deterministic TopologyTestDriver for Spark Structured Streaming.

Pipe records with chosen event times into real streaming queries, move processing
time, and read exactly what each micro-batch emitted, in-process and without sleeps.

Importing the package imports no PySpark: the names of ``__all__`` that need it (the
driver, the session, the features, ...) are imported on first use (PEP 562), so that
the pytest plugin, which loads with every pytest run, costs nothing where Spark is not
used. ``from pyspark_streamtest import X`` and ``pyspark_streamtest.X`` both work as if
the face imported everything.
"""

from __future__ import annotations

import importlib
import sys
from typing import TYPE_CHECKING, Any

# errors.py imports nothing; the modules below it define the public exceptions that are
# not in errors.py and import no PySpark either. They are imported now, so that their
# exceptions carry the face's name (the loop at the end) wherever they are raised.
from .core.equality import OutputMismatchError, assert_values_equal
from .errors import (
    BackfillNeverEndsError,
    BatchFailedError,
    CallbackChannelError,
    CheckpointMissingError,
    ClusterError,
    ClusterRunningError,
    DeserializationError,
    DriverClosedError,
    DriverInterruptedError,
    DriverLeftOpenError,
    DriverStoppedError,
    IncompatibleCheckpointError,
    InvalidArgumentError,
    InvalidArgumentTypeError,
    InvalidDurationError,
    LostRowsError,
    NaiveDatetimeError,
    NoSuchRecordError,
    NotASparkSessionError,
    OracleMismatchError,
    PipelineDefinitionError,
    PipelineError,
    PipelineHazardError,
    PipelineUpdateError,
    SchemaMismatchError,
    SparkConnectNotSupportedError,
    SparkDiedError,
    SparkInfrastructureError,
    StaleTopicError,
    StateStoreError,
    StepTimeoutError,
    StreamingQueryFailedError,
    StreamTestError,
    TimeOutOfRangeError,
    TimeWentBackwardsError,
    TopologyError,
    UninitializedTopicError,
    UnknownDatasetError,
    UnknownTopicError,
    UnsupportedAppCallError,
    UnsupportedSchemaError,
    UnsupportedSparkVersionError,
    WarmJvmError,
    hide_our_frames,
)
from .gates.scenario_file import ScenarioError
from .reporting.golden import GoldenMismatchError, assert_matches_golden

if TYPE_CHECKING:  # what the names below are, for type checkers; imported on first use
    from .core.features import (
        Feature,
        UnsupportedFeatureError,
        require_feature,
        supported_features,
    )
    from .core.records import (
        BatchRecord,
        DuplicateRecord,
        KeyValue,
        LateRecord,
        StateOperatorMetrics,
        TestRecord,
    )
    from .core.session import test_spark_session
    from .core.time import DEFAULT_START_TIME
    from .driver.driver import TopologyTestDriver
    from .driver.topics import TestInputTopic, TestOutputTopic
    from .driver.topology import Topology
    from .gates.scenario import load_scenario, run_scenario
    from .pipelines import (
        FlowBatch,
        FlowRun,
        PipelineGraph,
        PipelineOutputTopic,
        PipelineTestDriver,
        PipelineUpdate,
    )
    from .reporting.picture import timeline_svg, write_timeline_picture
    from .reporting.timeline import format_timeline

__tracebackhide__ = hide_our_frames

__version__ = "0.1.0"

# The names imported on first use, and the module (relative to this package) of each.
_ON_FIRST_USE = {
    "DEFAULT_START_TIME": ".core.time",
    "BatchRecord": ".core.records",
    "DuplicateRecord": ".core.records",
    "Feature": ".core.features",
    "FlowBatch": ".pipelines",
    "FlowRun": ".pipelines",
    "KeyValue": ".core.records",
    "LateRecord": ".core.records",
    "PipelineGraph": ".pipelines",
    "PipelineOutputTopic": ".pipelines",
    "PipelineTestDriver": ".pipelines",
    "PipelineUpdate": ".pipelines",
    "StateOperatorMetrics": ".core.records",
    "TestInputTopic": ".driver.topics",
    "TestOutputTopic": ".driver.topics",
    "TestRecord": ".core.records",
    "Topology": ".driver.topology",
    "TopologyTestDriver": ".driver.driver",
    "UnsupportedFeatureError": ".core.features",
    "format_timeline": ".reporting.timeline",
    "load_scenario": ".gates.scenario",
    "require_feature": ".core.features",
    "run_scenario": ".gates.scenario",
    "supported_features": ".core.features",
    "test_spark_session": ".core.session",
    "timeline_svg": ".reporting.picture",
    "write_timeline_picture": ".reporting.picture",
}

__all__ = [
    "DEFAULT_START_TIME",
    "BackfillNeverEndsError",
    "BatchFailedError",
    "BatchRecord",
    "CallbackChannelError",
    "CheckpointMissingError",
    "ClusterError",
    "ClusterRunningError",
    "DeserializationError",
    "DriverClosedError",
    "DriverInterruptedError",
    "DriverLeftOpenError",
    "DriverStoppedError",
    "DuplicateRecord",
    "Feature",
    "FlowBatch",
    "FlowRun",
    "GoldenMismatchError",
    "IncompatibleCheckpointError",
    "InvalidArgumentError",
    "InvalidArgumentTypeError",
    "InvalidDurationError",
    "KeyValue",
    "LateRecord",
    "LostRowsError",
    "NaiveDatetimeError",
    "NoSuchRecordError",
    "NotASparkSessionError",
    "OracleMismatchError",
    "OutputMismatchError",
    "PipelineDefinitionError",
    "PipelineError",
    "PipelineGraph",
    "PipelineHazardError",
    "PipelineOutputTopic",
    "PipelineTestDriver",
    "PipelineUpdate",
    "PipelineUpdateError",
    "ScenarioError",
    "SchemaMismatchError",
    "SparkConnectNotSupportedError",
    "SparkDiedError",
    "SparkInfrastructureError",
    "StaleTopicError",
    "StateOperatorMetrics",
    "StateStoreError",
    "StepTimeoutError",
    "StreamTestError",
    "StreamingQueryFailedError",
    "TestInputTopic",
    "TestOutputTopic",
    "TestRecord",
    "TimeOutOfRangeError",
    "TimeWentBackwardsError",
    "Topology",
    "TopologyError",
    "TopologyTestDriver",
    "UninitializedTopicError",
    "UnknownDatasetError",
    "UnknownTopicError",
    "UnsupportedAppCallError",
    "UnsupportedFeatureError",
    "UnsupportedSchemaError",
    "UnsupportedSparkVersionError",
    "WarmJvmError",
    "assert_matches_golden",
    "assert_values_equal",
    "format_timeline",
    "load_scenario",
    "require_feature",
    "run_scenario",
    "supported_features",
    "test_spark_session",
    "timeline_svg",
    "write_timeline_picture",
]


def _show_on_face(value: object) -> None:
    """The public exceptions show by their name on this face: a failure's first line
    reads "pyspark_streamtest.OutputMismatchError: ...", not the module the class is
    defined in. Pickle finds a class by that module and its name, and every name of
    ``__all__`` is here (imported on first use, if not yet)."""
    if isinstance(value, type) and issubclass(value, BaseException):
        value.__module__ = __name__


def _bind_loaded() -> None:
    """Bind every name of ``_ON_FIRST_USE`` whose module is imported already (by the
    face or by anyone else), showing its exceptions on the face: an exception of a module
    another module imported (``UnsupportedFeatureError``, imported with the driver) gets
    the face's name as soon as any name is first used here."""
    for name, module in _ON_FIRST_USE.items():
        loaded = sys.modules.get(__name__ + module)
        if name not in globals() and loaded is not None and name in vars(loaded):
            value = vars(loaded)[name]
            _show_on_face(value)
            globals()[name] = value


if not TYPE_CHECKING:  # type checkers see the imports above, not a catch-all

    def __getattr__(name: str) -> Any:
        """A name of ``__all__`` not imported yet: import its module (PEP 562), then it
        is an ordinary attribute of the face."""
        module = _ON_FIRST_USE.get(name)
        if module is None:
            raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
        importlib.import_module(module, __name__)
        _bind_loaded()
        return globals()[name]


def __dir__() -> list[str]:
    """The face's names, those not imported yet included."""
    return sorted(set(globals()) | set(__all__))


for _name in __all__:
    if _name in globals():
        _show_on_face(globals()[_name])
del _name
