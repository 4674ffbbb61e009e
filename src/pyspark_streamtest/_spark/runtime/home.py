"""Where the installed PySpark keeps Spark: its home and its ``spark-class`` launcher."""

from __future__ import annotations

import os

from ...errors import hide_our_frames

__tracebackhide__ = hide_our_frames


def spark_home() -> str:
    """``SPARK_HOME`` as PySpark finds it (the pip package's own folder when unset)."""
    from pyspark.find_spark_home import _find_spark_home

    return str(_find_spark_home())


def spark_class() -> str:
    """The ``bin/spark-class`` script that starts Spark's JVM processes."""
    return os.path.join(spark_home(), "bin", "spark-class")
