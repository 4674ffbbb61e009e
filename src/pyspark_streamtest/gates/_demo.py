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

# Printed under the timeline, so that a newcomer can read it.
LEGEND = """\
Columns:
  batch, output    the micro-batch id and the output (query) that ran it
  processing time  the driver's clock when the batch ran
  watermark        the watermark the batch ran with; 1970-01-01 00:00:00.000
                   (the epoch) means no watermark yet: no event time seen
  wm after         the watermark computed from the batch: the next batch's
  in, out          rows the batch read, rows it emitted
  dropped          rows it dropped as late (behind the watermark)
  state            rows in the state store after the batch
A batch with in 0 is a no-data batch: Spark runs it without input when the
watermark has moved far enough to close a window, and it emits that window."""


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
        lines.append(LEGEND)
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
