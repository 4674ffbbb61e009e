"""pyspark-streamtest: a deterministic TopologyTestDriver for Spark Structured Streaming.

Pipe records with chosen event times into real streaming queries, move processing
time, and read exactly what each micro-batch emitted, in-process and without sleeps.
"""

from .core.equality import OutputMismatchError, assert_values_equal
from .core.features import Feature, UnsupportedFeatureError, require_feature, supported_features
from .core.records import BatchRecord, KeyValue, LateRecord, StateOperatorMetrics, TestRecord
from .core.session import test_spark_session
from .core.time import DEFAULT_START_TIME
from .driver.driver import TopologyTestDriver
from .driver.input_topic import TestInputTopic
from .driver.output_topic import TestOutputTopic
from .driver.topology import Topology
from .errors import (
    BatchFailedError,
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
    NaiveDatetimeError,
    NoSuchRecordError,
    NotASparkSessionError,
    OracleMismatchError,
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
    UnknownTopicError,
    UnsupportedAppCallError,
    UnsupportedSchemaError,
    UnsupportedSparkVersionError,
    hide_our_frames,
)
from .gates.scenario import ScenarioError, load_scenario, run_scenario
from .reporting.golden import GoldenMismatchError, assert_matches_golden
from .reporting.picture import timeline_svg, write_timeline_picture
from .reporting.timeline import format_timeline

__tracebackhide__ = hide_our_frames

__version__ = "0.1.0"

__all__ = [
    "DEFAULT_START_TIME",
    "BatchFailedError",
    "BatchRecord",
    "CheckpointMissingError",
    "ClusterError",
    "ClusterRunningError",
    "DeserializationError",
    "DriverClosedError",
    "DriverInterruptedError",
    "DriverLeftOpenError",
    "DriverStoppedError",
    "Feature",
    "GoldenMismatchError",
    "IncompatibleCheckpointError",
    "InvalidArgumentError",
    "InvalidArgumentTypeError",
    "InvalidDurationError",
    "KeyValue",
    "LateRecord",
    "NaiveDatetimeError",
    "NoSuchRecordError",
    "NotASparkSessionError",
    "OracleMismatchError",
    "OutputMismatchError",
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
    "UnknownTopicError",
    "UnsupportedAppCallError",
    "UnsupportedFeatureError",
    "UnsupportedSchemaError",
    "UnsupportedSparkVersionError",
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

# The public exceptions show by their name on this face: a failure's first line reads
# "pyspark_streamtest.OutputMismatchError: ...", not the module the class is defined in.
# Pickle finds a class by that module and its name, and every name of __all__ is here.
for _name in __all__:
    if isinstance(_value := globals()[_name], type) and issubclass(_value, BaseException):
        _value.__module__ = __name__
del _name, _value
