"""Spark SQL settings for the time a query starts."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager

from pyspark.sql import SparkSession

from ...errors import hide_our_frames

__tracebackhide__ = hide_our_frames


@contextmanager
def scoped_sql_conf(spark: SparkSession, conf: Mapping[str, str]) -> Iterator[None]:
    """Set ``conf`` on the session while a query starts, then put the old values back.

    A streaming query copies the session's settings when it is created (its own cloned
    session), so settings made here apply to that query only.
    """
    if not conf:
        yield
        return
    saved = {key: spark.conf.get(key, None) for key in conf}
    try:
        for key, value in conf.items():
            spark.conf.set(key, value)
        yield
    finally:
        for key, old in saved.items():
            if old is None:
                spark.conf.unset(key)
            else:
                spark.conf.set(key, old)
