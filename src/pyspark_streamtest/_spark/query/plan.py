"""Read-only facts about a streaming DataFrame's logical plan."""

from __future__ import annotations

import re
from dataclasses import dataclass

from pyspark.sql import DataFrame

from ...errors import hide_our_frames
from ..jvm import JavaObject

__tracebackhide__ = hide_our_frames

# Analyzed-plan node names of stateful operators (prefixes: Deduplicate covers
# DeduplicateWithinWatermark, TransformWithState the Pandas/PySpark variants).
_STATEFUL = ("Aggregate", "Deduplicate", "FlatMapGroups", "TransformWithState")


@dataclass(frozen=True)
class PlanFacts:
    is_streaming: bool
    streaming_leaf_expr_ids: tuple[int, ...]
    """First output attribute id of every streaming leaf (a source) of the plan."""
    streaming_leaf_names: tuple[str, ...]
    has_event_time_watermark: bool
    watermarks: tuple[tuple[str, str], ...] = ()
    """(event-time column, delay as Spark prints it, e.g. "10 seconds") per withWatermark."""
    stateful_operators: tuple[str, ...] = ()
    """Analyzed-plan names of the streaming stateful operators (Aggregate, Deduplicate...)."""
    has_stream_stream_join: bool = False
    time_modes: tuple[str, ...] = ()
    """The time mode of each transformWithState operator (``EventTime``,
    ``ProcessingTime``, ``NoTime``), in the order of ``stateful_operators``."""
    watermark_ids: tuple[int, ...] = ()
    """The expression id of each ``withWatermark``'s event-time attribute (the same as
    the attribute it marks: an input's column read unchanged keeps its id)."""

    @property
    def has_grouped_state(self) -> bool:
        """(flat)MapGroupsWithState or transformWithState: they may run batches without
        data (processing-time timeouts and timers)."""
        return any(n.startswith(("FlatMapGroups", "TransformWithState"))
                   for n in self.stateful_operators)


def time_mode(node: JavaObject) -> str:
    """A transformWithState plan node's time mode as Spark names it: ``EventTime``,
    ``ProcessingTime`` or ``NoTime``."""
    return str(node.timeMode().toString())


def analyzed_plan(df: DataFrame) -> JavaObject:
    """The analyzed logical plan of ``df`` (a classic DataFrame)."""
    return df._jdf.queryExecution().analyzed()


def plan_facts(df: DataFrame) -> PlanFacts:
    plan: JavaObject = df._jdf.queryExecution().analyzed()
    ids: list[int] = []
    names: list[str] = []
    has_watermark = False
    stateful: list[str] = []
    stream_join = False
    watermarks: list[tuple[str, str]] = []
    time_modes: list[str] = []
    watermark_ids: list[int] = []
    stack = [plan]
    while stack:
        node = stack.pop()
        name = str(node.nodeName())
        if name.startswith(_STATEFUL) and node.isStreaming():
            stateful.append(name)
            if name.startswith("TransformWithState"):
                time_modes.append(time_mode(node))
        if name == "EventTimeWatermark":
            has_watermark = True
            watermarks.append((str(node.eventTime().name()), str(node.delay().toString())))
            watermark_ids.append(int(node.eventTime().exprId().id()))
        children = node.children()
        count = children.size()
        if name == "Join" and count == 2 and all(
            children.apply(i).isStreaming() for i in range(2)
        ):
            stream_join = True
        if count == 0:
            if node.isStreaming():
                output = node.output()
                ids.append(int(output.head().exprId().id()) if output.size() else -1)
                names.append(str(node.simpleString(3)))
        else:
            stack.extend(children.apply(i) for i in range(count))
    return PlanFacts(
        bool(plan.isStreaming()), tuple(ids), tuple(names), has_watermark,
        tuple(sorted(set(watermarks))), tuple(stateful), stream_join, tuple(time_modes),
        tuple(sorted(set(watermark_ids))),
    )


# Logical-plan nodes that can remove (or multiply) rows on their way to an operator.
_ROW_REMOVING = ("Filter", "Join", "Generate", "Sample", "GlobalLimit", "LocalLimit",
                 "Intersect", "Except", "Expand", "Distinct", "Deduplicate")


def column_expr_id(df: DataFrame, name: str) -> int | None:
    """The expression id of ``df``'s output column ``name`` (None if it has none)."""
    output = df._jdf.queryExecution().analyzed().output()
    for i in range(output.size()):
        if str(output.apply(i).name()) == name:
            return int(output.apply(i).exprId().id())
    return None


def rows_removed_before_stateful(df: DataFrame) -> bool:
    """True if a node below a stateful operator of ``df``'s plan (as the DataFrame calls
    built it, before Spark's analyzer adds the nodes of time windows) can remove rows:
    then which piped records reach the operator is not a matter of their event time
    alone. Conservative: a window column made with ``withColumn`` before the grouping
    brings its own filter and counts too."""
    pending: list[tuple[JavaObject, bool]] = [(df._jdf.queryExecution().logical(), False)]
    while pending:
        node, below = pending.pop()
        name = str(node.nodeName())
        if below and name.startswith(_ROW_REMOVING):
            return True
        below = below or name.startswith(_STATEFUL)
        children = node.children()
        pending.extend((children.apply(i), below) for i in range(children.size()))
    return False


# --- how a query's stateful operators decide that a row is late -----------------------------
@dataclass(frozen=True)
class LateRule:
    """How the query's stateful operator compares a row with the watermark.

    ``kind`` is ``"event_time"`` (the row is late when its event time is at or behind
    the watermark: dropDuplicates, applyInPandasWithState with event-time timeouts),
    ``"window"`` (per time window: the row is dropped from each of its windows that ended
    at or before the watermark), or ``"session"`` (the row is late when its event time
    plus the gap is at or behind the watermark). Durations in microseconds.
    """

    kind: str
    column: str
    size_us: int = 0
    slide_us: int = 0
    start_us: int = 0


_UNITS_US = {
    "microsecond": 1, "millisecond": 1000, "second": 1_000_000, "minute": 60_000_000,
    "hour": 3_600_000_000, "day": 86_400_000_000, "week": 604_800_000_000,
}
_COLUMN = r"'?`?([A-Za-z_][\w]*)`?(?:#\d+)?(?:-T\d+ms)?"
# PySpark 4.x prints window('ts, 10 seconds, 5 seconds, 0 second); 3.5 prints microseconds.
# A plan from Spark Connect's planner holds the call as the client sent it, unresolved:
# 'window('ts, 10 seconds) with only the durations given (the slide is then the size,
# the start 0).
_WINDOW = re.compile(
    r"\bwindow\(" + _COLUMN + r", ([^,()]+)(?:, ([^,()]+))?(?:, ([^,()]+))?\)")
_SESSION = re.compile(r"\bsession_?window\(" + _COLUMN + r", ([^,()]+)\)")


def _duration_us(text: str) -> int | None:
    text = text.strip().removeprefix("interval").strip()
    if re.fullmatch(r"-?\d+", text):
        return int(text)
    parts = text.split()
    if not parts or len(parts) % 2:
        return None
    total = 0
    for amount, unit in zip(parts[::2], parts[1::2], strict=True):
        factor = _UNITS_US.get(unit.lower().rstrip("s"))
        if factor is None or not re.fullmatch(r"-?\d+", amount):
            return None
        total += int(amount) * factor
    return total


def late_rule(df: DataFrame, facts: PlanFacts) -> LateRule | str:
    """The rule for ``df``'s query (whose plan ``facts`` describe), or the reason it
    cannot be stated exactly."""
    if facts.has_stream_stream_join:
        return ("a stream-stream join drops rows by each side's state watermark, derived "
                "from the join condition")
    watermark_columns = tuple(column for column, _ in facts.watermarks)
    stateful = facts.stateful_operators
    if len(watermark_columns) != 1:
        return ("the query has several watermarks; which rows an operator drops depends on "
                "the multiple-watermark policy and the operator")
    if len(stateful) != 1:
        return ("the query has no stateful operator, so no row is dropped as late"
                if not stateful else "the query has several stateful operators")
    column = watermark_columns[0]
    # Window durations are readable in the plan as written (before analysis rewrites the
    # window into arithmetic).
    text = str(df._jdf.queryExecution().logical().toString())
    window = _WINDOW.search(text)
    if window and window.group(1) == column:
        size_text = window.group(2)
        size, slide, start = (_duration_us(text) for text in (
            size_text, window.group(3) or size_text, window.group(4) or "0"))
        if size is None or slide is None or start is None:
            return f"cannot read the window's durations from {window.group(0)!r}"
        return LateRule("window", column, size, slide, start)
    session = _SESSION.search(text)
    if session and session.group(1) == column:
        gap = _duration_us(session.group(2))
        if gap is None:
            return "the session window has a dynamic gap"
        return LateRule("session", column, gap)
    kind = stateful[0]
    if kind == "Aggregate":
        return ("the aggregation does not group by a time window of the event-time column "
                "(rows are late by their grouping key's value)")
    if kind.startswith("FlatMapGroups"):
        # (flat)MapGroupsWithState filters late rows only with event-time timeouts.
        timeouts = str(df._jdf.queryExecution().analyzed().toString())
        return LateRule("event_time" if "EventTimeTimeout" in timeouts else "none", column)
    if kind.startswith("TransformWithState"):
        # It filters late rows by the event-time column in the EventTime time mode only.
        return LateRule("event_time" if facts.time_modes == ("EventTime",) else "none", column)
    return LateRule("event_time", column)


def late_rule_for(output_mode: str, df: DataFrame, facts: PlanFacts,
                   piped_time_ids: set[int | None]) -> LateRule | str:
    """The rule that tells each batch's late records from the piped records' timestamps,
    or why they must be evaluated from the plan instead (``piped_time_ids``: the
    expression ids of the inputs' ``timestamp_column`` attributes)."""
    if not facts.has_event_time_watermark:
        return "the query has no event-time watermark"
    rule = late_rule(df, facts)
    if output_mode == "complete" and isinstance(rule, LateRule):
        # Complete mode keeps the whole result, and Spark counts late rows too (checked
        # against Spark by the property tests): nothing is dropped.
        return LateRule("none", rule.column)
    if (isinstance(rule, LateRule) and rule.kind != "none"
            and not piped_time_ids.issuperset(facts.watermark_ids)):
        # withColumn("ts", ...) keeps the name but not the values piped: evaluated instead.
        return "the event-time column is computed in the query, not an input's as piped"
    if isinstance(rule, LateRule) and rule.kind != "none" and rows_removed_before_stateful(df):
        # A record the filter removes never reaches the operator, late or not: each
        # batch's late records are evaluated from the plan instead (exact, self-checked).
        return "rows can be removed before the stateful operator (a filter, join, explode...)"
    return rule


# What differs between two builds of one query: expression ids, objects' hash codes
# (a memory stream's provider and table), a watermark node's UUID.
_BUILD_NOISE = re.compile(
    r"#\d+L?|@[0-9a-f]{4,}\b|\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b")
_ALL_FIELDS = 2**31 - 1


def plan_shape(df: DataFrame) -> str:
    """The analyzed plan of ``df`` as text that two builds of the same query share and a
    changed query does not: every field shown (none cut at
    ``spark.sql.debug.maxToStringFields``), expression ids, hash codes and UUIDs left
    out."""
    plan = analyzed_plan(df)
    tail = _tree_string_tail(plan)
    text = (plan.toString() if tail is None
            else plan.treeString(True, False, _ALL_FIELDS, False, *tail))
    return _BUILD_NOISE.sub("", str(text))


_TAILS: dict[str, tuple[object, ...] | None] = {}


def _tree_string_tail(plan: JavaObject) -> tuple[object, ...] | None:
    """The arguments after ``(verbose, addSuffix, maxFields, printOperatorId)`` that this
    line's ``TreeNode.treeString`` takes (4.x: ``printOutputColumns``; other lines may
    take an indent), as their defaults; None if it has no such form. Looked up once."""
    key = "treeString"
    if key not in _TAILS:
        _TAILS[key] = None
        for method in plan.getClass().getMethods():
            if str(method.getName()) != key:
                continue
            types = [str(t.getName()) for t in method.getParameterTypes()]
            if types[:4] == ["boolean", "boolean", "int", "boolean"] and all(
                    t in ("boolean", "int") for t in types[4:]):
                _TAILS[key] = tuple(False if t == "boolean" else 0 for t in types[4:])
                break
    return _TAILS[key]
