"""The demo: clicks per user in 10-second windows, fed the canned clickstream."""

from __future__ import annotations

from pyspark.sql import SparkSession

from ..driver.driver import TopologyTestDriver
from ..errors import hide_our_frames
from ..reporting.picture import write_timeline_picture
from ..reporting.timeline import format_timeline
from .canned import clickstream

__tracebackhide__ = hide_our_frames

DEMO_TITLE = "pyspark-streamtest demo: clicks per user, 10 s windows, 10 s watermark delay"


def run_demo(spark: SparkSession | None = None, *, picture: str | None = None) -> str:
    """Replay the canned clickstream second by second; print the timeline and the rows.
    With ``picture`` (a .svg or .png path), also draw the timeline there."""
    stream = clickstream()
    lines = []
    with TopologyTestDriver(stream.topology, spark=spark) as driver:
        stream.replay(driver)
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
        if picture is not None:
            written = write_timeline_picture(driver.batches, picture, title=DEMO_TITLE)
            lines.append("")
            lines.append(f"Timeline picture: {written}")
    return "\n".join(lines)
