"""Small helpers shared by the tests."""

from __future__ import annotations

import json
import subprocess
import sys
from datetime import datetime, timedelta, timezone
from typing import Any

from pyspark.sql import functions as F

from pyspark_streamtest import Topology

T0 = datetime(2024, 1, 1, tzinfo=timezone.utc)


def python_json(code: str) -> Any:
    """Run ``code`` in a new interpreter; what it printed as JSON on its last line."""
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=120, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def at(seconds: float) -> datetime:
    """Event time ``seconds`` after 2024-01-01T00:00:00Z."""
    return T0 + timedelta(seconds=seconds)


def window(start_s: int, end_s: int) -> dict[str, datetime]:
    return {"start": at(start_s), "end": at(end_s)}


def clicks_per_user(t: Topology) -> None:
    clicks = t.input("clicks", schema="user STRING, url STRING, ts TIMESTAMP",
                     timestamp_column="ts")
    counts = (
        clicks.withWatermark("ts", "10 seconds")
        .groupBy(F.window("ts", "10 seconds"), "user")
        .count()
    )
    t.output("counts", counts, output_mode="append")


def counts_per_user(t: Topology) -> None:
    """Clicks counted per user, update mode (no watermark: every batch is a data batch)."""
    clicks = t.input("clicks", schema="user STRING, url STRING, ts TIMESTAMP",
                     timestamp_column="ts")
    t.output("counts", clicks.groupBy("user").count(), output_mode="update")
