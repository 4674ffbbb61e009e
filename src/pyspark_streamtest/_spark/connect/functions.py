"""``pyspark.sql.functions`` as they act on classic Columns, in a Connect-mode process too.

Once a process is in Spark Connect mode (``SPARK_CONNECT_MODE_ENABLED``), PySpark hands
every ``pyspark.sql.functions`` call to its Connect twin, whose Columns a classic
DataFrame (the driver's state reads run on the server's classic session) cannot take.
Each function's classic body is kept by PySpark's dispatching decorator as
``__wrapped__``; these are those bodies (in a classic process the same functions)."""

from __future__ import annotations

from typing import TypeVar, cast

from pyspark.sql import functions as _F

from ...errors import hide_our_frames

__tracebackhide__ = hide_our_frames

_T = TypeVar("_T")


def _classic(function: _T) -> _T:
    return cast(_T, getattr(function, "__wrapped__", function))


col = _classic(_F.col)
lit = _classic(_F.lit)
struct = _classic(_F.struct)
when = _classic(_F.when)
transform = _classic(_F.transform)
transform_keys = _classic(_F.transform_keys)
transform_values = _classic(_F.transform_values)
unix_micros = _classic(_F.unix_micros)
timestamp_micros = _classic(_F.timestamp_micros)
