"""The test-tuned SparkSession."""

from __future__ import annotations

from collections.abc import Mapping

from pyspark.sql import SparkSession

from .._spark.runtime.session import SHARED_CORES_JVM_OPTIONS, TEST_CONF, build_test_session
from ..errors import hide_our_frames

__tracebackhide__ = hide_our_frames

__all__ = ["SHARED_CORES_JVM_OPTIONS", "TEST_CONF", "test_spark_session"]


def test_spark_session(
    *,
    master: str | None = None,
    conf: Mapping[str, str] | None = None,
    jvm_logs: bool | None = None,
    jvm_options: str | None = None,
) -> SparkSession:
    """Return the active session, or create a local one tuned for tests.

    Tuning: one shuffle partition, UI off, UTC session time zone, quiet logs, Python
    workers on this interpreter (``sys.executable``), loopback networking, a temporary
    warehouse directory. ``conf`` entries override (see :data:`TEST_CONF`). An existing
    active session is returned unchanged (static settings cannot change on a running
    session).

    ``master`` defaults to ``local[2]``. Under the pytest plugin, every argument left
    out takes the run's option instead (``--streamtest-master`` / ``$STREAMTEST_MASTER``
    / the ``streamtest_master`` ini option, ``--streamtest-conf`` settings, to which
    ``conf`` adds,
    ``--streamtest-jvm-logs``), as does a driver made without ``spark=``: the session
    runs on the master the report header names, and it is the ``spark`` fixture's.

    Quiet logs: the JVM logs errors only, one line each, without stack traces, and not
    the task, job and query failures a driver reports itself as a
    :class:`~pyspark_streamtest.StreamingQueryFailedError`; PySpark 4's JSON log lines
    of errors with a query context (an ANSI cast's ``CAST_INVALID_INPUT``, with the whole
    JVM stack) are dropped, process-wide. ``jvm_logs=True`` (pytest:
    ``--streamtest-jvm-logs``) logs warnings and errors of every logger with their JVM
    stack traces, and those JSON lines, instead, for debugging.

    ``jvm_options`` are added to the driver JVM's command line (``-XX:...``, ``-D...``)
    when this call starts the JVM; a ``spark.driver.extraJavaOptions`` entry in ``conf``
    replaces them and the log set-up. The pytest plugin passes
    :data:`~pyspark_streamtest.core.session.SHARED_CORES_JVM_OPTIONS` under
    pytest-xdist, where several test JVMs share the machine's cores.
    """
    return build_test_session(
        master=master, conf=conf, jvm_logs=jvm_logs, jvm_options=jvm_options
    )


test_spark_session.__test__ = False  # type: ignore[attr-defined]  # not a pytest test
