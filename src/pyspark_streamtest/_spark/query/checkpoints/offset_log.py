"""Reading a query's checkpoint logs: where each source stood at a batch.

Spark's offset log (``offsets/<batch id>``) holds, per batch: a version line (``v1``),
one line of metadata JSON (``batchWatermarkMs``, ``batchTimestampMs``, the settings
Spark pins) and one line per source, in the order of the query's sources (the
streaming leaves of its plan, left to right), each the source's offset as JSON: a
memory stream's offset is a bare number, and ``-`` stands for a source that had no
offset yet. Spark 4.3's optional v2 log writes ``<source id>:<offset>`` per line. The
commit log (``commits/<batch id>``) says which batches finished.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass

from ....errors import hide_our_frames

__tracebackhide__ = hide_our_frames

__all__ = ["LoggedBatch", "last_committed", "last_logged", "logged_batch"]


@dataclass(frozen=True)
class LoggedBatch:
    """One batch of the offset log."""

    batch_id: int
    offsets: tuple[int | None, ...]
    """Each source's end offset (its memory stream's last offset; None for a source
    without one, or not a memory stream), in source order."""
    watermark_ms: int
    timestamp_ms: int


def _batch_ids(folder: str) -> list[int]:
    if not os.path.isdir(folder):
        return []
    return sorted(int(name) for name in os.listdir(folder) if name.isdigit())


def logged_batch(checkpoint: str, batch_id: int) -> LoggedBatch:
    """The offset log entry of ``batch_id`` in the query checkpoint ``checkpoint``."""
    with open(os.path.join(checkpoint, "offsets", str(batch_id)), encoding="utf-8") as file:
        lines = file.read().split("\n")
    metadata = json.loads(lines[1]) if len(lines) > 1 and lines[1] else {}
    offsets = tuple(_offset(line) for line in lines[2:] if line)
    return LoggedBatch(batch_id, offsets, int(metadata.get("batchWatermarkMs", 0)),
                       int(metadata.get("batchTimestampMs", 0)))


def last_committed(checkpoint: str) -> LoggedBatch | None:
    """The offset log entry of the last batch in the commit log; None before any."""
    committed = _batch_ids(os.path.join(checkpoint, "commits"))
    return logged_batch(checkpoint, committed[-1]) if committed else None


def last_logged(checkpoint: str) -> int | None:
    """The id of the last batch in the offset log (committed or not); None before any."""
    logged = _batch_ids(os.path.join(checkpoint, "offsets"))
    return logged[-1] if logged else None


def _offset(line: str) -> int | None:
    text = line.strip()
    if text == "-":
        return None
    if ":" in text and not text.startswith(("{", "[")):  # v2: "<source id>:<offset>"
        text = text.split(":", 1)[1]
    if text in ("-", "null"):
        return None
    value = json.loads(text)
    # another source's offset (a file source's {"logOffset": n}) is no stream position
    return value if isinstance(value, int) else None
