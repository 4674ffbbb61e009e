"""Scenario files: a streaming test written as data, run by pytest or the command line.

A scenario is a YAML file (read with PyYAML's *safe* loader; ``.json`` files are read
the same way, JSON being YAML) naming a topology and a list of steps. Each step does one
thing to a :class:`~pyspark_streamtest.TopologyTestDriver` or checks one thing::

    name: a late click is dropped
    topology: pyspark_streamtest.canned:clicks_per_user   # module:function
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
``expect: {topic, values | key_values | table, ignore_order}``
    Reads every record of ``topic`` not read by an earlier ``expect`` and compares:
    ``values`` (a list), ``key_values`` (a list of ``[key, value]`` pairs, Kafka
    topics) or ``table`` (Kafka topics: the last value per key, tombstones deleting
    their key). ``ignore_order`` defaults to true: rows of one micro-batch have no
    order in Spark. A failure shows expected and actual side by side.
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

Errors in a file raise :class:`ScenarioError` with the file, line and field
(``late.streamtest.yaml:14: steps[2].pipe.records[0]: 'value' is required``); an error
while a step runs names the step's line too.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from ..core.records import TestRecord
from ..core.time import DEFAULT_START_TIME
from ..errors import StreamTestError, hide_our_frames

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
    ``field`` say where (``line`` is 1-based; None when unknown)."""

    def __init__(self, message: str, *, file: str = "", line: int | None = None,
                 field: str = "") -> None:
        where = file + (f":{line}" if line is not None else "")
        prefix = ": ".join(part for part in (where, field) if part)
        super().__init__(f"{prefix}: {message}" if prefix else message)
        self.file = file
        self.line = line
        self.field = field
        self.reason = message


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
    """Python data from a YAML document, and the line of every path in it."""

    def __init__(self, file: str) -> None:
        self.file = file
        self.lines: dict[str, int] = {}

    def error(self, path: str, message: str) -> ScenarioError:
        line = self.lines.get(path)
        probe = path
        while line is None and probe:
            probe = re.sub(r"(\.[^.\[\]]+|\[\d+\])$", "", probe)
            line = self.lines.get(probe)
        return ScenarioError(message, file=self.file, line=line, field=path)


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
            if not isinstance(key, str):
                raise located.error(path, f"keys must be strings, got {key!r}")
            child = f"{path}.{key}" if path else key
            if key in out:
                located.lines[child] = key_node.start_mark.line + 1
                raise located.error(child, "given twice")
            out[key] = _construct(loader, value_node, child, located)
        return out
    if isinstance(node, yaml.SequenceNode):
        return [_construct(loader, item, f"{path}[{i}]", located)
                for i, item in enumerate(node.value)]
    return loader.construct_object(node, deep=True)


# --- validation -------------------------------------------------------------------------------
_DURATION = re.compile(r"(\d+)(ms|s|m|h|d)")
_UNITS = {"ms": timedelta(milliseconds=1), "s": timedelta(seconds=1),
          "m": timedelta(minutes=1), "h": timedelta(hours=1), "d": timedelta(days=1)}
_TOP = {"name", "description", "topology", "start_time", "trigger_interval", "inputs",
        "outputs", "steps"}
_STEPS: dict[str, tuple[set[str], set[str]]] = {
    # kind: (required keys, optional keys) for mapping arguments
    "pipe": ({"topic", "records"}, set()),
    "advance_watermark_to": ({"to"}, {"output"}),
    "expect": ({"topic"}, {"values", "key_values", "table", "ignore_order"}),
    "expect_watermark": ({"at"}, {"output"}),
    "expect_state_rows": (set(), {"output", "total", "updated", "removed",
                                  "dropped_by_watermark"}),
    "expect_late": ({"count"}, {"output"}),
}
_BARE = {"process", "restart"}
_RECORD_KEYS = {"value", "key", "timestamp", "headers", "partition"}


def parse_duration(value: Any) -> timedelta:
    """``500ms``, ``1s``, ``2m``, ``1h``, ``1d``, or combinations like ``1m30s``."""
    if isinstance(value, str):
        text = value.replace(" ", "")
        parts = _DURATION.findall(text)
        if parts and "".join(n + u for n, u in parts) == text:
            return sum((int(n) * _UNITS[u] for n, u in parts), timedelta(0))
    raise ValueError(f"{value!r} is not a duration; write e.g. 500ms, 1s, 2m, 1h or 1m30s")


def _parse_time(value: Any, start: datetime) -> datetime:
    if isinstance(value, str) and value.startswith("+"):
        return start + parse_duration(value[1:])
    if isinstance(value, str):
        try:
            value = datetime.fromisoformat(value.replace("Z", "+00:00"))
        except ValueError:
            raise ValueError(
                f"{value!r} is not a time; write an ISO instant with a zone "
                "(2024-01-01T00:00:01Z) or +DURATION after start_time (+5s)") from None
    if isinstance(value, datetime):
        if value.tzinfo is None:
            raise ValueError(f"{value.isoformat()} has no time zone; add Z (UTC) or +HH:MM")
        return value
    raise ValueError(f"{value!r} is not a time; write e.g. 2024-01-01T00:00:01Z or +5s")


def load_scenario(path: str | os.PathLike[str]) -> Scenario:
    """Read and validate a scenario file; :class:`ScenarioError` names file, line, field."""
    source = Path(path)
    data, at = _read_document(source)
    if not isinstance(data, dict):
        raise at.error("", "a scenario is a mapping with 'steps' (and 'topology', ...)")
    for key in data:
        if key not in _TOP:
            raise at.error(key, f"unknown field; known: {', '.join(sorted(_TOP))}")

    def checked(path: str, function: Callable[[Any], Any], value: Any) -> Any:
        try:
            return function(value)
        except (ValueError, TypeError) as error:
            raise at.error(path, str(error)) from None

    start = DEFAULT_START
    if "start_time" in data:
        start = checked("start_time", lambda v: _parse_time(v, DEFAULT_START), data["start_time"])
    interval = timedelta(seconds=1)
    if "trigger_interval" in data:
        interval = checked("trigger_interval", parse_duration, data["trigger_interval"])
    topology = data.get("topology")
    if topology is not None and (not isinstance(topology, str) or ":" not in topology):
        raise at.error("topology", f"{topology!r} must be 'module:function'")
    for section in ("name", "description"):
        if section in data and not isinstance(data[section], str):
            raise at.error(section, "must be a string")
    serdes: dict[str, dict[str, Mapping[str, str]]] = {}
    for section, allowed in (("inputs", {"key_serializer", "value_serializer"}),
                             ("outputs", {"key_deserializer", "value_deserializer"})):
        table = data.get(section, {})
        if not isinstance(table, dict):
            raise at.error(section, "must map topic names to their settings")
        for topic, settings in table.items():
            where = f"{section}.{topic}"
            if not isinstance(settings, dict):
                raise at.error(where, f"must be a mapping with {' and/or '.join(sorted(allowed))}")
            for key, value in settings.items():
                if key not in allowed:
                    raise at.error(f"{where}.{key}", f"unknown; use {', '.join(sorted(allowed))}")
                if not isinstance(value, str):
                    raise at.error(f"{where}.{key}", "must be a name such as string or json")
        serdes[section] = table
    steps_data = data.get("steps")
    if not isinstance(steps_data, list) or not steps_data:
        raise at.error("steps" if "steps" in data else "", "'steps' must be a non-empty list")
    steps = tuple(_step(at, f"steps[{i}]", raw, start) for i, raw in enumerate(steps_data))
    return Scenario(
        name=data.get("name") or source.name.split(".")[0],
        path=str(source),
        topology=topology,
        start_time=start,
        trigger_interval=interval,
        steps=steps,
        description=data.get("description", ""),
        inputs=serdes["inputs"],
        outputs=serdes["outputs"],
    )


def _step(at: _Located, path: str, raw: Any, start: datetime) -> Step:
    line = at.lines.get(path)
    kinds = ", ".join(sorted([*_BARE, "advance_wall_clock", *_STEPS]))
    if isinstance(raw, str):
        if raw not in _BARE:
            raise at.error(path, f"unknown step {raw!r}; steps are {kinds}")
        return Step(raw, {}, line, path)
    if not isinstance(raw, dict) or len(raw) != 1:
        raise at.error(path, f"a step is one of {kinds}, written as 'kind: arguments'")
    ((kind, args),) = raw.items()
    where = f"{path}.{kind}"

    def fail(message: str, sub: str = "") -> ScenarioError:
        return at.error(f"{where}.{sub}" if sub else where, message)

    if kind in _BARE:
        if args not in (None, True, {}):
            raise fail(f"'{kind}' takes no arguments")
        return Step(kind, {}, line, path)
    if kind == "advance_wall_clock":
        try:
            return Step(kind, {"delta": parse_duration(args)}, line, path)
        except ValueError as error:
            raise fail(str(error)) from None
    if kind not in _STEPS:
        raise at.error(path, f"unknown step {kind!r}; steps are {kinds}")
    if kind == "advance_watermark_to" and not isinstance(args, dict):
        args = {"to": args}
    if kind == "expect_watermark" and not isinstance(args, dict):
        args = {"at": args}
    if not isinstance(args, dict):
        raise fail("needs a mapping of arguments")
    required, optional = _STEPS[kind]
    for key in args:
        if key not in required | optional:
            raise fail(f"unknown argument; '{kind}' takes {', '.join(sorted(required | optional))}",
                       key)
    missing = sorted(required - set(args))
    if missing:
        raise fail(f"'{missing[0]}' is required")
    out = dict(args)
    for key in ("topic", "output"):
        if key in out and (not isinstance(out[key], str) or not out[key]):
            raise fail("must be a non-empty string", key)
    try:
        if kind == "advance_watermark_to":
            out["to"] = _parse_time(args["to"], start)
        if kind == "expect_watermark" and args["at"] is not None:
            out["at"] = _parse_time(args["at"], start)
    except ValueError as error:
        raise fail(str(error), "to" if kind == "advance_watermark_to" else "at") from None
    if kind == "pipe":
        out["records"] = _records(at, f"{where}.records", args["records"], start)
    if kind == "expect":
        given = [k for k in ("values", "key_values", "table") if k in args]
        if len(given) != 1:
            raise fail("give exactly one of 'values', 'key_values' or 'table'")
        expected = args[given[0]]
        if given[0] == "table" and not isinstance(expected, dict):
            raise fail("must map keys to their last values", "table")
        if given[0] != "table" and not isinstance(expected, list):
            raise fail("must be a list", given[0])
        if given[0] == "key_values":
            for index, pair in enumerate(expected):
                if not isinstance(pair, list) or len(pair) != 2:
                    raise fail("must be a [key, value] pair", f"key_values[{index}]")
        if not isinstance(args.get("ignore_order", True), bool):
            raise fail("must be true or false", "ignore_order")
    if kind in ("expect_state_rows", "expect_late"):
        names = ("count",) if kind == "expect_late" else (
            "total", "updated", "removed", "dropped_by_watermark")
        counts = [k for k in names if k in args]
        if not counts:
            raise fail("give " + " and/or ".join(repr(n) for n in names))
        for key in counts:
            if not isinstance(args[key], int) or isinstance(args[key], bool) or args[key] < 0:
                raise fail("must be a whole number >= 0", key)
    return Step(kind, out, line, path)


def _records(at: _Located, path: str, raw: Any, start: datetime) -> list[TestRecord]:
    if not isinstance(raw, list):
        raise at.error(path, "must be a list of records ({value: ..., timestamp: ...})")
    out = []
    for index, item in enumerate(raw):
        where = f"{path}[{index}]"
        if not isinstance(item, dict):
            raise at.error(where, "a record is a mapping with 'value' (and 'key', "
                                  "'timestamp', 'headers', 'partition')")
        for key in item:
            if key not in _RECORD_KEYS:
                raise at.error(f"{where}.{key}",
                               f"unknown record field; use {', '.join(sorted(_RECORD_KEYS))}")
        if "value" not in item:
            raise at.error(where, "'value' is required (null for a tombstone)")
        timestamp = None
        if item.get("timestamp") is not None:
            try:
                timestamp = _parse_time(item["timestamp"], start)
            except ValueError as error:
                raise at.error(f"{where}.timestamp", str(error)) from None
        headers = item.get("headers") or {}
        if not isinstance(headers, dict):
            raise at.error(f"{where}.headers", "must map header names to values")
        partition = item.get("partition")
        if partition is not None and (not isinstance(partition, int) or partition < 0):
            raise at.error(f"{where}.partition", "must be a partition number >= 0")
        out.append(TestRecord(
            value=item["value"], timestamp=timestamp, key=item.get("key"),
            headers=tuple((str(k), None if v is None else str(v).encode("utf-8"))
                          for k, v in headers.items()),
            partition=partition,
        ))
    return out


