"""Processing time: the fixed default start, and keeping Python's clock in step.

The driver owns one processing-time clock for all its queries (each query's
trigger clock reads it). With ``freeze_python_clock=True`` the driver also freezes
this Python process's clock (``datetime.now()``, ``time.time()``, via freezegun) at
the same instant and moves it whenever processing time moves, so code under test in
the test process sees the same "now" as ``current_timestamp()`` in the query. Spark's
Python workers (UDFs, ``applyInPandasWithState`` functions) run in other processes and
are not frozen: inside a query, read time from Spark (``current_timestamp()``,
``GroupState.getCurrentProcessingTimeMs()``).
"""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Any

__all__ = ["DEFAULT_START_TIME"]

DEFAULT_START_TIME = datetime(2024, 1, 1, tzinfo=timezone.utc)
"""Processing time when a driver starts, unless ``start_time=`` says otherwise."""

# freezegun must not freeze the clocks the driver itself uses to wait for Spark.
_REAL_TIME_MODULES = ["pyspark_streamtest", "pyspark", "py4j", "threading", "socket"]


class _PythonClockFreeze:
    """freezegun's frozen clock, started at the driver's time and moved with it."""

    def __init__(self, start: datetime) -> None:
        import freezegun

        self._freezer: Any = freezegun.freeze_time(start, ignore=_REAL_TIME_MODULES)
        self._factory: Any = self._freezer.start()

    def move_to(self, instant: datetime) -> None:
        self._factory.move_to(instant)

    def stop(self) -> None:
        self._freezer.stop()
