"""What one run of a job under ``from_app`` shares: the topology being declared, the
test's settings, and the names given so far."""

from __future__ import annotations

import re
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Literal, Protocol

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.types import StructType

from ..errors import (
    InvalidArgumentError,
    InvalidArgumentTypeError,
    UnsupportedAppCallError,
    hide_our_frames,
)

__tracebackhide__ = hide_our_frames

_UNSAFE = re.compile(r"[^A-Za-z0-9_.\-]+")

Mode = Literal["append", "update", "complete"]


class Declarer(Protocol):
    """The part of :class:`~pyspark_streamtest.Topology` a job's calls are turned into."""

    @property
    def spark(self) -> SparkSession: ...

    def input(
        self, name: str, *, schema: str | StructType, timestamp_column: str | None = None
    ) -> DataFrame: ...

    def kafka_input(
        self, name: str, *, partitions: int = 1, include_headers: bool = False,
        max_offsets_per_trigger: int | None = None, min_offsets_per_trigger: int | None = None,
        max_trigger_delay: timedelta | None = None, assign: Collection[int] | None = None,
    ) -> DataFrame: ...

    def output(self, name: str, df: DataFrame, *, output_mode: Mode = "append") -> None: ...

    def kafka_output(
        self, name: str, df: DataFrame, *, topic: str | None = None,
        output_mode: Mode = "append",
    ) -> None: ...

    def foreach_batch(
        self, name: str, df: DataFrame, function: Callable[[DataFrame, int], object], *,
        output_mode: Mode = "append",
    ) -> None: ...

    def _set_trigger(self, name: str, interval_ms: int | None,
                     trigger: str = "processingTime") -> None: ...

    def _share_read_limit(self, names: Sequence[str]) -> None: ...

    def _leave_out_input(self, name: str, why: str) -> None: ...

    def _leave_out_outputs(self, names: tuple[str, ...]) -> None: ...

    def _classic(self, df: DataFrame) -> DataFrame: ...

    def _job_io(self) -> AbstractContextManager[None]: ...

    def _processing_time_ms(self, interval: str) -> int: ...


@dataclass(frozen=True)
class AppSettings:
    """What the test tells ``from_app`` about the job's sources."""

    inputs: Mapping[str, str] = field(default_factory=dict)
    """Source (topic, path, table, ``"rate"``, ``"socket"``) -> input name."""
    topics: Sequence[str] = ()
    """The topics a ``subscribePattern`` may match."""
    schemas: Mapping[str, str | StructType] = field(default_factory=dict)
    """Source (table or path) -> its schema, where the job does not state one."""
    ignore_options: frozenset[str] = frozenset()
    """Options the job sets to run without: a file source's rate limits the driver would
    refuse, or a Kafka source's it would honour."""
    outputs: tuple[str, ...] | None = None
    """The only outputs to run (``from_app(outputs=[...])``); None runs every query."""
    partitions: Mapping[str, int] = field(default_factory=dict)
    """A Kafka topic's input name -> its partition count (1 for a topic not named)."""
    argv: tuple[str, ...] = ()
    """The job's command-line arguments: ``sys.argv`` is ``[<its module>, *argv]`` while
    it runs (``from_app(argv=[...])``)."""


@dataclass
class AppRun:
    """One call of the job: the declarer, the settings, the names used so far."""

    declarer: Declarer
    settings: AppSettings
    sources: dict[str, tuple[object, DataFrame]] = field(default_factory=dict)
    """input name -> (what declared it, its DataFrame): a source read twice is one input."""
    outputs: list[str] = field(default_factory=list)
    """Every output name the job's queries were given, selected or not."""
    selected: list[DataFrame] = field(default_factory=list)
    """The DataFrames of the queries that became outputs."""
    left_out: list[tuple[str, DataFrame]] = field(default_factory=list)
    """(name, DataFrame) of the queries ``from_app(outputs=...)`` leaves out."""
    without_available_now: set[str] = field(default_factory=set)
    """Inputs whose source has no ``Trigger.AvailableNow`` of its own (``rate``,
    ``socket``): from Spark 4.0 a query reading one runs ``availableNow`` as ``once``."""

    def is_selected(self, name: str) -> bool:
        """Whether output ``name`` runs (``from_app(outputs=...)`` lists it, or lists
        nothing)."""
        return self.settings.outputs is None or name in self.settings.outputs

    def input_name(self, source: str, default: str) -> str:
        """The name the test gave ``source`` (``inputs=``), else ``default`` made safe."""
        given = self.settings.inputs.get(source)
        if given is not None:
            return given
        return safe_name(default, source)

    def output_name(self, wanted: str) -> str:
        """``wanted`` made safe, with ``-2``, ``-3``... if a query already has it."""
        base = safe_name(wanted, wanted)
        name, n = base, 1
        while name in self.outputs:
            n += 1
            name = f"{base}-{n}"
        self.outputs.append(name)
        return name


def selected_outputs(outputs: Iterable[str] | None) -> tuple[str, ...] | None:
    """``from_app(outputs=...)`` checked: None (every query) or output names."""
    if outputs is None:
        return None
    if isinstance(outputs, str) or not all(isinstance(n, str) for n in outputs):
        raise InvalidArgumentTypeError(
            f"from_app(outputs=...) takes a list of output names, got {outputs!r}")
    names = tuple(dict.fromkeys(outputs))
    if not names:
        raise InvalidArgumentError(
            "from_app(outputs=[]) would run no query; list the outputs to run, or leave "
            "outputs out to run every query of the job")
    return names


def safe_name(text: str, source: str) -> str:
    name = _UNSAFE.sub("_", text).strip("_")
    if not name:
        raise UnsupportedAppCallError(
            f"cannot name the input or output for {source!r}; name it with "
            f"from_app(..., inputs={{{source!r}: 'name'}})"
        )
    return name


def last_segment(path: str) -> str:
    """``s3://bucket/in/payments/`` -> ``payments``."""
    return path.rstrip("/").rsplit("/", 1)[-1] or path
