"""Is the Spark JVM still there? Told apart from a JVM that only raised an error."""

from __future__ import annotations

import subprocess
from typing import Any

from py4j.protocol import Py4JError, Py4JJavaError
from pyspark.sql import SparkSession

from ...errors import SparkDiedError, hide_our_frames
from ..connect.session import is_connect_session

__tracebackhide__ = hide_our_frames

_EXIT_WAIT_S = 2.0
"""How long a lost connection may take to show as an exited JVM process."""


def jvm_is_gone(spark: SparkSession, error: BaseException | None = None) -> bool:
    """True if ``spark``'s JVM has exited (or cannot be reached at all).

    With ``error``: only errors of a lost connection count (a Java exception means the
    JVM answered). PySpark keeps the JVM's process (``spark-submit`` execs ``java``) on
    the gateway; when it has one, its exit is what decides, waited for briefly because
    the connection drops a moment before the process is reaped.
    """
    if error is not None and (
        isinstance(error, Py4JJavaError) or not isinstance(error, (Py4JError, OSError))
    ):
        return False
    gateway = _gateway(spark)
    if gateway is None:  # PySpark drops it when the context stops
        return True
    process: Any = getattr(gateway, "proc", None)
    if isinstance(process, subprocess.Popen):
        if error is None:
            return process.poll() is not None
        try:
            process.wait(_EXIT_WAIT_S)
        except subprocess.TimeoutExpired:
            return False
        return True
    try:
        gateway.jvm.java.lang.System.nanoTime()
    except (Py4JError, OSError):
        return True
    return False


def _gateway(spark: SparkSession) -> Any:
    """The Py4J gateway of ``spark``'s JVM: for a Connect session of a local server, its
    process's (a remote server's JVM is none of ours: None)."""
    if is_connect_session(spark):
        from pyspark import SparkContext

        return SparkContext._gateway
    return spark.sparkContext._gateway


def ensure_alive(spark: SparkSession) -> None:
    """Raise :class:`SparkDiedError` if ``spark``'s JVM has exited (before the first
    call into it would fail with a connection error)."""
    if jvm_is_gone(spark):
        raise SparkDiedError(
            "the Spark JVM of this session is gone (killed, crashed, out of memory); "
            "nothing that needs Spark can run in this process any more. Find out why "
            "it died, then run again"
        )
