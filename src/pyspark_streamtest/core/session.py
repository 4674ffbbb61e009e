"""The test-tuned SparkSession."""

from __future__ import annotations

from collections.abc import Mapping

from pyspark.sql import SparkSession

from .._spark.session import TEST_CONF, build_test_session

__all__ = ["TEST_CONF", "test_spark_session"]


def test_spark_session(
    *, master: str = "local[2]", conf: Mapping[str, str] | None = None
) -> SparkSession:
    """Return the active session, or create a local one tuned for tests.

    Tuning: one shuffle partition, UI off, UTC session time zone, quiet logs, Python
    workers on this interpreter (``sys.executable``), loopback networking, a temporary
    warehouse directory. ``conf`` entries override (see :data:`TEST_CONF`). An existing
    active session is returned unchanged (static settings cannot change on a running
    session).
    """
    return build_test_session(master=master, conf=conf)


test_spark_session.__test__ = False  # type: ignore[attr-defined]  # not a pytest test
