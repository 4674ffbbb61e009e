"""Checkpoints saved by ``save_checkpoint`` and read back by ``checkpoint=``: a copy of
every query's Spark checkpoint, and a manifest of what the driver adds to Spark's
files (the output each folder belongs to, the inputs of its sources, batch ids, the
watermark, the topics' offsets, processing time)."""

from __future__ import annotations

import errno
import json
import os
import shutil
import uuid
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from pyspark import __version__ as pyspark_version

from ...core.files import safe_file_name
from ...core.query_names import ALONE_SUFFIX
from ...core.time import DEFAULT_START_TIME, from_ms, require_aware, to_ms
from ...errors import (
    InvalidArgumentError,
    InvalidArgumentTypeError,
    TimeWentBackwardsError,
    hide_our_frames,
)
from ._runner import QueryRunner

__tracebackhide__ = hide_our_frames

__all__ = [
    "SavedCheckpoint", "copy_checkpoint", "load_checkpoint", "save_checkpoint", "start_ms",
]

MANIFEST = "pyspark-streamtest.json"
_FORMAT = 1


@dataclass(frozen=True)
class SavedCheckpoint:
    """A saved checkpoint: where it is and what its manifest says."""

    path: str
    time_ms: int
    queries: Mapping[str, Mapping[str, Any]]
    """Output name -> its folder (under ``path``) and what the driver knew of its query."""
    broker: Mapping[str, Any] = field(default_factory=dict)


def save_checkpoint(
    path: str, runners: Iterable[QueryRunner], broker: Mapping[str, Any], now_ms: int
) -> None:
    """Copy every runner's checkpoint into ``path`` (a new or empty folder) and write the
    manifest last (a folder without one is not a saved checkpoint)."""
    if os.path.exists(path) and (not os.path.isdir(path) or os.listdir(path)):
        raise InvalidArgumentError(
            f"save_checkpoint: {path!r} exists and is not an empty folder; give a new path "
            "(a saved checkpoint is never overwritten)"
        )
    os.makedirs(path, exist_ok=True)
    queries: dict[str, dict[str, Any]] = {}
    for index, runner in enumerate(runners):
        folder = f"{index}-{safe_file_name(runner.name)}"
        copy_checkpoint(runner.checkpoint, os.path.join(path, folder))
        # With the differential oracle on, the checkpoint of the query Spark alone runs
        # beside it (see oracle.py), so a driver made from this one goes on comparing.
        copy_checkpoint(runner.checkpoint + ALONE_SUFFIX,
                        os.path.join(path, folder + ALONE_SUFFIX))
        queries[runner.name] = {"folder": folder, **runner.saved()}
    manifest = {"format": _FORMAT, "pyspark": pyspark_version, "time_ms": now_ms,
                "queries": queries, "broker": dict(broker)}
    with open(os.path.join(path, MANIFEST), "w", encoding="utf-8") as file:
        json.dump(manifest, file, indent=1, sort_keys=True)


def load_checkpoint(path: str | os.PathLike[str]) -> SavedCheckpoint:
    """Read the manifest of a checkpoint saved by ``save_checkpoint``."""
    if not isinstance(path, (str, os.PathLike)):
        raise InvalidArgumentTypeError(
            f"checkpoint must be the path of a saved checkpoint (str or path), got "
            f"{type(path).__name__}"
        )
    folder = os.fspath(path)
    try:
        with open(os.path.join(folder, MANIFEST), encoding="utf-8") as file:
            manifest = json.load(file)
    except FileNotFoundError:
        raise InvalidArgumentError(
            f"checkpoint={folder!r} is not a checkpoint saved by driver.save_checkpoint(path) "
            f"(it has no {MANIFEST}); save one from a driver first"
        ) from None
    except (OSError, ValueError) as error:
        raise InvalidArgumentError(
            f"checkpoint={folder!r}: its {MANIFEST} cannot be read ({error})"
        ) from None
    if manifest.get("format") != _FORMAT:
        raise InvalidArgumentError(
            f"checkpoint={folder!r} was saved in format {manifest.get('format')!r}; this "
            f"version reads format {_FORMAT}"
        )
    return SavedCheckpoint(folder, int(manifest["time_ms"]), manifest["queries"],
                           manifest.get("broker", {}))


def copy_checkpoint(source: str, target: str, *, new_query_id: bool = False) -> None:
    """Copy a query's checkpoint folder. Spark's maintenance may delete old state files
    while the copy runs (versions older than the ones a restart needs): a file that
    vanished is skipped. A missing source (a query that never ran) copies nothing.

    ``new_query_id`` gives the copy a new query id (Spark's ``metadata`` file, rewritten
    without its checksum file): two drivers of one session may then run from one saved
    checkpoint, or beside the driver that saved it. With the same id Spark would stop
    the other run when this one starts, as a second deploy of one job does."""
    if not os.path.isdir(source):
        return
    os.makedirs(target, exist_ok=True)
    for root, dirs, files in os.walk(source):
        into = os.path.join(target, os.path.relpath(root, source))
        for name in dirs:
            os.makedirs(os.path.join(into, name), exist_ok=True)
        for name in files:
            if new_query_id and root == source and name in ("metadata", ".metadata.crc"):
                if name == "metadata":
                    _write_new_query_id(os.path.join(root, name), os.path.join(into, name))
                continue
            try:
                shutil.copy2(os.path.join(root, name), os.path.join(into, name))
            except OSError as error:
                if error.errno != errno.ENOENT:
                    raise


def _write_new_query_id(source: str, target: str) -> None:
    with open(source, encoding="utf-8") as file:
        metadata = json.loads(file.readline())
    metadata["id"] = str(uuid.uuid4())
    with open(target, "w", encoding="utf-8") as file:
        file.write(json.dumps(metadata, separators=(",", ":")))


def start_ms(start_time: datetime | None, saved: SavedCheckpoint | None) -> int:
    """Processing time at the start: ``start_time``, else the saved time, else the
    default; never before the saved time (a deploy comes after the checkpoint)."""
    if start_time is None:
        return to_ms(DEFAULT_START_TIME) if saved is None else saved.time_ms
    now_ms = to_ms(require_aware(start_time, "start_time"))
    if saved is not None and now_ms < saved.time_ms:
        raise TimeWentBackwardsError(
            f"start_time {start_time.isoformat()} is before the saved checkpoint's "
            f"processing time {from_ms(saved.time_ms).isoformat()}; start at or after it"
        )
    return now_ms
