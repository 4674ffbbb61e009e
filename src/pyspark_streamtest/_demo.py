"""The demo: clicks per user in 10-second windows, fed the canned clickstream."""

from __future__ import annotations

import json
from datetime import datetime, timedelta
from typing import Any

from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from ._fixtures_path import fixture_path
from .driver import TopologyTestDriver
from .report import format_timeline
from .topology import Topology


def clicks_per_user(t: Topology) -> None:
    """Count clicks per user in 10-second tumbling windows, 10 seconds of grace."""
    clicks = t.input("clicks", schema="user STRING, url STRING, ts TIMESTAMP",
                     timestamp_column="ts")
    counts = (
        clicks.withWatermark("ts", "10 seconds")
        .groupBy(F.window("ts", "10 seconds").alias("window"), "user")
        .count()
    )
    t.output("counts", counts, output_mode="append")


def load_clickstream() -> list[dict[str, Any]]:
    """The canned clickstream (``fixtures/clickstream.jsonl``), in arrival order."""
    events = []
    with fixture_path("clickstream.jsonl").open(encoding="utf-8") as lines:
        for line in lines:
            if line.strip():
                event = json.loads(line)
                event["ts"] = datetime.fromisoformat(event["ts"].replace("Z", "+00:00"))
                events.append(event)
    return events


def run_demo(spark: SparkSession | None = None) -> str:
    """Pipe each second's clicks, advance the clock one second, print the timeline."""
    events = load_clickstream()
    lines = []
    with TopologyTestDriver(clicks_per_user, spark=spark) as driver:
        clicks = driver.create_input_topic("clicks")
        last_second = max(e["arrival_s"] for e in events)
        for second in range(last_second + 1):
            for event in (e for e in events if e["arrival_s"] == second):
                clicks.pipe_input({k: event[k] for k in ("user", "url", "ts")})
            driver.advance_wall_clock(timedelta(seconds=1))
        driver.process_all_available()
        lines.append("Batch timeline (clicks per user, 10 s windows, watermark delay 10 s):")
        lines.append(format_timeline(driver.batches))
        lines.append("")
        lines.append("Rows emitted:")
        for record in driver.create_output_topic("counts").read_records_to_list():
            value = record.value or {}
            window = value["window"]
            lines.append(
                f"  batch {record.batch_id}: window [{window['start']:%H:%M:%S}, "
                f"{window['end']:%H:%M:%S}) user={value['user']} count={value['count']}"
            )
    return "\n".join(lines)
