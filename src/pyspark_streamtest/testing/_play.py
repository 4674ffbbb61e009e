"""Playing a schedule through a driver: each step becomes the driver call it stands
for, and each piped event the record its input takes (the face is
:mod:`pyspark_streamtest.testing.strategies`; :mod:`._runs` runs it on fresh drivers).

One runner for every driver: a ``Topology`` driver or a ``from_app`` one, one input or
several (each ``Pipe`` may name its input), plain inputs (rows), Kafka inputs (keys
and values through the input's serializers) or file inputs (a step's events landed as
one file of lines, which Spark's own reader parses), and a user's mapping from an
event to the record when the default shapes do not fit.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from datetime import datetime, timedelta
from typing import Any

from ..core.records import BatchRecord, TestRecord
from ..errors import InvalidArgumentError, InvalidArgumentTypeError, hide_our_frames
from ..kafka.serdes import serializer
from .schedule import AdvanceWatermark, Drain, Event, Pipe, Restart, Schedule, Tick

__tracebackhide__ = hide_our_frames

__all__ = ["RecordFunction", "SerializerChoice", "run_schedule"]

RecordFunction = Callable[[Event], Any]
"""A user's mapping of an event to the record piped: a :class:`TestRecord`, or a
``(key, value, timestamp)`` tuple."""
SerializerChoice = Any
"""A serializer (a name such as ``"json"``, or a function returning bytes), one per
input name in a mapping, or None (``"auto"``)."""


def run_schedule(
    driver: Any,
    schedule: Schedule,
    *,
    input: str | None = "events",
    output: str = "out",
    trigger_interval: timedelta = timedelta(seconds=1),
    to_record: RecordFunction | Mapping[str, RecordFunction] | None = None,
    key_serializer: SerializerChoice = None,
    value_serializer: SerializerChoice = None,
) -> tuple[BatchRecord, ...]:
    """Run ``schedule`` through ``driver`` (a ``TopologyTestDriver``, made from a
    topology or by ``from_app``) and return the batches of ``output``.

    ``Pipe`` pipes its events in one call into the input it names, or into ``input``
    when it names none. Each event becomes a record, by ``to_record`` when given (a
    function of the event, or a mapping of input name to one; it returns a
    :class:`~pyspark_streamtest.TestRecord` or a ``(key, value, timestamp)`` tuple),
    else by its input's kind:

    * a plain input: a ``str`` (or None) value is the row ``{"key", "value"}`` with
      event time ``timestamp`` (the input's ``timestamp_column``); a row value
      (:class:`~pyspark_streamtest.testing.model.EventRow`, a dict) is piped as it is,
      with ``timestamp`` as the record's time unless the row holds it (its
      ``time_column``);
    * a Kafka input: key ``key``, value ``value`` (None a tombstone), Kafka timestamp
      ``timestamp``, through ``key_serializer`` and ``value_serializer`` (one for every
      Kafka input, or a mapping of input name to one). Both default to ``"auto"``:
      a ``str`` as UTF-8 text (as ``"string"``), a row, dict or list as JSON (as
      ``"json"``), bytes as they are;
    * a file input (``t.file_input``, ``from_app(..., land_files=...)``): the events of
      one ``Pipe`` are landed as one file of lines (``land_lines``), read by Spark's
      own file source with the job's reader at the next trigger. A record's value is
      its line: a ``str`` as it is (a malformed line, a CSV line), a row or dict as
      one JSON object (times in ISO 8601, as the ``"json"`` serializer writes them),
      for a JSON reader. A file has no key or record time, so the record's ``key``
      and ``timestamp`` are not used: the line holds the event time the reader
      parses. Without ``to_record`` an event's value must be a row that holds its
      time (:func:`~pyspark_streamtest.testing.strategies.row_events` with a
      ``time_column``); other events need ``to_record`` for the input.

    ``Tick`` advances the wall clock by ``trigger_interval`` (the driver's),
    ``Drain`` is :meth:`~pyspark_streamtest.TopologyTestDriver.process_all_available`,
    ``Restart`` is :meth:`~pyspark_streamtest.TopologyTestDriver.restart`, and
    ``AdvanceWatermark(to)`` calls ``advance_watermark_to(to, output=output)`` when
    ``to`` is above the output's watermark, else only drains.
    """
    inputs = _Inputs(driver, input, to_record, key_serializer, value_serializer)
    for index, step in enumerate(schedule.steps):
        if isinstance(step, Pipe):
            inputs.pipe(step, index)
        elif isinstance(step, Tick):
            driver.advance_wall_clock(trigger_interval)
        elif isinstance(step, Drain):
            driver.process_all_available()
        elif isinstance(step, Restart):
            driver.restart()
        elif isinstance(step, AdvanceWatermark):
            current = driver.watermark(output)
            if current is not None and step.to > current:
                driver.advance_watermark_to(step.to, output=output)
            else:
                driver.process_all_available()
        else:
            raise InvalidArgumentTypeError(
                f"schedule step {index} is {step!r}, not a Pipe, Tick, Drain, Restart or "
                "AdvanceWatermark")
    return tuple(b for b in driver.batches if b.output == output)


def _for_input(choice: Any, name: str) -> Any:
    """The entry of a per-input mapping (None where it has none), or the one choice."""
    if isinstance(choice, Mapping):
        return choice.get(name)
    return choice


class _Inputs:
    """The handles of one run, made the first time a pipe goes to an input."""

    def __init__(self, driver: Any, default: str | None, to_record: Any,
                 key_serializer: Any, value_serializer: Any) -> None:
        if to_record is not None and not callable(to_record) and not isinstance(
                to_record, Mapping):
            raise InvalidArgumentTypeError(
                f"to_record={to_record!r} must be a function of an Event, or a mapping of "
                "input name to one")
        known = tuple(driver.input_names)
        for what, choice in (("to_record", to_record), ("key_serializer", key_serializer),
                             ("value_serializer", value_serializer)):
            unknown = [name for name in choice if name not in known] if isinstance(
                choice, Mapping) else []
            if unknown:
                raise InvalidArgumentError(
                    f"{what} names {', '.join(map(repr, unknown))}, not an input of the "
                    f"driver; its inputs are {', '.join(map(repr, known)) or 'none'}")
        self._driver = driver
        self._default = default
        self._to_record = to_record
        self._serializers = (key_serializer, value_serializer)
        self._handles: dict[str, Any] = {}

    def pipe(self, step: Pipe, index: int) -> None:
        name = step.input if step.input is not None else self._default
        if name is None:
            raise InvalidArgumentError(
                f"schedule step {index} ({step}) names no input and the runner has no "
                "input=; name the input in the Pipe (schedules({name: events, ...}) does) "
                "or pass input=")
        handle = self._handles.get(name)
        if handle is None:
            handle = self._handles[name] = self._handle(name)
        convert = _for_input(self._to_record, name)
        # a stand-in driver's handle may not say (it has rows or Kafka records only)
        if getattr(handle, "is_file_input", False):
            if step.events:  # one file per step; no events, no file
                handle.land_lines([_file_line(e, convert, name) for e in step.events])
            return
        if convert is None:
            records = [_default_record(e, kafka=handle.is_kafka) for e in step.events]
        else:
            records = [_user_record(convert(e), e, name) for e in step.events]
        handle.pipe_record_list(records)

    def _handle(self, name: str) -> Any:
        handle = self._driver.create_input_topic(name)
        if not handle.is_kafka:
            return handle
        keys, values = (_for_input(choice, name) for choice in self._serializers)
        return self._driver.create_input_topic(name, key_serializer=keys or "auto",
                                               value_serializer=values or "auto")


def _default_record(event: Event, *, kafka: bool) -> TestRecord:
    if kafka:
        return TestRecord(key=event.key, value=event.value, timestamp=event.timestamp)
    if isinstance(event.value, Mapping):
        holds_time = getattr(event.value, "time_column", None) is not None
        return TestRecord(value=event.value, timestamp=None if holds_time else event.timestamp)
    return TestRecord(value={"key": event.key, "value": event.value},
                      timestamp=event.timestamp)


_JSON = serializer("json")


def _file_line(event: Event, convert: RecordFunction | None, name: str) -> str:
    """The line a file input's file holds for ``event``: the value of its record (by
    ``convert``, else the event's row), a str as it is, a row as JSON."""
    if convert is None:
        if not isinstance(event.value, Mapping) or getattr(
                event.value, "time_column", None) is None:
            raise InvalidArgumentError(
                f"input {name!r} is a file input, and the event {event} has no line of "
                "its own: a file holds no key or record time, so a row that holds its "
                "event time (row_events(..., time_column=...)) is landed as its JSON, "
                f"anything else needs to_record={{{name!r}: function}} returning the "
                "line (a str) or the row (a dict) of each event")
        value: Any = event.value
    else:
        value = _user_record(convert(event), event, name).value
    if isinstance(value, str):
        if "\n" in value or "\r" in value:
            raise InvalidArgumentError(
                f"to_record for file input {name!r} returned the line {value!r} for the "
                f"event {event}; a line holds no line break (one event, one line)")
        return value
    if isinstance(value, Mapping):
        return bytes(_JSON(dict(value))).decode("utf-8")
    raise InvalidArgumentTypeError(
        f"to_record for file input {name!r} returned the value {value!r} for the event "
        f"{event}; a file input's value is its line: a str, or a dict written as JSON")


def _user_record(made: Any, event: Event, name: str) -> TestRecord:
    if isinstance(made, TestRecord):
        return made
    if isinstance(made, tuple) and len(made) == 3 and (
            made[2] is None or isinstance(made[2], datetime)):
        key, value, timestamp = made
        return TestRecord(key=key, value=value, timestamp=timestamp)
    raise InvalidArgumentTypeError(
        f"to_record for input {name!r} returned {made!r} for the event {event}; it must "
        "return a TestRecord or a (key, value, timestamp) tuple (timestamp an aware "
        "datetime, or None for the input's own record time)")
