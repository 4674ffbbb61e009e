"""Scenario files: a streaming test written as data, run by pytest or the command line.

A scenario is a YAML file (read with PyYAML's *safe* loader; ``.json`` files are read
the same way, JSON being YAML) naming a topology and a list of steps. Each step does one
thing to a :class:`~pyspark_streamtest.TopologyTestDriver` or checks one thing::

    name: a late click is dropped
    topology: pyspark_streamtest.gates.canned:clicks_per_user   # module:function
    start_time: 2024-01-01T00:00:00Z     # the driver's start (processing) time
    trigger_interval: 1s
    steps:
      - pipe:
          topic: clicks
          records:
            - {value: {user: alice, url: /home}, timestamp: 2024-01-01T00:00:01Z}
            - {value: {user: bob, url: /home}, timestamp: +2s}   # start_time + 2 s
      - advance_wall_clock: 1s             # runs the batches that come due
      - expect:
          topic: counts
          values: []                       # nothing emitted yet
      - advance_watermark_to: 2024-01-01T00:00:30Z
      - restart                            # stop and resume from the checkpoint
      - process                            # driver.process_all_available()
      - expect:
          topic: counts
          values:
            - {window: {start: 2024-01-01T00:00:00Z, end: 2024-01-01T00:00:10Z},
               user: alice, count: 1}

Top-level fields: ``name`` (default: the file name), ``description``, ``topology``
(``module:function``; ``pyspark-streamtest run --topology`` gives or overrides it),
``start_time``, ``trigger_interval``, ``inputs`` (per Kafka input topic:
``key_serializer``/``value_serializer``), ``outputs`` (per Kafka output topic:
``key_deserializer``/``value_deserializer``; default ``string`` for both), ``steps``.

Steps (each a one-key mapping, or a bare word for ``process`` and ``restart``):

``pipe: {topic, records}``
    Pipes the records in one call (all or none). A record is a mapping with ``value``
    (a row as a mapping for plain inputs; anything the serializer takes for Kafka
    inputs; ``null`` is a tombstone), and optionally ``key``, ``timestamp``,
    ``headers`` (mapping) and ``partition`` (Kafka inputs).
``advance_wall_clock: DURATION``
    Moves processing time, running each trigger that comes due (``500ms``, ``1s``,
    ``2m``, ``1h``, ``1m30s``).
``advance_watermark_to: TIME`` or ``{to: TIME, output: NAME}``
    :meth:`~pyspark_streamtest.TopologyTestDriver.advance_watermark_to`.
``process``, ``restart``
    :meth:`~pyspark_streamtest.TopologyTestDriver.process_all_available`,
    :meth:`~pyspark_streamtest.TopologyTestDriver.restart`.
``expect: {topic, values | key_values | table, ignore_order, rtol, atol, ignore_columns}``
    Reads every record of ``topic`` not read by an earlier ``expect`` and compares:
    ``values`` (a list), ``key_values`` (a list of ``[key, value]`` pairs, Kafka
    topics) or ``table`` (Kafka topics: the last value per key, tombstones deleting
    their key). ``ignore_order`` defaults to true: rows of one micro-batch have no
    order in Spark (a ``table`` has no order). ``rtol`` and ``atol`` (numbers >= 0,
    default 0: exact) compare every number, one of a pair a float, as
    ``math.isclose(a, b, rel_tol=rtol, abs_tol=atol)``; ``ignore_columns`` (a list of
    field names) leaves those top-level fields of the values (for ``key_values`` and
    ``table``: of each value, not the key) out of both sides. A failure shows expected
    and actual side by side, and the tolerances and ignored columns in force.
``expect_watermark: {output, at: TIME | null}``
    The watermark the next batch of ``output`` runs with (``output`` may be left out
    when the topology has one output).
``expect_state_rows: {output, total, updated, removed, dropped_by_watermark}``
    :meth:`~pyspark_streamtest.TopologyTestDriver.assert_num_state_rows` (any of them):
    ``total`` after the last batch; the others summed over the batches since the previous
    ``expect_state_rows`` (or since the start or a restart), as Spark's
    ``assertNumStateRows``.
``expect_late: {output, count}``
    How many input records ``output``'s stateful operator has dropped as late so far.

TIME is an ISO 8601 instant with a zone (``2024-01-01T00:00:01Z``; YAML reads it
unquoted) or ``+DURATION`` after ``start_time``. Expected values compare as in
:func:`~pyspark_streamtest.assert_values_equal`; strings that are ISO instants with a
zone compare equal to the same instant.

Errors in a file raise one :class:`ScenarioError` listing every error found, one a line,
in the file's order, each with the file, line and field
(``late.streamtest.yaml:14: steps[2].pipe.records[0]: 'value' is required``); an error
while a step runs names the step's line too. The fields and their values are defined
once, in :mod:`._scenario_schema`, which also makes the JSON Schema of the format
(``pyspark-streamtest scenario-schema``).
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from ..core.records import TestRecord
from ..core.time import DEFAULT_START_TIME
from ..errors import StreamTestError, hide_our_frames
from ._scenario_schema import (
    TOP,
    CheckError,
    ListOf,
    Obj,
    Spec,
    StepKind,
    Steps,
    Value,
    parse_duration,
)

__tracebackhide__ = hide_our_frames

__all__ = [
    "SCENARIO_SUFFIXES",
    "Scenario",
    "ScenarioError",
    "Step",
    "load_scenario",
    "parse_duration",
]

SCENARIO_SUFFIXES = (".streamtest.yaml", ".streamtest.yml", ".streamtest.json")
DEFAULT_START = DEFAULT_START_TIME


class ScenarioError(StreamTestError, ValueError):
    """A scenario file is invalid, or a step could not run. ``file``, ``line`` and
    ``field`` say where (``line`` is 1-based; None when unknown).

    An invalid file raises one error for all its mistakes: its message has one line per
    mistake (``file:line: field: message``), in the file's order; ``file``, ``line``,
    ``field`` and ``reason`` are the first's, and ``errors`` lists them all, each a
    :class:`ScenarioError` of its own."""

    def __init__(self, message: str, *, file: str = "", line: int | None = None,
                 field: str = "", more: Sequence[ScenarioError] = ()) -> None:
        where = file + (f":{line}" if line is not None else "")
        prefix = ": ".join(part for part in (where, field) if part)
        text = f"{prefix}: {message}" if prefix else message
        super().__init__("\n".join([text, *(str(error) for error in more)]))
        self.file = file
        self.line = line
        self.field = field
        self.reason = message
        self.more = tuple(more)

    @property
    def errors(self) -> tuple[ScenarioError, ...]:
        """Every error of the file, each on its own, in the file's order."""
        if not self.more:
            return (self,)
        first = ScenarioError(self.reason, file=self.file, line=self.line, field=self.field)
        return (first, *self.more)


@dataclass(frozen=True)
class Step:
    """One step: ``kind`` (``pipe``, ``advance_wall_clock``, ...), its validated
    ``args``, and where it is written (``line``, ``field`` such as ``steps[3]``)."""

    kind: str
    args: Mapping[str, Any]
    line: int | None
    field: str


@dataclass(frozen=True)
class Scenario:
    """A validated scenario file (see the module doc)."""

    name: str
    path: str
    topology: str | None
    start_time: datetime
    trigger_interval: timedelta
    steps: tuple[Step, ...]
    description: str = ""
    inputs: Mapping[str, Mapping[str, str]] = field(default_factory=dict)
    outputs: Mapping[str, Mapping[str, str]] = field(default_factory=dict)


# --- loading with line numbers ---------------------------------------------------------------
class _Located:
    """Python data from a YAML document, the line of every path in it, and the errors
    found so far."""

    def __init__(self, file: str) -> None:
        self.file = file
        self.lines: dict[str, int] = {}
        self.errors: list[ScenarioError] = []

    def error(self, path: str, message: str, line: int | None = None) -> ScenarioError:
        """Note an error at ``path`` (on ``line``, else the line of the nearest path
        known)."""
        line = line or self.lines.get(path)
        probe = path
        while line is None and probe:
            probe = re.sub(r"(\.[^.\[\]]+|\[\d+\])$", "", probe)
            line = self.lines.get(probe)
        error = ScenarioError(message, file=self.file, line=line, field=path)
        self.errors.append(error)
        return error

    def raise_errors(self) -> None:
        """Raise one :class:`ScenarioError` for every error noted, in the file's order."""
        if self.errors:
            first, *more = sorted(self.errors, key=lambda e: (e.line is None, e.line or 0))
            raise ScenarioError(first.reason, file=first.file, line=first.line,
                                field=first.field, more=more)


def _read_document(path: Path) -> tuple[Any, _Located]:
    import yaml

    located = _Located(path.name)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as error:
        raise ScenarioError(f"cannot read the file: {error.strerror}", file=str(path)) from None
    loader = yaml.SafeLoader(text)
    try:
        node = loader.get_single_node()
        if node is None:
            raise ScenarioError("the file is empty; a scenario needs 'steps'", file=path.name)
        return _construct(loader, node, "", located), located
    except yaml.MarkedYAMLError as error:
        mark = error.problem_mark or error.context_mark
        raise ScenarioError(
            f"not valid YAML: {error.problem or error.context}",
            file=path.name, line=None if mark is None else mark.line + 1,
        ) from None
    finally:
        loader.dispose()


def _construct(loader: Any, node: Any, path: str, located: _Located) -> Any:
    import yaml

    located.lines[path] = node.start_mark.line + 1
    if isinstance(node, yaml.MappingNode):
        loader.flatten_mapping(node)
        out: dict[Any, Any] = {}
        for key_node, value_node in node.value:
            key = loader.construct_object(key_node, deep=True)
            line = key_node.start_mark.line + 1
            if not isinstance(key, str):
                located.error(path, f"keys must be strings, got {key!r}", line)
                continue
            child = f"{path}.{key}" if path else key
            if key in out:
                located.error(child, "given twice", line)
                continue
            out[key] = _construct(loader, value_node, child, located)
            located.lines[child] = line  # errors name the key's line
        return out
    if isinstance(node, yaml.SequenceNode):
        return [_construct(loader, item, f"{path}[{i}]", located)
                for i, item in enumerate(node.value)]
    return loader.construct_object(node, deep=True)


# --- validation: a walk over the table of fields (._scenario_schema) ------------------------
_INVALID: Any = object()


def load_scenario(path: str | os.PathLike[str]) -> Scenario:
    """Read and validate a scenario file; one :class:`ScenarioError` names every error
    of the file, each with its file, line and field."""
    source = Path(path)
    data, at = _read_document(source)
    if not isinstance(data, dict):
        at.error("", TOP.not_mapping)
        at.raise_errors()
    walk = _Walk(at)
    loaded = walk.value(TOP, data, "")
    at.raise_errors()
    serdes = {section: {topic: dict(settings) for topic, settings in
                        loaded.get(section, {}).items()} for section in ("inputs", "outputs")}
    return Scenario(
        name=loaded.get("name") or source.name.split(".")[0],
        path=str(source),
        topology=loaded.get("topology"),
        start_time=walk.start,
        trigger_interval=loaded.get("trigger_interval", timedelta(seconds=1)),
        steps=tuple(loaded["steps"]),
        description=loaded.get("description", ""),
        inputs=serdes["inputs"],
        outputs=serdes["outputs"],
    )


class _Walk:
    """Validates data against a spec of the table, noting every error on the way."""

    def __init__(self, at: _Located) -> None:
        self.at = at
        self.start = DEFAULT_START

    def value(self, spec: Spec, raw: Any, path: str) -> Any:
        """The loaded value, or ``_INVALID`` (its errors noted)."""
        if isinstance(spec, Value):
            if raw is None and spec.nullable:
                return None
            try:
                loaded = spec.check(raw, self.start)
            except CheckError as error:
                self.at.error(path + error.sub, str(error))
                return _INVALID
            except (ValueError, TypeError) as error:
                self.at.error(path, str(error))
                return _INVALID
            if spec.sets_start:
                self.start = loaded
            return loaded
        if isinstance(spec, Obj):
            return self.mapping(spec, raw, path)
        if isinstance(spec, Steps):
            return self.steps(spec.kinds, raw, path)
        if isinstance(spec, ListOf):
            if not isinstance(raw, list):
                self.at.error(path, spec.message)
                return _INVALID
            items = [self.value(spec.item, item, f"{path}[{i}]") for i, item in enumerate(raw)]
            return _INVALID if any(item is _INVALID for item in items) else items
        if not isinstance(raw, dict):  # MapOf
            self.at.error(path, spec.message)
            return _INVALID
        named = {key: self.value(spec.value, item, f"{path}.{key}") for key, item in raw.items()}
        return _INVALID if _INVALID in named.values() else named

    def mapping(self, spec: Obj, raw: Any, path: str) -> Any:
        def inside(key: str) -> str:
            return f"{path}.{key}" if path else key

        if not isinstance(raw, dict):
            self.at.error(path, spec.not_mapping)
            return _INVALID
        valid = True
        for key in raw:
            if key not in spec.fields:
                self.at.error(inside(key), spec.unknown)
                valid = False
        out: dict[str, Any] = {}
        for name, entry in spec.fields.items():
            if name not in raw:
                if entry.required:
                    self.at.error(path, entry.missing or f"'{name}' is required")
                    valid = False
                continue
            out[name] = self.value(entry.spec, raw[name], inside(name))
            valid = valid and out[name] is not _INVALID
        given = [name for name in spec.one_of or spec.any_of if name in raw]
        if (spec.one_of and len(given) != 1) or (spec.any_of and not given):
            self.at.error(path, spec.choice)
            valid = False
        return out if valid else _INVALID

    def steps(self, kinds: Mapping[str, StepKind], raw: Any, path: str) -> Any:
        if not isinstance(raw, list) or not raw:
            self.at.error(path, "'steps' must be a non-empty list")
            return _INVALID
        steps = [self.step(kinds, item, f"{path}[{i}]") for i, item in enumerate(raw)]
        return _INVALID if _INVALID in steps else steps

    def step(self, kinds: Mapping[str, StepKind], raw: Any, path: str) -> Any:
        line = self.at.lines.get(path)
        names = ", ".join(sorted(kinds))
        if isinstance(raw, str):
            if raw in kinds and kinds[raw].args is None:
                return Step(raw, {}, line, path)
            self.at.error(path, f"unknown step {raw!r}; steps are {names}")
            return _INVALID
        if not isinstance(raw, dict) or len(raw) != 1:
            self.at.error(path, f"a step is one of {names}, written as 'kind: arguments'")
            return _INVALID
        ((kind, args),) = raw.items()
        where = f"{path}.{kind}"
        if kind not in kinds:
            self.at.error(path, f"unknown step {kind!r}; steps are {names}")
            return _INVALID
        spec = kinds[kind]
        if spec.args is None:
            if not (args is None or args is True or args == {}):
                self.at.error(where, f"'{kind}' takes no arguments")
                return _INVALID
            return Step(kind, {}, line, path)
        if not spec.mapping:
            loaded = {spec.scalar: self.value(spec.args.fields[spec.scalar].spec, args, where)}
            return _INVALID if _INVALID in loaded.values() else Step(kind, loaded, line, path)
        if spec.scalar and not isinstance(args, dict):
            args = {spec.scalar: args}
        loaded = self.mapping(spec.args, args, where)
        if loaded is _INVALID:
            return _INVALID
        if kind == "pipe":
            loaded["records"] = [_record(item) for item in loaded["records"]]
        return Step(kind, loaded, line, path)


def _record(item: Mapping[str, Any]) -> TestRecord:
    headers = item.get("headers") or {}
    return TestRecord(
        value=item["value"], timestamp=item.get("timestamp"), key=item.get("key"),
        headers=tuple((str(k), None if v is None else str(v).encode("utf-8"))
                      for k, v in headers.items()),
        partition=item.get("partition"),
    )

