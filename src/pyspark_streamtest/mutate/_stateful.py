"""Mutants of the times stateful operators keep: ``applyInPandasWithState`` timeouts,
and the TTLs and timers of ``transformWithState`` / ``transformWithStateInPandas``
processors.

These times are set in the user's functions, inside Spark's Python workers, so the
mutant wraps what the call is given: the function's ``GroupState`` and the processor's
handle are handed on through a proxy that changes each duration it is given (double,
one unit less, one unit more; "one unit" as in :mod:`._durations`, from the
milliseconds as written). A timer or event-time timeout is a point in time: its
distance from the current processing time (or watermark, in event time) is changed. A
mutant is offered only where the code sets such a time (a look at its source), so a
processor without TTLs has no TTL mutant. The wrappers are classes of this module:
Spark's workers import it to unpickle them.
"""

from __future__ import annotations

import ast
import inspect
import textwrap
from collections.abc import Callable
from typing import Any

from ..errors import hide_our_frames
from ._duration_texts import from_millis, parse_duration

__tracebackhide__ = hide_our_frames

OPERATORS = ("double", "one unit less", "one unit more")

try:
    from pyspark.sql.streaming.stateful_processor import StatefulProcessor
except ImportError:  # PySpark 3.5: no transformWithState
    StatefulProcessor = object  # type: ignore[assignment,misc]


class Change:
    """One operator over durations in milliseconds (picklable)."""

    def __init__(self, operator: str) -> None:
        self.operator = operator

    def __call__(self, ms: Any) -> Any:
        if isinstance(ms, str):
            duration = parse_duration(ms)
            return ms if duration is None else self(duration.micros // 1000)
        if not isinstance(ms, int) or isinstance(ms, bool) or ms <= 0:
            return ms
        if self.operator == "double":
            return ms * 2
        step = max(from_millis(ms).step() // 1000, 1)
        return ms + step if self.operator == "one unit more" else max(ms - step, 1)


def _shifted(change: Change, at_ms: int, base_ms: int | None) -> int:
    """A point in time ``at_ms`` whose distance from ``base_ms`` is changed; as it is
    when there is no base yet (a watermark not set: 0 or less) or it is not ahead."""
    if base_ms is None or base_ms <= 0 or at_ms <= base_ms:
        return at_ms
    return int(base_ms + change(at_ms - base_ms))


class TimedState:
    """A ``GroupState`` whose timeouts are changed."""

    def __init__(self, state: Any, change: Change) -> None:
        self._state = state
        self._change = change

    def setTimeoutDuration(self, durationMs: Any) -> None:  # noqa: N802, N803 (PySpark's)
        self._state.setTimeoutDuration(self._change(durationMs))

    def setTimeoutTimestamp(self, timestampMs: int) -> None:  # noqa: N802, N803
        self._state.setTimeoutTimestamp(_shifted(
            self._change, timestampMs, self._state.getCurrentWatermarkMs()))

    def __getattr__(self, name: str) -> Any:
        return getattr(self._state, name)


class TimedFunction:
    """An ``applyInPandasWithState`` function whose state's timeouts are changed."""

    def __init__(self, function: Callable[..., Any], change: Change) -> None:
        self._function = function
        self._change = change

    def __call__(self, key: Any, frames: Any, state: Any) -> Any:
        return self._function(key, frames, TimedState(state, self._change))


class ChangedHandle:
    """A processor's handle whose TTLs (``ttl``) or timers (``timers``) are changed."""

    def __init__(self, handle: Any, change: Change, what: str, event_time: bool) -> None:
        self._handle = handle
        self._change = change
        self._what = what
        self._event_time = event_time
        self.values: Any = None

    def _ttl(self, ttl: Any) -> Any:
        return self._change(ttl) if self._what == "ttl" else ttl

    def getValueState(self, name: str, schema: Any, ttlDurationMs: Any = None) -> Any:  # noqa: N802, N803
        return self._handle.getValueState(name, schema, self._ttl(ttlDurationMs))

    def getListState(self, name: str, schema: Any, ttlDurationMs: Any = None) -> Any:  # noqa: N802, N803
        return self._handle.getListState(name, schema, self._ttl(ttlDurationMs))

    def getMapState(self, name: str, userKeySchema: Any, valueSchema: Any,  # noqa: N802, N803
                    ttlDurationMs: Any = None) -> Any:  # noqa: N803
        return self._handle.getMapState(name, userKeySchema, valueSchema,
                                        self._ttl(ttlDurationMs))

    def registerTimer(self, expiryTimestampMs: int) -> None:  # noqa: N802, N803
        expiry = expiryTimestampMs
        if self._what == "timers" and self.values is not None:
            base = (self.values.getCurrentWatermarkInMs() if self._event_time
                    else self.values.getCurrentProcessingTimeInMs())
            expiry = _shifted(self._change, expiry, base)
        self._handle.registerTimer(expiry)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._handle, name)


class ChangedProcessor(StatefulProcessor):
    """A stateful processor run with a :class:`ChangedHandle`."""

    def __init__(self, processor: Any, change: Change, what: str, event_time: bool) -> None:
        self._processor = processor
        self._change = change
        self._what = what
        self._event_time = event_time
        self._handle: ChangedHandle | None = None

    def init(self, handle: Any) -> None:
        self._handle = ChangedHandle(handle, self._change, self._what, self._event_time)
        self._processor.init(self._handle)

    def _saw(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
        for arg in (*args, *kwargs.values()):
            if self._handle is not None and hasattr(arg, "getCurrentProcessingTimeInMs"):
                self._handle.values = arg

    # Spark passes these by keyword (timerValues=..., expiredTimerInfo=...) on some
    # lines and by position on others: both are handed on as they came.
    def handleInputRows(self, *args: Any, **kwargs: Any) -> Any:  # noqa: N802
        self._saw(args, kwargs)
        return self._processor.handleInputRows(*args, **kwargs)

    def handleExpiredTimer(self, *args: Any, **kwargs: Any) -> Any:  # noqa: N802
        self._saw(args, kwargs)
        return self._processor.handleExpiredTimer(*args, **kwargs)

    def handleInitialState(self, *args: Any, **kwargs: Any) -> Any:  # noqa: N802
        self._saw(args, kwargs)
        return self._processor.handleInitialState(*args, **kwargs)

    def close(self) -> None:
        self._processor.close()


def sets_times(target: Any) -> set[str]:
    """What ``target`` (a function, or a processor's class) sets: ``timeout``
    (``setTimeoutDuration`` / ``setTimeoutTimestamp``), ``ttl`` (a state made with a
    TTL) and ``timers`` (``registerTimer``), read from its source; empty when the
    source cannot be read."""
    try:
        tree = ast.parse(textwrap.dedent(inspect.getsource(target)))
    except (OSError, TypeError, SyntaxError):
        return set()
    found = set()
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
            continue
        name = node.func.attr
        given = len(node.args) + len(node.keywords)
        if name in ("setTimeoutDuration", "setTimeoutTimestamp"):
            found.add("timeout")
        elif name == "registerTimer":
            found.add("timers")
        elif (name in ("getValueState", "getListState") and given >= 3) or (
                name == "getMapState" and given >= 4):
            found.add("ttl")
    return found
