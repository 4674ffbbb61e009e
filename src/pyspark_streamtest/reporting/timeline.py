"""The batch timeline as a text table."""

from __future__ import annotations

from collections.abc import Iterable

from ..core._stable import stable_json
from ..core.records import BatchRecord
from ..core.time import format_time
from ..errors import InvalidArgumentError, hide_our_frames

__tracebackhide__ = hide_our_frames

__all__ = ["format_timeline"]

_HEADERS = ("batch", "output", "processing time", "watermark", "wm after", "in", "out",
            "dropped", "state")


_ROW_WIDTH = 96


def format_timeline(batches: Iterable[BatchRecord], *, show_rows: int = 0) -> str:
    """One row per batch: id, output, processing time, the watermark during and after
    the batch, rows in, rows out, rows dropped as late, state rows after the batch.

    ``show_rows=N`` lists under each batch the first ``N`` rows it emitted (as JSON,
    with the key of a Kafka record, each cut at 96 characters) and how many more; the
    pytest plugin's failure report and the scenario runner show 3."""
    if isinstance(show_rows, bool) or not isinstance(show_rows, int) or show_rows < 0:
        raise InvalidArgumentError(f"show_rows must be an int >= 0, got {show_rows!r}")
    batches = list(batches)
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
    for batch, row in zip(batches, rows, strict=True):
        out.append(line(row))
        if show_rows:
            out.extend(_emitted(batch, show_rows))
    if not rows:
        out.append("(no batches)")
    return "\n".join(out)


def _emitted(batch: BatchRecord, limit: int) -> list[str]:
    lines = []
    for record in batch.output_records[:limit]:
        text = stable_json(record.value)
        if record.key is not None:
            text = f"{stable_json(record.key)}: {text}"
        if len(text) > _ROW_WIDTH:
            text = text[: _ROW_WIDTH - 3] + "..."
        lines.append(f"      -> {text}")
    more = len(batch.output_records) - limit
    if more > 0:
        lines.append(f"      -> ... {more} more")
    return lines
