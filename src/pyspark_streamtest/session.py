"""Compatibility path: what this module held lives in :mod:`pyspark_streamtest.core.session`.

Import from :mod:`pyspark_streamtest` (the package face) in new code."""

from ._spark.session import TEST_CONF as TEST_CONF
from .core.session import (
    test_spark_session as test_spark_session,
)
from .errors import hide_our_frames

__tracebackhide__ = hide_our_frames

__all__ = [
    "TEST_CONF",
    "test_spark_session",
]
