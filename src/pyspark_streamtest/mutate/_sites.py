"""Where a streaming decision is made (a :class:`Site`: the user's file and line, the
call, which part of it) and one way to change it (a :class:`Mutant`)."""

from __future__ import annotations

import hashlib
import json
import linecache
import os
import sys
from dataclasses import dataclass
from types import FrameType
from typing import Any

import _pytest
import pluggy
import pyspark
import pytest

from ..errors import hide_our_frames

__tracebackhide__ = hide_our_frames

# Frames in these folders are not the user's: this package, PySpark, and the standard
# library (contextlib, functools) but for the packages installed inside it, as a Python
# without a venv has them (/usr/local/lib/python3.11/site-packages): a job installed
# there is the user's.
_NOT_USERS = tuple(
    os.path.dirname(os.path.abspath(path)) + os.sep
    for path in (os.path.dirname(__file__), pyspark.__file__, _pytest.__file__,
                 pytest.__file__, pluggy.__file__)
)
"""This package, PySpark, and the test runner (pytest, pluggy): a decision made where
no frame is the user's, as in a canned topology of this package, is not the user's."""
_STDLIB = os.path.dirname(os.path.abspath(os.__file__)) + os.sep
_INSTALLED = ("site-packages", "dist-packages")


@dataclass(frozen=True, order=True)
class Site:
    """One streaming decision in the user's code.

    ``topology``: the topology function or ``from_app`` job that made it
    (``module:qualname``); ``file`` and ``line``: the user's call (relative to the run's
    root folder); ``api``: the call (``withWatermark``, ``window``, ``join``...);
    ``occurrence``: the how-manieth call of ``api`` from that line in one build (a loop
    makes several); ``part``: which argument or piece (``delay``, ``how``,
    ``compare 2``...)."""

    topology: str
    file: str
    line: int
    api: str
    occurrence: int
    part: str

    @property
    def where(self) -> str:
        """``file:line``."""
        return f"{self.file}:{self.line}"



@dataclass(frozen=True, order=True)
class Mutant:
    """One change of one site: ``operator`` (what was done: ``double``, ``append →
    update``, ``key 'user' dropped``...), ``original`` and ``replacement`` as the call
    reads (``withWatermark("ts", "10 seconds")`` and ``"20 seconds"``), and ``kind``:
    the decision's family (``watermark``, ``window``, ``join bound``...), which chooses
    the hint a survivor gets."""

    site: Site
    operator: str
    kind: str
    original: str
    replacement: str
    code: str = ""
    """The user's line of code, stripped (not part of the mutant's identity)."""

    @property
    def id(self) -> str:
        """A stable name of 12 hex digits: the same mutant has the same id in every run
        and process (the sample and the reports use it)."""
        key = json.dumps([*map(str, _site_key(self.site)), self.operator], sort_keys=True)
        return hashlib.sha256(key.encode()).hexdigest()[:12]

    @property
    def description(self) -> str:
        """``withWatermark("ts", "10 seconds") → "20 seconds"``."""
        return f"{self.original} → {self.replacement}"

    def to_json(self) -> dict[str, Any]:
        """The mutant as JSON values (the report's and the xdist workers' form)."""
        return {"id": self.id, "site": vars(self.site).copy(), "operator": self.operator,
                "kind": self.kind, "original": self.original,
                "replacement": self.replacement, "code": self.code}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Mutant:
        """The inverse of :meth:`to_json`."""
        return cls(Site(**data["site"]), data["operator"], data["kind"], data["original"],
                   data["replacement"], data.get("code", ""))


def _site_key(site: Site) -> tuple[object, ...]:
    return (site.topology, site.file, site.line, site.api, site.occurrence, site.part)


def users_frame(root: str) -> tuple[str, int, str]:
    """The file (relative to ``root`` where inside it), line and code of the innermost
    frame of the caller's stack that is the user's code."""
    frame: FrameType | None = sys._getframe(1)
    while frame is not None:
        path = os.path.abspath(frame.f_code.co_filename)
        if is_users(path) and not frame.f_code.co_filename.startswith("<"):
            code = linecache.getline(path, frame.f_lineno).strip()
            return _relative(path, root), frame.f_lineno, code
        frame = frame.f_back
    return "<unknown>", 0, ""


def is_users(path: str, *, stdlib: str = _STDLIB) -> bool:
    """Whether the file at ``path`` (absolute) is the user's code: not this package's,
    not PySpark's, not the standard library's (a package installed under the standard
    library's folder is not the standard library)."""
    if path.startswith(_NOT_USERS):
        return False
    if path.startswith(stdlib):
        return any(folder in _INSTALLED for folder in path[len(stdlib):].split(os.sep)[:-1])
    return True


def _relative(path: str, root: str) -> str:
    try:
        relative = os.path.relpath(path, root)
    except ValueError:
        return path
    return path if relative.startswith("..") else relative


def show(value: object) -> str:
    """An argument as the user wrote it, near enough: strings in double quotes, a
    column by its name, lists as lists."""
    if isinstance(value, str):
        return json.dumps(value)
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(map(show, value)) + "]"
    text = str(value)
    if text.startswith("Column<'") and text.endswith("'>"):
        inner = text[8:-2]
        return f"col({json.dumps(inner)})" if inner.replace("_", "").replace(
            ".", "").isalnum() else inner
    return text
