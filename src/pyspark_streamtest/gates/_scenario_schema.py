"""The scenario file format as one table, read by the loader and by the JSON Schema.

:data:`TOP` (the top-level fields) and :data:`STEPS` (the steps and their arguments) say
which keys a scenario file has, which are required, what each value is and what it
means. :mod:`.scenario_file` validates a file by walking them; :func:`scenario_schema`
turns them into a JSON Schema (draft 2020-12) for editors. A value's JSON Schema and
the loader's check of it sit side by side in one :class:`Value`, sharing their
patterns; what JSON Schema cannot say (a time zone the ``datetime`` module would
refuse, ...) only the loader checks.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import date, datetime, timedelta
from typing import Any, TypeAlias

from ..errors import hide_our_frames

__tracebackhide__ = hide_our_frames

__all__ = [
    "STEPS",
    "TOP",
    "CheckError",
    "Entry",
    "ListOf",
    "MapOf",
    "Obj",
    "StepKind",
    "Steps",
    "Value",
    "json_ready",
    "parse_duration",
    "parse_time",
    "scenario_schema",
    "scenario_schema_text",
]

SCHEMA_DIALECT = "https://json-schema.org/draft/2020-12/schema"
_DURATION_PART = r" *([0-9]+) *(ms|s|m|h|d)"
DURATION_PATTERN = rf"({_DURATION_PART})+ *"
# An ISO 8601 instant with a zone, as datetime.fromisoformat (with Z) and YAML read it.
INSTANT_PATTERN = (r"[0-9]{4}-[0-9]{2}-[0-9]{2}[Tt ][0-9]{2}:[0-9]{2}(:[0-9]{2}([.,][0-9]+)?)?"
                   r" *([Zz]|[+-][0-9]{1,2}(:?[0-9]{2})?)")
TIME_PATTERN = rf"(\+{DURATION_PATTERN}|{INSTANT_PATTERN})"
TOPOLOGY_PATTERN = r"[^:\s]+:[^:\s]+"
# A number >= 0 as text: PyYAML reads 1e-9 (no dot) as a string, YAML 1.2 as a number.
NUMBER_PATTERN = r"([0-9]+(\.[0-9]*)?|\.[0-9]+)([eE][-+]?[0-9]+)?"
_UNITS = {"ms": timedelta(milliseconds=1), "s": timedelta(seconds=1),
          "m": timedelta(minutes=1), "h": timedelta(hours=1), "d": timedelta(days=1)}


class CheckError(ValueError):
    """A value a check refuses: the message, and ``sub``, the path below the field it
    concerns (``[2]`` for the third item), if any."""

    def __init__(self, message: str, sub: str = "") -> None:
        super().__init__(message)
        self.sub = sub


def parse_duration(value: Any) -> timedelta:
    """``500ms``, ``1s``, ``2m``, ``1h``, ``1d``, or combinations like ``1m30s``."""
    if isinstance(value, str) and re.fullmatch(DURATION_PATTERN, value):
        parts = re.findall(_DURATION_PART, value)
        return sum((int(n) * _UNITS[u] for n, u in parts), timedelta(0))
    raise ValueError(f"{value!r} is not a duration; write e.g. 500ms, 1s, 2m, 1h or 1m30s")


def parse_time(value: Any, start: datetime) -> datetime:
    """An ISO 8601 instant with a zone (a string, or a ``datetime`` YAML read), or
    ``+DURATION`` after ``start``."""
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


# --- the kinds of values -----------------------------------------------------------------------
Check = Callable[[Any, datetime], Any]


@dataclass(frozen=True)
class Value:
    """A value: its JSON Schema, and the loader's check (given the value and the
    scenario's start time, it returns the loaded value or raises ``ValueError`` with
    the message). ``nullable``: ``null`` is allowed (and loads as None). ``name``: the
    schema is shared under ``$defs``. ``sets_start``: the loaded value is the start
    time later relative times count from."""

    schema: Mapping[str, Any]
    check: Check = field(default=lambda value, start: value)
    nullable: bool = False
    name: str = ""
    sets_start: bool = False


@dataclass(frozen=True)
class Entry:
    """A field of a mapping: its value, what it means, whether it is required (and the
    message when it is missing)."""

    spec: Spec
    doc: str
    required: bool = False
    missing: str = ""


@dataclass(frozen=True)
class Obj:
    """A mapping with known fields. ``one_of``: exactly one of these is given;
    ``any_of``: at least one is; ``choice`` is the message when that does not hold."""

    fields: Mapping[str, Entry]
    not_mapping: str
    unknown: str
    one_of: tuple[str, ...] = ()
    any_of: tuple[str, ...] = ()
    choice: str = ""


@dataclass(frozen=True)
class ListOf:
    """A list of ``item``; ``message`` when the value is no list."""

    item: Spec
    message: str


@dataclass(frozen=True)
class MapOf:
    """A mapping of free names (topics) to ``value``; ``message`` when it is none."""

    value: Spec
    message: str


@dataclass(frozen=True)
class StepKind:
    """A step. ``args``: None for a bare word (``process``); else the arguments.
    ``scalar``: the argument a value that is no mapping stands for (``to``);
    ``mapping``: whether the arguments may be a mapping at all."""

    doc: str
    args: Obj | None = None
    scalar: str = ""
    mapping: bool = True


@dataclass(frozen=True)
class Steps:
    """The non-empty list of steps."""

    kinds: Mapping[str, StepKind] = field(default_factory=dict)


Spec: TypeAlias = "Value | Obj | ListOf | MapOf | Steps"


def _of_type(kind: type | tuple[type, ...], message: str, schema: Mapping[str, Any],
             **options: Any) -> Value:
    def check(value: Any, start: datetime) -> Any:
        if not isinstance(value, kind) or (isinstance(value, bool) and kind is not bool):
            raise ValueError(message)
        return value
    return Value(schema, check, **options)


def _whole(message: str, nullable: bool = False) -> Value:
    def check(value: Any, start: datetime) -> int:
        if not isinstance(value, int) or isinstance(value, bool) or value < 0:
            raise ValueError(message)
        return value
    return Value({"type": "integer", "minimum": 0}, check, nullable=nullable)


def _topology(value: Any, start: datetime) -> str:
    if not isinstance(value, str) or not re.fullmatch(TOPOLOGY_PATTERN, value):
        raise ValueError(f"{value!r} must be 'module:function'")
    return value


def _tolerance(value: Any, start: datetime) -> float:
    if isinstance(value, str) and re.fullmatch(NUMBER_PATTERN, value):
        value = float(value)
    if (isinstance(value, bool) or not isinstance(value, (int, float))
            or not math.isfinite(value) or value < 0):
        raise ValueError("must be a number >= 0, such as 1e-9 (0 compares exactly)")
    return float(value)


def _names(value: Any, start: datetime) -> list[str]:
    if not isinstance(value, list):
        raise ValueError("must be a list of field names, such as [id]")
    for index, name in enumerate(value):
        if not isinstance(name, str) or not name:
            raise CheckError("must be a field name (a non-empty string)", f"[{index}]")
    return value


def _pairs(value: Any, start: datetime) -> list[Any]:
    if not isinstance(value, list):
        raise ValueError("must be a list")
    for index, pair in enumerate(value):
        if not isinstance(pair, list) or len(pair) != 2:
            raise CheckError("must be a [key, value] pair", f"[{index}]")
    return value


ANY = Value({})
STRING = _of_type(str, "must be a string", {"type": "string"})
NAME = Value({"type": "string", "minLength": 1},
             lambda v, s: v if isinstance(v, str) and v else _fail("must be a non-empty string"))
DURATION = Value({"type": "string", "pattern": f"^{DURATION_PATTERN}$",
                  "description": "500ms, 1s, 2m, 1h, 1d or combinations like 1m30s"},
                 lambda v, s: parse_duration(v), name="duration")
TIME = Value({"type": "string", "pattern": f"^{TIME_PATTERN}$",
              "description": "an ISO 8601 instant with a zone (2024-01-01T00:00:01Z) or "
                             "+DURATION after start_time (+5s)"},
             parse_time, name="time")
COUNT = _whole("must be a whole number >= 0")
TOLERANCE = Value({"anyOf": [{"type": "number", "minimum": 0},
                             {"type": "string", "pattern": f"^{NUMBER_PATTERN}$"}],
                   "description": "a number >= 0 (YAML 1.1 reads 1e-9, without a dot, as "
                                  "text: that is taken too)"},
                  _tolerance, name="tolerance")
COLUMNS = Value({"type": "array", "items": {"type": "string", "minLength": 1}}, _names)
BOOL = _of_type(bool, "must be true or false", {"type": "boolean"})
SERDE = _of_type(str, "must be a name such as string or json", {"type": "string"})


def _fail(message: str) -> Any:
    raise ValueError(message)


def _serdes(names: tuple[str, str], what: str) -> MapOf:
    fields = {name: Entry(SERDE, f"the {name.replace('_', ' ')} ({what})") for name in names}
    return MapOf(Obj(fields, f"must be a mapping with {' and/or '.join(sorted(names))}",
                     f"unknown; use {', '.join(sorted(names))}"),
                 "must map topic names to their settings")


def _args(kind: str, fields: Mapping[str, Entry], **options: Any) -> Obj:
    return Obj(fields, "needs a mapping of arguments",
               f"unknown argument; '{kind}' takes {', '.join(sorted(fields))}", **options)


_RECORD = {
    "value": Entry(ANY, "the value: a row as a mapping for plain inputs; anything the "
                        "serializer takes for Kafka inputs; null is a tombstone",
                   required=True, missing="'value' is required (null for a tombstone)"),
    "key": Entry(ANY, "the Kafka key"),
    "timestamp": Entry(Value(TIME.schema, TIME.check, nullable=True, name="time"),
                       "the record's timestamp (TIME)"),
    "headers": Entry(_of_type(dict, "must map header names to values", {"type": "object"},
                              nullable=True), "Kafka headers: name to value"),
    "partition": Entry(_whole("must be a partition number >= 0", nullable=True),
                       "the Kafka partition"),
}
RECORD = Obj(_RECORD, "a record is a mapping with 'value' (and 'key', 'timestamp', "
                      "'headers', 'partition')",
             f"unknown record field; use {', '.join(sorted(_RECORD))}")
_OUTPUT = Entry(NAME, "the output (may be left out when the topology has one)")
_COUNTS = ("total", "updated", "removed", "dropped_by_watermark")

STEPS: Mapping[str, StepKind] = {
    "pipe": StepKind("pipe the records in one call (all or none)", _args("pipe", {
        "topic": Entry(NAME, "the input topic", required=True),
        "records": Entry(ListOf(RECORD, "must be a list of records ({value: ..., "
                                        "timestamp: ...})"), "the records", required=True),
    })),
    "advance_wall_clock": StepKind(
        "move processing time, running each trigger that comes due",
        _args("advance_wall_clock", {"delta": Entry(DURATION, "how far")}),
        scalar="delta", mapping=False),
    "advance_watermark_to": StepKind(
        "driver.advance_watermark_to(...): TIME or {to, output}",
        _args("advance_watermark_to", {"to": Entry(TIME, "the watermark (TIME)", required=True),
                                       "output": _OUTPUT}),
        scalar="to"),
    "process": StepKind("driver.process_all_available()"),
    "restart": StepKind("driver.restart(): stop and resume from the checkpoint"),
    "expect": StepKind(
        "read every record of topic not read by an earlier expect and compare",
        _args("expect", {
            "topic": Entry(NAME, "the output topic", required=True),
            "values": Entry(_of_type(list, "must be a list", {"type": "array"}),
                            "the values, in any order unless ignore_order is false"),
            "key_values": Entry(Value({"type": "array", "items": {
                "type": "array", "minItems": 2, "maxItems": 2}}, _pairs),
                "[key, value] pairs (Kafka topics)"),
            "table": Entry(_of_type(dict, "must map keys to their last values",
                                    {"type": "object"}),
                           "the last value per key, tombstones deleting it (Kafka topics)"),
            "ignore_order": Entry(BOOL, "compare as a multiset (default true)"),
            "rtol": Entry(TOLERANCE, "relative tolerance of floats, as math.isclose's "
                                     "rel_tol (default 0: exact)"),
            "atol": Entry(TOLERANCE, "absolute tolerance of floats, as math.isclose's "
                                     "abs_tol (default 0: exact)"),
            "ignore_columns": Entry(COLUMNS, "top-level fields of the values (rows) left "
                                             "out of both sides"),
        }, one_of=("values", "key_values", "table"),
            choice="give exactly one of 'values', 'key_values' or 'table'")),
    "expect_watermark": StepKind(
        "the watermark the next batch of output runs with: TIME, null or {at, output}",
        _args("expect_watermark", {
            "at": Entry(Value(TIME.schema, TIME.check, nullable=True, name="time"),
                        "the watermark (TIME), or null for none", required=True),
            "output": _OUTPUT,
        }), scalar="at"),
    "expect_state_rows": StepKind(
        "driver.assert_num_state_rows(...): total after the last batch; the others "
        "summed since the previous expect_state_rows",
        _args("expect_state_rows", {
            "output": _OUTPUT, **{name: Entry(COUNT, f"{name.replace('_', ' ')} state rows")
                                  for name in _COUNTS}},
            any_of=_COUNTS, choice="give " + " and/or ".join(repr(n) for n in _COUNTS))),
    "expect_late": StepKind(
        "how many input records output's stateful operator has dropped as late so far",
        _args("expect_late", {"output": _OUTPUT,
                              "count": Entry(COUNT, "the late records", required=True)})),
}

_TOP = {
    "name": Entry(STRING, "the test's name (default: the file name)"),
    "description": Entry(STRING, "what the scenario shows"),
    "topology": Entry(Value({"type": "string", "pattern": f"^{TOPOLOGY_PATTERN}$"}, _topology,
                            nullable=True),
                      "the topology function, module:function (pyspark-streamtest run "
                      "--topology gives or overrides it)"),
    "start_time": Entry(Value(TIME.schema, TIME.check, name="time", sets_start=True),
                        "the driver's start (processing) time"),
    "trigger_interval": Entry(DURATION, "the trigger interval (default 1s)"),
    "inputs": Entry(_serdes(("key_serializer", "value_serializer"), "string, json, ..."),
                    "per Kafka input topic: its serializers"),
    "outputs": Entry(_serdes(("key_deserializer", "value_deserializer"),
                             "default string"),
                     "per Kafka output topic: its deserializers"),
    "steps": Entry(Steps(STEPS), "what to do and check, in order", required=True,
                   missing="'steps' must be a non-empty list"),
}
TOP = Obj(_TOP, "a scenario is a mapping with 'steps' (and 'topology', ...)",
          f"unknown field; known: {', '.join(sorted(_TOP))}")


# --- the JSON Schema ----------------------------------------------------------------------------
def scenario_schema() -> dict[str, Any]:
    """The JSON Schema (draft 2020-12) of scenario files, made from :data:`TOP`."""
    defs: dict[str, Any] = {}
    body = _schema(TOP, defs)
    return {
        "$schema": SCHEMA_DIALECT,
        "title": "pyspark-streamtest scenario file",
        "description": "A streaming test written as data (*.streamtest.yaml / .json).",
        **body,
        "$defs": dict(sorted(defs.items())),
    }


def scenario_schema_text() -> str:
    """:func:`scenario_schema` as the text of ``scenario.schema.json``."""
    return json.dumps(scenario_schema(), indent=2, ensure_ascii=False) + "\n"


def _schema(spec: Spec, defs: dict[str, Any]) -> dict[str, Any]:
    if isinstance(spec, Value):
        schema = dict(spec.schema)
        if spec.name:
            defs[spec.name] = schema
            schema = {"$ref": f"#/$defs/{spec.name}"}
        if spec.nullable:
            schema = {"anyOf": [schema, {"type": "null"}]}
        return schema
    if isinstance(spec, ListOf):
        return {"type": "array", "items": _schema(spec.item, defs)}
    if isinstance(spec, MapOf):
        return {"type": "object", "additionalProperties": _schema(spec.value, defs)}
    if isinstance(spec, Steps):
        return {"type": "array", "minItems": 1,
                "items": {"oneOf": [_step(name, kind, defs)
                                    for name, kind in spec.kinds.items()]}}
    out: dict[str, Any] = {
        "type": "object",
        "properties": {name: {**_schema(entry.spec, defs), "description": entry.doc}
                       for name, entry in spec.fields.items()},
        "additionalProperties": False,
    }
    required = [name for name, entry in spec.fields.items() if entry.required]
    if required:
        out["required"] = required
    if spec.one_of:
        out["oneOf"] = [{"required": [name]} for name in spec.one_of]
    if spec.any_of:
        out["anyOf"] = [{"required": [name]} for name in spec.any_of]
    return out


def _step(name: str, kind: StepKind, defs: dict[str, Any]) -> dict[str, Any]:
    if kind.args is None:
        nothing = {"anyOf": [{"type": "null"}, {"const": True},
                             {"type": "object", "maxProperties": 0}]}
        return {"description": kind.doc, "anyOf": [
            {"const": name},
            {"type": "object", "properties": {name: nothing}, "required": [name],
             "additionalProperties": False}]}
    args = _schema(kind.args, defs)
    if kind.scalar:
        scalar = _schema(kind.args.fields[kind.scalar].spec, defs)
        args = {"anyOf": [scalar, args]} if kind.mapping else scalar
    return {"type": "object", "description": kind.doc,
            "properties": {name: {**args, "description": kind.doc}}, "required": [name],
            "additionalProperties": False}


def json_ready(value: Any) -> Any:
    """YAML data as JSON data: the instants and dates YAML reads become ISO strings, as
    an editor sees them (for checking a YAML file against the schema)."""
    if isinstance(value, (datetime, date)):
        return value.isoformat()
    if isinstance(value, dict):
        return {key: json_ready(item) for key, item in value.items()}
    if isinstance(value, list):
        return [json_ready(item) for item in value]
    return value
