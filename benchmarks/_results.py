"""The run's results file (``--json``): the machine, the floors and the rows."""

from __future__ import annotations

import json
import os
import platform
from typing import Any

import pyspark
from pyspark.sql import SparkSession


def write_results(args: Any, spark: SparkSession, floor: float,
                  rows: list[dict[str, Any]], floor_end: float) -> dict[str, Any]:
    """Write the run to ``--json`` and return what was written."""
    create_df = next((r["ms"] / r["ratio"] / 1000 for r in rows
                      if r.get("of") == "createDataFrame"), None)
    result = {
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version(),
                    "pyspark": pyspark.__version__, "platform": platform.platform()},
        "floor_ms": round(floor * 1000, 2),
        "floor_at_end_ms": round(floor_end * 1000, 2),
        "warmup_seconds": args.warmup_seconds,
        "create_dataframe_floor_ms": None if create_df is None else round(create_df * 1000, 2),
        "rows": rows,
    }
    os.makedirs(os.path.dirname(args.json) or ".", exist_ok=True)
    with open(args.json, "w") as out:
        json.dump(result, out, indent=2)
    print(f"written to {args.json}")
    return result
