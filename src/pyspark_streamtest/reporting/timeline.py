"""The batch timeline as a text table."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any

from ..core.records import BatchRecord, TestRecord
from ..core.stable import stable_json
from ..core.time import format_time
from ..errors import InvalidArgumentError, hide_our_frames
from ..kafka.serdes import Deserializer, DeserializerSpec, deserializer
from .golden import attempt_text

__tracebackhide__ = hide_our_frames

__all__ = ["format_timeline"]

_HEADERS = ("batch", "output", "processing time", "watermark", "wm after", "in", "out",
            "dropped", "state")


_ROW_WIDTH = 96
_ROW_LINES = 3

Readers = Mapping[str, tuple[DeserializerSpec, DeserializerSpec]]
"""Kafka topic -> (key deserializer, value deserializer), as the output topic handles take."""


def format_timeline(
    batches: Iterable[BatchRecord], *, show_rows: int = 0, deserializers: Readers | None = None,
) -> str:
    """One row per batch: id, output, processing time, the watermark during and after
    the batch, rows in, rows out, rows dropped as late, state rows after the batch.

    ``show_rows=N`` lists under each batch the first ``N`` rows it emitted (as JSON,
    with the key of a Kafka record, each on up to three lines of 96 characters) and how
    many more; the pytest plugin's failure report and the scenario runner show 3. A
    Kafka record's key and value are decoded with ``deserializers[topic]`` (names or
    functions, as :meth:`~pyspark_streamtest.TopologyTestDriver.create_output_topic`
    takes; the plugin passes the ones the test's handles used); otherwise, and where
    a deserializer raises, UTF-8 bytes are shown as text, and as the JSON value they
    hold when they parse as JSON."""
    if isinstance(show_rows, bool) or not isinstance(show_rows, int) or show_rows < 0:
        raise InvalidArgumentError(f"show_rows must be an int >= 0, got {show_rows!r}")
    readers = {topic: (_reader(key), _reader(value))
               for topic, (key, value) in (deserializers or {}).items()}
    batches = list(batches)
    rows = [
        (
            str(b.batch_id),
            b.output + attempt_text(b),
            format_time(b.processing_time),
            format_time(b.watermark),
            format_time(b.watermark_after),
            str(b.num_input_rows),
            str(b.num_output_rows),
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
            out.extend(_emitted(batch, show_rows, readers))
    if not rows:
        out.append("(no batches)")
    return "\n".join(out)


def _reader(spec: DeserializerSpec) -> Deserializer | None:
    return None if spec is None else deserializer(spec)


def _readable(data: Any, reader: Deserializer | None) -> Any:
    """A Kafka key or value as a person reads it."""
    if not isinstance(data, (bytes, bytearray)):
        return data
    if reader is not None:
        try:
            return reader(bytes(data))
        except Exception:  # a report never fails: show it readably instead
            pass
    try:
        text = bytes(data).decode("utf-8")
    except UnicodeDecodeError:
        return data  # shown as base64
    try:
        return json.loads(text) if text[:1] in ('{', '[') else text
    except ValueError:
        return text


def _emitted(
    batch: BatchRecord, limit: int, readers: Mapping[str, tuple[Deserializer | None, ...]]
) -> list[str]:
    lines = []
    for record in batch.output_records[:limit]:
        lines.extend(_row_lines(record, readers))
    more = len(batch.output_records) - limit
    if more > 0:
        lines.append(f"      -> ... {more} more")
    return lines


def _row_lines(
    record: TestRecord, readers: Mapping[str, tuple[Deserializer | None, ...]]
) -> list[str]:
    key_reader, value_reader = readers.get(record.topic or "", (None, None))
    text = stable_json(_readable(record.value, value_reader))
    if record.key is not None:
        text = f"{stable_json(_readable(record.key, key_reader))}: {text}"
    limit = _ROW_WIDTH * _ROW_LINES
    if len(text) > limit:
        text = text[: limit - 3] + "..."
    parts = [text[i:i + _ROW_WIDTH] for i in range(0, len(text), _ROW_WIDTH)]
    return [f"      -> {parts[0]}", *(f"         {part}" for part in parts[1:])]
