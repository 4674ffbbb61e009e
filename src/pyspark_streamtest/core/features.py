"""Which optional Spark features the running session offers.

pyspark-streamtest runs on PySpark 3.5 to 4.3. The driver itself (inputs, clock,
outputs, watermarks, restarts, ``applyInPandasWithState``) works on every line; a few
Spark features exist only from some line on. Each is detected on the running session
(by looking for the class or method, not by comparing version strings), so a test can
ask before it uses one::

    from pyspark_streamtest import Feature, supported_features

    if Feature.TRANSFORM_WITH_STATE in supported_features(spark): ...

or, under pytest, mark the test and let the plugin skip it with the reason::

    @pytest.mark.streamtest_requires(Feature.STATE_STORE_READS)
    def test_reads_state(topology_driver): ...
"""

from __future__ import annotations

from enum import Enum
from typing import Any

from pyspark.sql import SparkSession

from .._spark.connect.session import connect_client_has, is_connect_session, process_jvm
from .._spark.jvm import Jvm
from .._spark.runtime.session import ensure_classic_session
from .._spark.versions import Capabilities, capabilities
from ..errors import UnsupportedSparkVersionError, hide_our_frames

__tracebackhide__ = hide_our_frames

__all__ = ["Feature", "UnsupportedFeatureError", "require_feature", "supported_features"]


class Feature(str, Enum):
    """An optional Spark feature, named after what a test does with it."""

    STATE_STORE_READS = "state_store_reads"
    """Reading a query's state through Spark's state data source
    (``format("statestore")`` and ``"state-metadata"``). Added in PySpark 4.0."""

    TRANSFORM_WITH_STATE_IN_PANDAS = "transform_with_state_in_pandas"
    """``groupBy(...).transformWithStateInPandas(...)``. Added in PySpark 4.0."""

    TRANSFORM_WITH_STATE = "transform_with_state"
    """Row-based ``groupBy(...).transformWithState(...)``. Added in PySpark 4.1."""

    DECLARATIVE_PIPELINES = "declarative_pipelines"
    """Spark Declarative Pipelines (``pyspark.pipelines``, ``spark-pipelines``) run by
    :class:`~pyspark_streamtest.PipelineTestDriver`. Added in PySpark 4.1."""

    @property
    def added_in(self) -> str:
        """The first PySpark line that has this feature."""
        return _ADDED_IN[self]

    @property
    def description(self) -> str:
        return _DESCRIPTION[self]


_ADDED_IN = {
    Feature.STATE_STORE_READS: "4.0",
    Feature.TRANSFORM_WITH_STATE_IN_PANDAS: "4.0",
    Feature.TRANSFORM_WITH_STATE: "4.1",
    Feature.DECLARATIVE_PIPELINES: "4.1",
}
_ADDED_OVER_CONNECT = {
    # PySpark 4.0's Connect client has neither method on its GroupedData.
    Feature.TRANSFORM_WITH_STATE_IN_PANDAS: "4.1",
    Feature.TRANSFORM_WITH_STATE: "4.1",
}
_DESCRIPTION = {
    Feature.STATE_STORE_READS: "reading state stores (Spark's state data source)",
    Feature.TRANSFORM_WITH_STATE_IN_PANDAS: "transformWithStateInPandas",
    Feature.TRANSFORM_WITH_STATE: "row-based transformWithState",
    Feature.DECLARATIVE_PIPELINES: "declarative pipelines",
}


def _has(found: Capabilities, feature: Feature) -> bool:
    if feature is Feature.STATE_STORE_READS:
        return found.state_data_source
    if feature is Feature.TRANSFORM_WITH_STATE_IN_PANDAS:
        return found.transform_with_state_in_pandas
    if feature is Feature.DECLARATIVE_PIPELINES:
        return found.declarative_pipelines
    return found.transform_with_state


class UnsupportedFeatureError(UnsupportedSparkVersionError):
    """A feature the running Spark does not have; the message says which line adds it.

    Attributes: ``feature`` (a :class:`Feature`) and ``spark_version``.
    """

    def __init__(self, feature: Feature, spark_version: str,
                 over_connect: bool = False) -> None:
        self.feature = feature
        self.spark_version = spark_version
        self.over_connect = over_connect
        """The session is a Spark Connect one, whose client may add a feature later."""
        self.added_in = (_ADDED_OVER_CONNECT.get(feature, feature.added_in) if over_connect
                         else feature.added_in)
        """The first PySpark line that has the feature (over Connect, if so)."""
        super().__init__(
            f"{feature.description}{' over Spark Connect' if over_connect else ''} needs "
            f"PySpark {self.added_in} or later; this session "
            f"runs Spark {spark_version}. Upgrade pyspark, or skip the test on older versions "
            f"with @pytest.mark.streamtest_requires(Feature.{feature.name})"
        )

    def __reduce__(self) -> tuple[Any, ...]:
        # Made from its fields, not its message: pickled, it is rebuilt from them.
        return (type(self), (self.feature, self.spark_version, self.over_connect),
                self.__dict__)


# Shown by the package face's name wherever it is raised, as every public exception is
# (the face binds the others; this module can be imported without the face's help).
UnsupportedFeatureError.__module__ = "pyspark_streamtest"


def supported_features(spark: SparkSession) -> frozenset[Feature]:
    """The optional features the session ``spark`` offers (detected once per JVM; for a
    Spark Connect session, those its client has too)."""
    if is_connect_session(spark):
        found = capabilities(process_jvm())
        return frozenset(f for f in Feature if _has(found, f) and connect_client_has(f.value))
    ensure_classic_session(spark)
    found = capabilities(Jvm(spark))
    return frozenset(f for f in Feature if _has(found, f))


def require_feature(spark: SparkSession, feature: Feature | str) -> None:
    """Raise :class:`UnsupportedFeatureError` unless ``spark`` offers ``feature``.

    ``feature`` is a :class:`Feature` or its value (``"state_store_reads"``); an unknown
    name raises ``ValueError`` listing the known ones.
    """
    wanted = as_feature(feature)
    if wanted not in supported_features(spark):
        raise UnsupportedFeatureError(wanted, str(spark.version), is_connect_session(spark))


def as_feature(feature: Feature | str) -> Feature:
    """``feature`` as a :class:`Feature`; ``ValueError`` naming the known ones otherwise."""
    if isinstance(feature, Feature):
        return feature
    try:
        return Feature(feature)
    except ValueError:
        known = ", ".join(repr(f.value) for f in Feature)
        raise ValueError(f"unknown feature {feature!r}; known features: {known}") from None
