"""A pipeline's file inputs: folders the driver makes, whose paths it gives the
pipeline through its configuration, and the files a test lands in them."""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Mapping
from pathlib import Path

from ..errors import (
    InvalidArgumentError,
    InvalidArgumentTypeError,
    UnknownDatasetError,
    hide_our_frames,
)

__tracebackhide__ = hide_our_frames

__all__ = ["FileInputs"]

_INPUT_NAME = re.compile(r"^[A-Za-z0-9_\-]+$")
_FILE_NAME = re.compile(r"^[A-Za-z0-9._\-=+@,]+$")


class FileInputs:
    """The folders of ``file_inputs`` (an input name to the configuration key its
    folder is given by) under ``root``, and what was landed in each."""

    def __init__(self, root: Path, file_inputs: Mapping[str, str] | None) -> None:
        self._folders: dict[str, Path] = {}
        self._landed: dict[str, set[str]] = {}
        self.configuration: dict[str, str] = {}
        """The configuration keys the folders are given by, and their paths."""
        for name, key in _checked(file_inputs).items():
            folder = root / name
            folder.mkdir(parents=True)
            self._folders[name] = folder
            self._landed[name] = set()
            self.configuration[key] = str(folder)

    def path(self, name: str) -> Path:
        if name not in self._folders:
            raise UnknownDatasetError(
                f"no file input {name!r}; the driver's file inputs are "
                f"{sorted(self._folders) or 'none'} (declare one with file_inputs=)")
        return self._folders[name]

    def land_file(self, input_name: str, name: str, contents: str | bytes) -> str:
        folder = self.path(input_name)
        if not isinstance(name, str) or not _FILE_NAME.match(name) or name in (".", ".."):
            raise InvalidArgumentError(
                f"input {input_name!r}: file name {name!r} must be letters, digits and "
                "'._-=+@,' (no folders)")
        if name in self._landed[input_name]:
            raise InvalidArgumentError(
                f"input {input_name!r}: a file named {name!r} was landed already; land the "
                "new contents under another name (Spark's file source reads a path once)")
        if not isinstance(contents, (str, bytes)):
            raise InvalidArgumentTypeError(
                f"input {input_name!r}: a landed file's contents are str or bytes, got "
                f"{type(contents).__name__}")
        data = contents.encode("utf-8") if isinstance(contents, str) else contents
        hidden = folder / f".{name}.landing"  # Spark's listing skips names starting with "."
        hidden.write_bytes(data)
        os.replace(hidden, folder / name)
        self._landed[input_name].add(name)
        return str(folder / name)

    def land_lines(self, input_name: str, lines: Iterable[str], name: str | None) -> str:
        if isinstance(lines, str):
            raise InvalidArgumentTypeError(
                "lines is an iterable of lines, got one str; wrap it in a list")
        texts = list(lines)
        if not all(isinstance(line, str) for line in texts):
            raise InvalidArgumentTypeError(
                f"input {input_name!r}: each line is a str (a JSON or CSV line)")
        if name is None:
            name = f"part-{len(self._landed.get(input_name, ())):05d}"
        return self.land_file(input_name, name, "".join(f"{line}\n" for line in texts))


def _checked(file_inputs: Mapping[str, str] | None) -> dict[str, str]:
    if file_inputs is None:
        return {}
    if not isinstance(file_inputs, Mapping):
        raise InvalidArgumentTypeError(
            "file_inputs maps an input name to the configuration key of its folder, "
            f"got {type(file_inputs).__name__}")
    for name, key in file_inputs.items():
        if not isinstance(name, str) or not _INPUT_NAME.match(name):
            raise InvalidArgumentError(
                f"file input name {name!r} must be letters, digits, '_' and '-'")
        if not isinstance(key, str) or not key:
            raise InvalidArgumentError(
                f"file input {name!r}: its configuration key must be a non-empty str, "
                f"got {key!r}")
    return dict(file_inputs)
