"""A streaming table's commit log, read as Spark's file sink writes it.

A pipeline's streaming table (Parquet by default) is written by Spark's file sink: each
batch's files are made visible by one entry of ``<table>/_spark_metadata/<batch id>``
(a ``v1`` line, then a JSON line per file, ``"action": "add"`` or ``"delete"``); every
tenth batch is a ``<batch id>.compact`` entry that repeats all the files before it.
Readers of the table (``spark.read.table``) see exactly the files the log adds; a file
in the folder that no entry names was written by a batch that never committed, and
its rows are not in the table. Plain file reading, no Spark.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import unquote, urlparse

from ..errors import hide_our_frames

__tracebackhide__ = hide_our_frames

__all__ = ["CommitLog", "read_commit_log"]

_ENTRY = re.compile(r"^(?P<batch>\d+)(?P<compact>\.compact)?$")
_DATA_FILE = re.compile(r"^part-.*")


def _local(path: str) -> str:
    parsed = urlparse(path)
    return unquote(parsed.path) if parsed.scheme in ("file", "") else path


@dataclass(frozen=True)
class CommitLog:
    """What a table's log says: for each batch id, the files its entry adds (a compact
    entry's files are those not added by an earlier entry read), and the data files in
    the folder that no entry names."""

    batches: dict[int, tuple[str, ...]]
    visible: frozenset[str]
    orphans: tuple[str, ...]


def read_commit_log(folder: str | Path, known: frozenset[str] = frozenset()) -> CommitLog:
    """The log of the file-sink table in ``folder``. ``known`` is the files seen in an
    earlier read: a compact entry's files already known are not counted again as that
    batch's (a log read after every update keeps each batch's own files). ``folder``
    may be a ``file:`` URI (a sink's path option)."""
    root = Path(_local(str(folder)))
    log = root / "_spark_metadata"
    entries: list[tuple[int, bool, Path]] = []
    if log.is_dir():
        for path in log.iterdir():
            found = _ENTRY.match(path.name)
            if found:
                entries.append((int(found["batch"]), bool(found["compact"]), path))
    entries.sort(key=lambda e: (e[0], not e[1]))
    visible: set[str] = set()
    seen = set(known)
    batches: dict[int, tuple[str, ...]] = {}
    for batch, compact, path in entries:
        if batch in batches:
            continue  # a batch's plain entry beside its compact one says the same
        added: list[str] = []
        removed: set[str] = set()
        lines = path.read_text(encoding="utf-8").splitlines()
        for line in lines[1:]:  # lines[0] is the log's version, "v1"
            if not line.strip():
                continue
            entry = json.loads(line)
            file = _local(str(entry["path"]))
            if entry.get("action", "add") == "delete":
                removed.add(file)
            else:
                added.append(file)
        if compact:
            visible = set(added) - removed
        else:
            visible |= set(added)
            visible -= removed
        batches[batch] = tuple(sorted(f for f in added if f not in seen))
        seen |= set(added)
    in_folder = sorted(str(p) for p in root.iterdir()
                       if p.is_file() and _DATA_FILE.match(p.name)) if root.is_dir() else []
    return CommitLog(batches=batches, visible=frozenset(visible),
                     orphans=tuple(f for f in in_folder if f not in visible))
