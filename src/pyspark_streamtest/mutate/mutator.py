"""The mutator: while the driver calls a topology function (or ``from_app`` job), the
DataFrame API calls that make streaming decisions are watched; each one records the
mutants it could make, and the one mutant that is active (if any) is made.

Watched: ``withWatermark``, ``window``, ``session_window``, ``join`` (its type, and the
comparisons and interval literals of its condition), ``dropDuplicates`` /
``dropDuplicatesWithinWatermark``, ``where`` / ``filter`` (the comparisons of their
condition), and through the driver's seam, each output's mode and a ``from_app``
query's trigger. A comparison or ``expr`` text counts only once it reaches a join
condition or a filter: columns built with ``<``, ``&``, ``+``... carry the mutants of
their parts until then.

Every patch is on the classes and modules for the time of one call and is always
undone (an ``ExitStack``), so nothing of a mutant outlives its build.
"""

from __future__ import annotations

import inspect
import os
from collections import Counter
from collections.abc import Callable, Iterator, Mapping
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from typing import Any

from ..core.build_hook import BuildHook
from ..errors import hide_our_frames
from ._duration_texts import changed, from_millis, parse_duration
from ._patching import rebind, replaced_attribute, retitled, unpatched
from ._sites import Mutant, Site, show, users_frame
from ._sql import replaced, spots
from ._stateful import OPERATORS, Change, ChangedProcessor, TimedFunction, sets_times

__tracebackhide__ = hide_our_frames

_FLIP = {"__lt__": "__le__", "__le__": "__lt__", "__gt__": "__ge__", "__ge__": "__gt__"}
_SYMBOL = {"__lt__": "<", "__le__": "<=", "__gt__": ">", "__ge__": ">="}
_CARRY = ("__and__", "__rand__", "__or__", "__ror__", "__invert__", "__add__", "__radd__",
          "__sub__", "__rsub__", "__eq__", "__ne__", "alias", "cast")
_INNER = {"inner"}
_LEFT = {"left", "leftouter", "left_outer"}
_RIGHT = {"right", "rightouter", "right_outer"}
_MODES = {"append": "update", "update": "append", "complete": "update"}

Candidate = tuple[str, str, str, Any]
"""(operator, kind, replacement as shown, the new value)."""
Shapes = tuple[tuple[tuple[str, str], ...], tuple[str, ...]]
"""One build's (output, shape) pairs, sorted, and the queries it left out."""
# The mutants whose change a running query's plan may not show (a wrapped processor's
# handle): never said to reach only queries that do not run.
UNSEEN_IN_PLAN = frozenset({"ttl", "timer"})


@dataclass
class _Build:
    """One call of a topology function: its name, the calls counted per line, the
    mutants columns carry until they reach a join or a filter."""

    topology: str
    counts: Counter[tuple[str, int, str]] = field(default_factory=Counter)
    carried: dict[int, tuple[object, tuple[Mutant, ...]]] = field(default_factory=dict)


class Mutator(BuildHook):
    """Records every mutant the builds offer (:attr:`found`, and per test
    :attr:`seen`) and makes the :attr:`active` one. ``root``: the folder sites are
    named relative to."""

    def __init__(self, root: str) -> None:
        self.root = os.path.abspath(root)
        self.active: Mutant | None = None
        self.applied = 0
        self.found: dict[str, Mutant] = {}
        self.seen: set[str] = set()
        self.builds: list[Shapes] = []
        """Per build: each running output's shape if it left queries out
        (``from_app(outputs=...)``), and the queries it left out."""
        self._build: _Build | None = None
        self._inside = False

    def _guarded(self, original: Callable[..., Any], watched: Callable[..., Any]
                 ) -> Callable[..., Any]:
        """``watched`` in place of ``original`` during a build, outside the calls of
        another watched call (``where`` calls ``filter``: one decision, not two)."""
        def call(*args: Any, **kwargs: Any) -> Any:
            if self._build is None or self._inside:
                return original(*args, **kwargs)
            self._inside = True
            try:
                return watched(*args, **kwargs)
            finally:
                self._inside = False

        call.__wrapped_original__ = original  # type: ignore[attr-defined]
        return call

    # --- the driver's seam --------------------------------------------------------------
    @contextmanager
    def building(self, function: Callable[..., object], spark: Any) -> Iterator[None]:
        app = getattr(function, "_streamtest_app", function)
        name = f"{getattr(app, '__module__', '?')}:{getattr(app, '__qualname__', app)}"
        outer, self._build = self._build, _Build(name)
        try:
            with ExitStack() as restore:
                self._patch(restore, spark)
                yield
        finally:
            self._build = outer

    def built(self, shapes: Callable[[], Mapping[str, str]], left_out: tuple[str, ...]
              ) -> None:
        # a build that runs every query runs every mutant it makes: no shape needed
        self.builds.append((tuple(sorted(shapes().items())) if left_out else (), left_out))

    def output_mode(self, output: str, mode: str) -> str:
        if self._build is None or mode not in _MODES:
            return mode
        new = _MODES[mode]
        return str(self._decide("outputMode", "mode", f"outputMode({show(mode)})",
                                [(f"{mode} → {new}", "output mode", show(new), new)], mode))

    def trigger_ms(self, output: str, interval_ms: int | None) -> int | None:
        if self._build is None or not interval_ms:
            return interval_ms
        before = from_millis(interval_ms)
        after = from_millis(interval_ms * 2)
        new = self._decide("trigger", "processingTime",
                           f"trigger(processingTime={show(before.render())})",
                           [("double", "trigger", show(after.render()), interval_ms * 2)],
                           interval_ms)
        return int(new)

    # --- recording and deciding -----------------------------------------------------------
    def _site(self, api: str, part: str, occurrence: int, where: tuple[str, int, str]) -> Site:
        assert self._build is not None
        return Site(self._build.topology, where[0], where[1], api, occurrence, part)

    def _count(self, api: str) -> tuple[int, tuple[str, int, str]]:
        assert self._build is not None
        where = users_frame(self.root)
        key = (where[0], where[1], api)
        self._build.counts[key] += 1
        return self._build.counts[key], where

    def _offer(self, api: str, part: str, original: str, candidates: list[Candidate],
               occurrence: int, where: tuple[str, int, str]) -> list[Mutant]:
        if where[1] == 0:  # no frame of the call is the user's: not their decision
            return []
        site = self._site(api, part, occurrence, where)
        return [Mutant(site, operator, kind, original, shown, where[2])
                for operator, kind, shown, _ in candidates]

    def _record(self, mutants: tuple[Mutant, ...] | list[Mutant]) -> None:
        for mutant in mutants:
            self.found.setdefault(mutant.id, mutant)
            self.seen.add(mutant.id)

    def _chosen(self, mutants: list[Mutant], candidates: list[Candidate]) -> Any:
        """The active mutant's new value if it is one of ``mutants``, else a marker."""
        active = self.active
        if active is not None and mutants:
            for mutant, candidate in zip(mutants, candidates, strict=True):
                if mutant.site == active.site and mutant.operator == active.operator:
                    self.applied += 1
                    return candidate[3]
        return _KEEP

    def _decide(self, api: str, part: str, original: str, candidates: list[Candidate],
                value: Any) -> Any:
        occurrence, where = self._count(api)
        mutants = self._offer(api, part, original, candidates, occurrence, where)
        self._record(mutants)
        chosen = self._chosen(mutants, candidates)
        return value if chosen is _KEEP else chosen

    # --- the patches ----------------------------------------------------------------------
    def _patch(self, restore: ExitStack, spark: Any) -> None:
        from pyspark.sql import functions

        frame_class = type(spark.range(0))
        column_class = type(functions.lit(0))
        methods: dict[str, Callable[..., Any]] = {
            "withWatermark": self._with_watermark,
            "join": self._join,
            "where": self._filter("where"),
            "filter": self._filter("filter"),
            "dropDuplicates": self._dedup("dropDuplicates", "dropDuplicatesWithinWatermark"),
            "drop_duplicates": self._dedup("dropDuplicates", "dropDuplicatesWithinWatermark"),
            "dropDuplicatesWithinWatermark": self._dedup(
                "dropDuplicatesWithinWatermark", "dropDuplicates"),
            "drop_duplicates_within_watermark": self._dedup(
                "dropDuplicatesWithinWatermark", "dropDuplicates"),
        }
        for name, make in methods.items():
            original = getattr(frame_class, name, None)
            if original is not None:
                restore.enter_context(replaced_attribute(frame_class, name, self._guarded(
                    original, make(original, frame_class))))
        comparisons = {name: getattr(column_class, name) for name in _FLIP}
        for name in _FLIP:
            restore.enter_context(replaced_attribute(column_class, name, self._compare(
                name, comparisons)))
        for name in _CARRY:
            original = getattr(column_class, name, None)
            if original is not None:
                restore.enter_context(replaced_attribute(column_class, name, self._carry(original)))
        grouped_class = type(spark.range(0).groupBy("id"))
        for name in ("applyInPandasWithState", "transformWithState",
                     "transformWithStateInPandas"):
            original = getattr(grouped_class, name, None)
            if original is not None:
                restore.enter_context(replaced_attribute(grouped_class, name, self._guarded(
                    original, self._stateful(name, original))))
        for name, make_function in (("window", self._window),
                                    ("session_window", self._session_window),
                                    ("expr", self._expr)):
            original = getattr(functions, name, None)
            if original is not None:
                rebind(restore, original, self._guarded(original, make_function(original)),
                        self.root)

    def _with_watermark(self, original: Callable[..., Any], _: type) -> Callable[..., Any]:
        def with_watermark(df: Any, eventTime: Any, delayThreshold: Any) -> Any:  # noqa: N803
            duration = parse_duration(delayThreshold)
            if duration is None:
                return original(df, eventTime, delayThreshold)
            candidates: list[Candidate] = [
                (name, "watermark", show(new.render()), new.render())
                for name, new in changed(duration, zero=True, half=True, less=False)]
            delay = self._decide(
                "withWatermark", "delay",
                f"withWatermark({show(eventTime)}, {show(delayThreshold)})", candidates,
                delayThreshold)
            return original(df, eventTime, delay)

        return with_watermark

    def _window(self, original: Callable[..., Any]) -> Callable[..., Any]:
        signature = inspect.signature(original)

        def window(*args: Any, **kwargs: Any) -> Any:
            bound = signature.bind(*args, **kwargs)
            shown = ", ".join(show(v) for v in bound.arguments.values())
            occurrence, where = self._count("window")
            for part in ("windowDuration", "slideDuration"):
                value = bound.arguments.get(part)
                duration = parse_duration(value)
                if duration is None:
                    continue
                named = "slide " if part == "slideDuration" else (
                    "duration " if bound.arguments.get("slideDuration") else "")
                candidates: list[Candidate] = [
                    (name, "window", named + show(new.render()), new.render())
                    for name, new in changed(duration)]
                mutants = self._offer("window", part, f"window({shown})", candidates,
                                      occurrence, where)
                self._record(mutants)
                chosen = self._chosen(mutants, candidates)
                if chosen is not _KEEP:
                    bound.arguments[part] = chosen
            return original(*bound.args, **bound.kwargs)

        return window

    def _session_window(self, original: Callable[..., Any]) -> Callable[..., Any]:
        def session_window(timeColumn: Any, gapDuration: Any) -> Any:  # noqa: N803
            duration = parse_duration(gapDuration)
            if duration is None:
                return original(timeColumn, gapDuration)
            candidates: list[Candidate] = [
                (name, "session gap", show(new.render()), new.render())
                for name, new in changed(duration)]
            gap = self._decide("session_window", "gapDuration",
                               f"session_window({show(timeColumn)}, {show(gapDuration)})",
                               candidates, gapDuration)
            return original(timeColumn, gap)

        return session_window

    def _stateful(self, api: str, original: Callable[..., Any]) -> Callable[..., Any]:
        signature = inspect.signature(original)
        first = list(signature.parameters)[1]  # func, or statefulProcessor

        def stateful(grouped: Any, *args: Any, **kwargs: Any) -> Any:
            bound = signature.bind(grouped, *args, **kwargs)
            given = bound.arguments[first]
            if api == "applyInPandasWithState":
                kinds = sets_times(given) & {"timeout"}
                label = getattr(given, "__name__", "func")
            else:
                kinds = sets_times(type(given)) & {"ttl", "timers"}
                label = f"{type(given).__name__}()"
            event_time = str(bound.arguments.get("timeMode", "")).lower() == "eventtime"
            occurrence, where = self._count(api)
            for what in sorted(kinds):
                noun = {"timeout": "each timeout", "ttl": "each TTL",
                        "timers": "each timer's delay"}[what]
                candidates: list[Candidate] = [
                    (f"{noun} {operator}", {"timers": "timer"}.get(what, what),
                     f"{noun} {'doubled' if operator == 'double' else operator}", operator)
                    for operator in OPERATORS]
                mutants = self._offer(api, what, f"{api}({label}, ...)", candidates,
                                      occurrence, where)
                self._record(mutants)
                chosen = self._chosen(mutants, candidates)
                if chosen is not _KEEP:
                    bound.arguments[first] = (
                        TimedFunction(given, Change(chosen)) if what == "timeout" else
                        ChangedProcessor(given, Change(chosen), what, event_time))
            return original(*bound.args, **bound.kwargs)

        return stateful

    def _expr(self, original: Callable[..., Any]) -> Callable[..., Any]:
        def expr(text: Any) -> Any:
            if not isinstance(text, str):
                return original(text)
            mutants, new_text = self._text_mutants("expr", text)
            result = original(new_text)
            if mutants:
                self._carry_on(result, tuple(mutants))
            return result

        return expr

    def _text_mutants(self, api: str, text: str) -> tuple[list[Mutant], str]:
        """The mutants of the comparisons and intervals of ``text`` (recorded by the
        caller when they count), and the text with the active one made."""
        occurrence, where = self._count(api)
        found: list[Mutant] = []
        new_text = text
        numbers: Counter[str] = Counter()
        for spot in spots(text):
            numbers[spot.kind] += 1
            candidates: list[Candidate] = [
                (operator, "join bound" if spot.kind == "interval" else "comparison",
                 f"{text[:spot.start]}{piece}{text[spot.end:]}", piece)
                for operator, piece in spot.mutants()]
            mutants = self._offer(api, f"{spot.kind} {numbers[spot.kind]}",
                                  f"{api}({show(text)})", [
                                      (op, kind, show(shown), value)
                                      for op, kind, shown, value in candidates],
                                  occurrence, where)
            found.extend(mutants)
            chosen = self._chosen(mutants, candidates)
            if chosen is not _KEEP:
                new_text = replaced(text, spot, chosen)
        return found, new_text

    def _compare(self, name: str, originals: dict[str, Callable[..., Any]]
                 ) -> Callable[..., Any]:
        original = originals[name]
        flipped = originals[_FLIP[name]]

        def compare(column: Any, other: Any) -> Any:
            if self._build is None or self._inside:
                return original(column, other)
            occurrence, where = self._count(_SYMBOL[name])
            symbol, new = _SYMBOL[name], _SYMBOL[_FLIP[name]]
            candidates: list[Candidate] = [(f"{symbol} → {new}", "comparison", new, True)]
            mutants = self._offer(symbol, "compare", f"{show(column)} {symbol} {show(other)}",
                                  candidates, occurrence, where)
            chosen = self._chosen(mutants, candidates)
            result = (original if chosen is _KEEP else flipped)(column, other)
            self._carry_on(result, (*self._carried(column), *self._carried(other), *mutants))
            return result

        return compare

    def _carry(self, original: Callable[..., Any]) -> Callable[..., Any]:
        def carry(column: Any, *args: Any, **kwargs: Any) -> Any:
            result = original(column, *args, **kwargs)
            if self._build is not None and not self._inside:
                parts = [*self._carried(column)]
                for arg in args:
                    parts.extend(self._carried(arg))
                self._carry_on(result, tuple(parts))
            return result

        return carry

    def _carried(self, value: object) -> tuple[Mutant, ...]:
        if self._build is None:
            return ()
        held = self._build.carried.get(id(value))
        return held[1] if held is not None and held[0] is value else ()

    def _carry_on(self, column: object, mutants: tuple[Mutant, ...]) -> None:
        if self._build is not None and mutants:
            self._build.carried[id(column)] = (column, mutants)

    def _reach(self, condition: object, kind: str) -> None:
        """``condition`` reached a join (``kind`` ``join``) or a filter: the mutants it
        carries count."""
        conditions = condition if isinstance(condition, (list, tuple)) else [condition]
        for part in conditions:
            self._record(tuple(
                retitled(m, kind) for m in self._carried(part)))

    def _join(self, original: Callable[..., Any], _: type) -> Callable[..., Any]:
        signature = inspect.signature(original)

        def join(df: Any, *args: Any, **kwargs: Any) -> Any:
            bound = signature.bind(df, *args, **kwargs)
            on = bound.arguments.get("on")
            how = bound.arguments.get("how")
            self._reach(on, "join")
            normal = (how or "inner").lower().replace("_", "") if isinstance(
                how, (str, type(None))) else None
            new = ("left_outer" if normal in _INNER else "inner"
                   if normal in {h.replace("_", "") for h in _LEFT | _RIGHT} else None)
            if new is not None and df.isStreaming:
                shown = show(how if how is not None else "inner")
                chosen = self._decide("join", "how", f"join(..., how={shown})",
                                      [(f"{how or 'inner'} → {new}", "join type", show(new),
                                        new)], how)
                bound.arguments["how"] = chosen
            return original(*bound.args, **bound.kwargs)

        return join

    def _filter(self, api: str) -> Callable[[Callable[..., Any], type], Callable[..., Any]]:
        def make(original: Callable[..., Any], _: type) -> Callable[..., Any]:
            def where(df: Any, condition: Any) -> Any:
                if isinstance(condition, str):
                    mutants, new_text = self._text_mutants(api, condition)
                    self._record(tuple(retitled(m, "filter") for m in mutants))
                    return original(df, new_text)
                self._reach(condition, "filter")
                return original(df, condition)

            return where

        return make

    def _dedup(self, api: str, other: str
               ) -> Callable[[Callable[..., Any], type], Callable[..., Any]]:
        def make(original: Callable[..., Any], frame_class: type) -> Callable[..., Any]:
            def dedup(df: Any, subset: Any = None) -> Any:
                if not df.isStreaming:
                    return original(df, subset)
                keys = list(subset) if isinstance(subset, (list, tuple)) else (
                    [subset] if isinstance(subset, str) else None)
                occurrence, where = self._count(api)
                shown = f"{api}({show(keys) if keys is not None else ''})"
                if keys:
                    candidates: list[Candidate] = [
                        (f"key {show(key)} dropped", "dedup key",
                         f"{api}({show([k for k in keys if k != key]) if len(keys) > 1 else ''})",
                         [k for k in keys if k != key] or None)
                        for key in keys]
                    mutants = self._offer(api, "subset", shown, candidates, occurrence, where)
                    self._record(mutants)
                    chosen = self._chosen(mutants, candidates)
                    if chosen is not _KEEP:
                        return original(df, chosen)
                swap = getattr(frame_class, other, None)
                if swap is not None:
                    candidates = [(f"{api} → {other}", "dedup kind",
                                   f"{other}({show(keys) if keys is not None else ''})", True)]
                    mutants = self._offer(api, "kind", shown, candidates, occurrence, where)
                    self._record(mutants)
                    if self._chosen(mutants, candidates) is not _KEEP:
                        return unpatched(swap)(df, subset)
                return original(df, subset)

            return dedup

        return make


_KEEP = object()
