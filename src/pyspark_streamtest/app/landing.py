"""``from_app(..., land_files=...)``: which of the job's file sources read files the
test lands, rather than rows it pipes."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Protocol

from pyspark.sql import DataFrame
from pyspark.sql.types import StructType

from ..errors import InvalidArgumentTypeError, hide_our_frames
from ._context import AppSettings, Declarer

__tracebackhide__ = hide_our_frames

__all__ = ["FileDeclarer", "LandingSettings", "checked_land_files", "lands_files"]


class FileDeclarer(Declarer, Protocol):
    """The declarer of a file input (what :meth:`Topology.file_input
    <pyspark_streamtest.Topology.file_input>` does)."""

    def file_input(
        self, name: str, *, format: str, schema: str | StructType | None = None,
        options: Mapping[str, str | int | float | bool] | None = None,
    ) -> DataFrame: ...


@dataclass(frozen=True)
class LandingSettings(AppSettings):
    """:class:`AppSettings` with the file sources that land files."""

    land_files: bool | frozenset[str] = False
    """True: every file source the job reads; else the input names listed."""


def lands_files(settings: AppSettings, input_name: str) -> bool:
    """Whether the file source named ``input_name`` reads landed files."""
    if not isinstance(settings, LandingSettings):
        return False
    wanted = settings.land_files
    return wanted is True or (isinstance(wanted, frozenset) and input_name in wanted)


def checked_land_files(land_files: bool | Iterable[str]) -> bool | frozenset[str]:
    """``from_app(land_files=...)`` checked: a bool, or the input names."""
    if isinstance(land_files, bool):
        return land_files
    if isinstance(land_files, (str, bytes)) or not isinstance(land_files, Iterable):
        raise InvalidArgumentTypeError(
            "from_app(land_files=...) takes True (every file source the job reads) or a "
            f"list of input names, got {land_files!r}")
    names = frozenset(land_files)
    if not all(isinstance(name, str) for name in names):
        raise InvalidArgumentTypeError(
            f"from_app(land_files=...) takes input names (str), got {sorted(map(repr, names))}")
    return names
