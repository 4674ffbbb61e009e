"""Spark's own file stream source over a directory, and Spark's record of which files
each batch of a query read.

A file input that lands files is ``spark.readStream.format(f).options(...).schema(s)
.load(directory)``, exactly as a job writes it: Spark's ``FileStreamSource`` lists the
directory at every trigger, takes the files it has not seen (ordered by modification
time, limited by ``maxFilesPerTrigger`` and its kin) and parses them with the reader's
options. It records what it took in two logs under the query's checkpoint:

- the offset log (``offsets/<batch id>``) holds the source's end offset per batch, one
  line per source in the query's source order: ``{"logOffset":N}`` (``-`` for a source
  with no offset yet; Spark 4.3's optional v2 log writes ``<source id>:<offset>``);
- the source's own metadata log (``sources/<source position>/<N>``, a version line
  ``v1`` and one JSON line per file: ``path``, ``timestamp``, ``batchId``, where
  ``batchId`` is ``N``), compacted every few entries into ``<N>.compact`` files that
  hold every entry up to ``N``.

A batch read the files of the metadata log entries after its start offset (the
previous batch's end offset) up to its end offset.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping

from pyspark.sql import DataFrame
from pyspark.sql.types import StructType

from ...errors import hide_our_frames
from ..jvm import Jvm, java_error_text
from .memory_stream import wrap_dataframe

__tracebackhide__ = hide_our_frames

__all__ = ["NotAFileSourceError", "batch_files", "file_stream", "read_failure_text"]

_COMPACT = re.compile(r"^(\d+)\.compact$")
_ERROR_CLASS = re.compile(r"\[[A-Z][A-Z0-9_]*(?:\.[A-Z0-9_]+)*\]")


class NotAFileSourceError(ValueError):
    """The reader's format reads no files (``rate``, ``kafka``...)."""


def file_stream(
    jvm: Jvm, path: str, *, source_format: str, schema: StructType | str | None,
    options: Mapping[str, str],
) -> tuple[DataFrame, int]:
    """``readStream.format(source_format).options(options).schema(schema).load(path)`` in
    the JVM's session (the reader Spark would build for the job), and the expression id
    of the source's first column in the plan (which identifies the source among a
    query's streaming leaves). Spark's refusals (no schema, an unknown format, a bad
    option) raise as Spark raises them; a format whose source is not Spark's file
    source (``rate``, ``kafka``...) raises :class:`NotAFileSourceError`."""
    reader = jvm.jspark.readStream().format(source_format)
    for key, value in options.items():
        reader = reader.option(key, value)
    if isinstance(schema, StructType):
        reader = reader.schema(jvm.jspark.parseDataType(schema.json()))
    elif schema is not None:
        reader = reader.schema(schema)
    jdf = reader.load(path)
    leaf = jdf.queryExecution().analyzed()
    if str(leaf.nodeName()) != "StreamingRelation" or not str(leaf.sourceName()).startswith(
            "FileSource["):
        raise NotAFileSourceError(f"format {source_format!r} reads no files: its source is "
                                  "not Spark's file source")
    output = leaf.output()
    leaf_id = int(output.head().exprId().id()) if output.size() else -1
    return wrap_dataframe(jvm, jdf), leaf_id


def read_failure_text(error: BaseException) -> str:
    """Spark's text of a batch that failed reading files: the error (``java_error_text``)
    and, a line each, the causes in its chain that name an error class the text does
    not hold yet. Spark wraps a file's parse error (``[MALFORMED_RECORD_IN_PARSING]``
    of ``mode=FAILFAST``) in ``[FAILED_READ_FILE]``, whose text names only the file."""
    text = java_error_text(error).strip()
    cause = getattr(getattr(error, "java_exception", None), "getCause", lambda: None)()
    for _ in range(20):  # a chain is short; a cycle must not loop
        if cause is None:
            break
        line = str(cause.toString()).strip()
        if set(_ERROR_CLASS.findall(line)) - set(_ERROR_CLASS.findall(text)):
            text += f"\ncaused by: {line}"
        cause = cause.getCause()
    return text


def batch_files(checkpoint: str, source: int, batch_id: int) -> tuple[str, ...]:
    """The paths (as Spark logged them: ``file:///...`` URIs) of the files that batch
    ``batch_id`` of the query checkpointed at ``checkpoint`` read from its file source at
    position ``source``, in the order Spark logged them; () when the batch read none
    (its offset did not move, or it is not in the offset log)."""
    end = _log_offset(checkpoint, batch_id, source)
    if end is None:
        return ()
    start = _log_offset(checkpoint, batch_id - 1, source) if batch_id > 0 else None
    folder = os.path.join(checkpoint, "sources", str(source))
    paths: list[str] = []
    for entry in range(-1 if start is None else start, end):
        paths.extend(_entries(folder, entry + 1))
    return tuple(paths)


def _log_offset(checkpoint: str, batch_id: int, source: int) -> int | None:
    """The file source's ``logOffset`` at the end of ``batch_id``; None when the batch or
    the source's offset is not logged."""
    try:
        with open(os.path.join(checkpoint, "offsets", str(batch_id)), encoding="utf-8") as file:
            lines = file.read().split("\n")
    except FileNotFoundError:
        return None
    offsets = [line.strip() for line in lines[2:] if line.strip()]
    if source >= len(offsets):
        return None
    text = offsets[source]
    if ":" in text and not text.startswith(("{", "[")):  # v2: "<source id>:<offset>"
        text = text.split(":", 1)[1]
    if text in ("-", "null"):
        return None
    value = json.loads(text)
    return int(value["logOffset"]) if isinstance(value, dict) else None


def _entries(folder: str, log_offset: int) -> list[str]:
    """The paths the metadata log holds for entry ``log_offset``: its own file, or the
    first compacted file at or after it (which holds it once compacted)."""
    name = os.path.join(folder, str(log_offset))
    if not os.path.exists(name):
        compacted = sorted(
            int(found.group(1)) for found in map(_COMPACT.match, _listing(folder))
            if found is not None and int(found.group(1)) >= log_offset
        )
        if not compacted:
            return []
        name = os.path.join(folder, f"{compacted[0]}.compact")
    with open(name, encoding="utf-8") as file:
        lines = file.read().split("\n")[1:]  # after the version line
    paths = []
    for line in lines:
        if line.strip():
            entry = json.loads(line)
            if int(entry.get("batchId", log_offset)) == log_offset:
                paths.append(str(entry["path"]))
    return paths


def _listing(folder: str) -> list[str]:
    try:
        return os.listdir(folder)
    except FileNotFoundError:
        return []
