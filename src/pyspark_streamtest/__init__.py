"""pyspark-streamtest: a deterministic TopologyTestDriver for Spark Structured Streaming.

Pipe records with chosen event times into real streaming queries, move processing
time, and read exactly what each micro-batch emitted, in-process and without sleeps.
"""

from .assertions import OutputMismatchError, assert_values_equal
from .clock import DEFAULT_START_TIME
from .driver import TopologyTestDriver
from .errors import (
    DriverClosedError,
    NaiveDatetimeError,
    NoSuchRecordError,
    SchemaMismatchError,
    SparkConnectNotSupportedError,
    StateStoreError,
    StepTimeoutError,
    StreamingQueryFailedError,
    StreamTestError,
    TimeWentBackwardsError,
    TopologyError,
    UninitializedTopicError,
    UnknownTopicError,
    UnsupportedSchemaError,
    UnsupportedSparkVersionError,
)
from .features import Feature, UnsupportedFeatureError, require_feature, supported_features
from .golden import GoldenMismatchError, assert_matches_golden
from .picture import timeline_svg, write_timeline_picture
from .records import BatchRecord, KeyValue, LateRecord, StateOperatorMetrics, TestRecord
from .report import format_timeline
from .scenario import ScenarioError, load_scenario, run_scenario
from .session import test_spark_session
from .topics import TestInputTopic, TestOutputTopic
from .topology import Topology

__version__ = "0.1.0"

__all__ = [
    "DEFAULT_START_TIME",
    "BatchRecord",
    "DriverClosedError",
    "Feature",
    "GoldenMismatchError",
    "KeyValue",
    "LateRecord",
    "NaiveDatetimeError",
    "NoSuchRecordError",
    "OutputMismatchError",
    "ScenarioError",
    "SchemaMismatchError",
    "SparkConnectNotSupportedError",
    "StateOperatorMetrics",
    "StateStoreError",
    "StepTimeoutError",
    "StreamTestError",
    "StreamingQueryFailedError",
    "TestInputTopic",
    "TestOutputTopic",
    "TestRecord",
    "TimeWentBackwardsError",
    "Topology",
    "TopologyError",
    "TopologyTestDriver",
    "UninitializedTopicError",
    "UnknownTopicError",
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
