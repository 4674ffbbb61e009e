"""File inputs that land files: a directory per input, which Spark's own file source
reads as the job's reader would read its production directory.

One driver's landing directories live under one temporary folder, made when its
topology first declares a file input. A driver builds every version of its topology
with the one :class:`~pyspark_streamtest._spark.jvm.Jvm` handle it made (at creation
and for ``restart(topology=...)``), so that handle finds the driver's folder: the
DataFrame of each build reads the same directory, and a new version's query goes on
from Spark's record of the files the old one read. The driver's query sets hold the
folder (:meth:`LandingDirs.acquire`); when the last lets go (the driver closes or
resets) the folder and every landed file are deleted.

A file is landed atomically: written under a hidden name (Spark's file listing skips
names that start with ``.`` or ``_``), given its modification time, then renamed.
"""

from __future__ import annotations

import os
import re
import shutil
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import unquote, urlparse
from weakref import WeakKeyDictionary

from pyspark.sql import DataFrame
from pyspark.sql.types import StructType

from ..._spark.jvm import Jvm, java_error_text
from ..._spark.query.file_source import NotAFileSourceError, batch_files, file_stream
from ...core.records import TestRecord
from ...core.time import from_ms
from ...errors import InvalidArgumentError, InvalidArgumentTypeError, TopologyError, hide_our_frames

__tracebackhide__ = hide_our_frames

__all__ = ["FileSource", "LandedInputs", "LandingDir", "LandingDirs", "LandingSource",
           "file_source", "landing_dirs", "temp_root"]

_NAME = re.compile(r"^[A-Za-z0-9._\-=+@,]+$")
_EXTENSIONS = {"text": "txt"}


def temp_root(root: str | os.PathLike[str] | None) -> str | None:
    """Where the driver makes its temporary folders: ``root`` if given, else
    ``/dev/shm`` when writable (memory, no disk), else the system's temp directory."""
    if root is not None:
        return os.fspath(root)
    shm = "/dev/shm"
    if os.path.isdir(shm) and os.access(shm, os.W_OK):
        return shm
    return None


class LandingDir:
    """The landing directory of one file input, and every file landed in it since the
    driver started or reset (its name, contents and modification time)."""

    def __init__(self, input_name: str, path: str, source_format: str) -> None:
        self.input_name = input_name
        self.path = path
        self._extension = _EXTENSIONS.get(source_format, source_format)
        self._landed: dict[str, TestRecord] = {}
        self._last_ms: int | None = None

    def land(self, name: str | None, contents: str | bytes, now_ms: int) -> str:
        """Write ``contents`` (str as UTF-8) as file ``name`` (default: the next free
        ``part-NNNNN.<format>``) at once, modified at ``now_ms``, or 1 ms after the file
        landed before it if that is later (Spark orders new files by modification time,
        to the millisecond). Returns the name."""
        if isinstance(contents, str):
            data = contents.encode("utf-8")
        elif isinstance(contents, bytes):
            data = contents
        else:
            raise InvalidArgumentTypeError(
                f"input {self.input_name!r}: a landed file's contents are str or bytes, "
                f"got {type(contents).__name__}")
        name = self._next_name() if name is None else self._checked(name)
        modified_ms = now_ms if self._last_ms is None else max(now_ms, self._last_ms + 1)
        hidden = os.path.join(self.path, f".{name}.landing")
        with open(hidden, "wb") as file:
            file.write(data)
        os.utime(hidden, ns=(modified_ms * 1_000_000, modified_ms * 1_000_000))
        os.replace(hidden, os.path.join(self.path, name))
        self._last_ms = modified_ms
        self._landed[name] = TestRecord(value=contents, key=name, topic=self.input_name,
                                        timestamp=from_ms(modified_ms))
        return name

    def record_of(self, uri: str) -> TestRecord:
        """The record of the landed file Spark logged as ``uri``: the file's name as key,
        its contents as landed as value (None for a file the driver did not land)."""
        name = os.path.basename(unquote(urlparse(uri).path))
        return self._landed.get(name) or TestRecord(value=None, key=name,
                                                    topic=self.input_name)

    def clear(self) -> None:
        """Forget every landed file (their folder was deleted, or is being emptied)."""
        self._landed.clear()
        self._last_ms = None

    def _checked(self, name: object) -> str:
        if not isinstance(name, str):
            raise InvalidArgumentTypeError(
                f"input {self.input_name!r}: a file name is a str, got {type(name).__name__}")
        if not _NAME.match(name) or name in (".", ".."):
            raise InvalidArgumentError(
                f"input {self.input_name!r}: file name {name!r} must be letters, digits and "
                "'._-=+@,' (no folders: Spark reads the files of the input's one directory)")
        if name in self._landed:
            raise InvalidArgumentError(
                f"input {self.input_name!r}: a file named {name!r} was landed already; land "
                "the new contents under another name (Spark reads a path once: a file "
                "rewritten in place after Spark listed it is never read again)")
        return name

    def _next_name(self) -> str:
        number = len(self._landed)
        while True:
            name = f"part-{number:05d}.{self._extension}"
            if name not in self._landed:
                return name
            number += 1


class LandingDirs:
    """One driver's landing directories, under one temporary folder (see the module
    doc). The folder exists while a query set holds it."""

    def __init__(self) -> None:
        self._root: str | None = None
        self._dirs: dict[str, LandingDir] = {}
        self._holders: set[int] = set()

    def directory(self, input_name: str, source_format: str) -> LandingDir:
        """Input ``input_name``'s directory, made on the first call (the same one for
        every build of the driver's topology)."""
        found = self._dirs.get(input_name)
        if found is None:
            if self._root is None:
                self._root = tempfile.mkdtemp(prefix="pyspark-streamtest-landing-",
                                              dir=temp_root(None))
            found = LandingDir(input_name, os.path.join(self._root, input_name),
                               source_format)
            self._dirs[input_name] = found
        os.makedirs(found.path, exist_ok=True)
        return found

    def acquire(self, holder: object) -> None:
        """``holder`` (a query set) uses the directories: they exist until it releases
        them (made again, empty, after the folder was deleted by a reset)."""
        self._holders.add(id(holder))
        for landing in self._dirs.values():
            os.makedirs(landing.path, exist_ok=True)

    def release(self, holder: object) -> None:
        """``holder`` is done; the last holder's release deletes the folder and every
        landed file."""
        if id(holder) in self._holders:
            self._holders.discard(id(holder))
            self.release_if_unheld()

    def release_if_unheld(self) -> None:
        """Delete the folder if no query set holds it (a build that failed)."""
        if not self._holders and self._root is not None:
            shutil.rmtree(self._root, ignore_errors=True)
            for landing in self._dirs.values():
                landing.clear()


_DRIVERS: WeakKeyDictionary[Jvm, LandingDirs] = WeakKeyDictionary()


def landing_dirs(jvm: Jvm, *, make: bool = True) -> LandingDirs | None:
    """The landing directories of the driver whose JVM handle is ``jvm`` (see the module
    doc); None without ``make`` if it has declared no file input."""
    found = _DRIVERS.get(jvm)
    if found is None and make:
        found = _DRIVERS[jvm] = LandingDirs()
    return found


@dataclass(frozen=True)
class FileSource:
    """What a file input reads: Spark's reader, with the landing directory as path."""

    source_format: str
    options: tuple[tuple[str, str], ...]
    landing: LandingDir = field(compare=False)


class LandingSource:
    """A file input's source as the query runner sees it (beside the memory streams of
    row inputs): Spark's file source over the landing directory. Nothing is handed to
    it: Spark lists the directory at each trigger. It has no JSON-lines leaf, so batch
    replays (late records, a failed batch's culprit) cannot feed it."""

    raw_attribute: Any = None

    def __init__(self, dataframe: DataFrame, leaf_id: int, landing: LandingDir) -> None:
        self.dataframe = dataframe
        self.raw_expr_id = leaf_id
        self.landing = landing

    def reset(self) -> None:
        """Empty the landing directory (``driver.reset()``)."""
        self.landing.clear()
        if os.path.isdir(self.landing.path):
            shutil.rmtree(self.landing.path)
            os.makedirs(self.landing.path)

    def pad_to(self, offset: int | None) -> None:
        """Nothing: Spark's file source goes on from its own log in the checkpoint."""

    def add_json_lines(self, lines: list[str]) -> None:
        raise AssertionError("internal error: rows piped into a file input")

    def add_json_blocks(self, blocks: list[list[str]]) -> None:
        raise AssertionError("internal error: rows piped into a file input")

    def add_empty_batch(self) -> None:
        raise AssertionError("internal error: rows piped into a file input")


def file_source(
    jvm: Jvm, name: str, source_format: object, schema: StructType | str | None,
    options: Mapping[str, object] | None,
) -> tuple[LandingSource, FileSource]:
    """File input ``name``'s source: Spark's reader of ``source_format`` with ``schema``
    and ``options`` over the input's landing directory. Raises
    :class:`~pyspark_streamtest.errors.TopologyError` for bad arguments and with
    Spark's message for a reader Spark refuses."""
    if not isinstance(source_format, str) or not source_format.strip():
        raise TopologyError(
            f"file input {name!r}: format must be a file format Spark reads ('json', "
            f"'csv', 'parquet', 'orc', 'text'...), got {source_format!r}")
    if schema is not None and not isinstance(schema, (str, StructType)):
        raise TopologyError(
            f"file input {name!r}: schema must be a DDL string or a StructType (or None "
            f"for Spark's own, as text has), got {type(schema).__name__}")
    if options is not None and not isinstance(options, Mapping):
        raise TopologyError(
            f"file input {name!r}: options must be a mapping of reader options, got "
            f"{type(options).__name__}")
    # as PySpark sends them: booleans as true/false
    texts = {str(key): ("true" if value is True else "false" if value is False else str(value))
             for key, value in (options or {}).items()}
    if "path" in {key.lower() for key in texts}:
        raise TopologyError(
            f"file input {name!r}: options hold a path; the input reads its own landing "
            "directory (land files with the input handle's land_file / land_lines)")
    dirs = landing_dirs(jvm)
    assert dirs is not None
    landing = dirs.directory(name, source_format.lower())
    try:
        frame, leaf_id = file_stream(jvm, landing.path, source_format=source_format,
                                     schema=schema, options=texts)
    except NotAFileSourceError as error:
        raise TopologyError(f"file input {name!r}: {error}") from None
    except Exception as error:
        text = java_error_text(error).strip().splitlines()
        raise TopologyError(
            f"file input {name!r}: Spark refused the reader format({source_format!r}) "
            f"with these options and schema: {text[0] if text else type(error).__name__}"
        ) from None
    return (LandingSource(frame, leaf_id, landing),
            FileSource(source_format, tuple(sorted(texts.items())), landing))



class LandedInputs:
    """The file inputs of one query, by the position of their source in Spark's source
    order (the offset log's lines, and the ``sources/<position>`` folders)."""

    def __init__(self, sources: Sequence[str], streams: Mapping[str, object]) -> None:
        self._by_position = {position: stream for position, name in enumerate(sources)
                             if isinstance(stream := streams[name], LandingSource)}
        self._by_input = {s.landing.input_name: s for s in self._by_position.values()}

    def __bool__(self) -> bool:
        return bool(self._by_position)

    def of_batch(self, checkpoint: str, batch_id: int) -> tuple[TestRecord, ...]:
        """The landed files batch ``batch_id`` read, as Spark's logs say (see
        :func:`~pyspark_streamtest._spark.query.file_source.batch_files`), in source
        order, each in the order Spark logged it."""
        return tuple(source.landing.record_of(path)
                     for position, source in self._by_position.items()
                     for path in batch_files(checkpoint, position, batch_id))

    def source_line(self, record: TestRecord) -> tuple[int, str] | None:
        """A landed file's source, with no line (nothing can replay a file's rows)."""
        source = self._by_input.get(record.topic)
        return None if source is None else (source.raw_expr_id, "")

    def why_untraced(self) -> str:
        """Why rows below a file source cannot be traced: a replay cannot feed it."""
        names = ", ".join(repr(name) for name in self._by_input)
        return (f"the query reads files landed in {names}, and the rows of a landed file "
                "are not traced back to it")

    def no_culprit(self, records: Sequence[TestRecord]) -> str | None:
        """Why no record of a failed batch that read landed files is named as the one
        that raised its error (None if it read none): a replay cannot feed a file's
        rows, and Spark's error names the file."""
        files = [repr(r.key) for r in records if r.topic in self._by_input]
        return None if not files else (
            f"the batch read landed files ({', '.join(files)}), and a replay of the batch "
            "cannot feed a file's rows: Spark's error names the file that failed")

