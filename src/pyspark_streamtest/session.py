"""Compatibility path: what this module held lives in :mod:`pyspark_streamtest.core.session`.

Import from :mod:`pyspark_streamtest` (the package face) in new code."""

from ._spark.session import TEST_CONF as TEST_CONF
from .core.session import (
    test_spark_session as test_spark_session,
)

__all__ = [
    "TEST_CONF",
    "test_spark_session",
]
