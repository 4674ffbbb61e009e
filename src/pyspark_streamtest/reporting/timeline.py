"""The batch timeline as a text table."""

from __future__ import annotations

from collections.abc import Iterable

from ..core.records import BatchRecord
from ..core.time import format_time
from ..errors import hide_our_frames

__tracebackhide__ = hide_our_frames

__all__ = ["format_timeline"]

_HEADERS = ("batch", "output", "processing time", "watermark", "wm after", "in", "out",
            "dropped", "state")


def format_timeline(batches: Iterable[BatchRecord]) -> str:
    """One row per batch: id, output, processing time, the watermark during and after
    the batch, rows in, rows out, rows dropped as late, state rows after the batch."""
    rows = [
        (
            str(b.batch_id),
            b.output,
            format_time(b.processing_time),
            format_time(b.watermark),
            format_time(b.watermark_after),
            str(b.num_input_rows),
            str(len(b.output_records)),
            str(b.num_rows_dropped_by_watermark),
            str(b.num_state_rows_total),
        )
        for b in batches
    ]
    widths = [max([len(h)] + [len(r[i]) for r in rows]) for i, h in enumerate(_HEADERS)]
    numeric = {0, 5, 6, 7, 8}

    def line(cells: tuple[str, ...]) -> str:
        padded = (
            cell.rjust(width) if i in numeric else cell.ljust(width)
            for i, (cell, width) in enumerate(zip(cells, widths, strict=True))
        )
        return "  ".join(padded).rstrip()

    out = [line(_HEADERS), line(tuple("-" * w for w in widths))]
    out.extend(line(r) for r in rows)
    if not rows:
        out.append("(no batches)")
    return "\n".join(out)
