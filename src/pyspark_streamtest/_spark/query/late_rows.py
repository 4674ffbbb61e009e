"""Which piped records reach each stateful operator of a query, with what event time.

Spark drops a row as late inside a stateful operator: it compares the operator's
input attribute that carries the watermark (the column given to ``withWatermark``, or
a ``window`` / ``session_window`` struct derived from it, then by its ``end``) with
the watermark. When that attribute is computed from the value (``from_json(...)``),
the driver cannot read it from the record it piped; this module evaluates it exactly
as the query does: the part of the query's analyzed plan below the operator is run
as a batch job, each streaming source replaced by the JSON lines the driver gave that
source, every line tagged with its position so the rows coming out name the record
they came from. Filters, explodes, stream-static joins and unions apply as in the
query; a ``dropDuplicates`` below the operator passes rows through (its duplicates
are not late drops).
"""

from __future__ import annotations

import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from typing import Any

from pyspark.sql import DataFrame

from ...errors import hide_our_frames
from ..jvm import JavaObject, Jvm, java_error_text
from ..versions import capabilities
from .memory_stream import wrap_dataframe
from .plan import time_mode

__tracebackhide__ = hide_our_frames

TAG = "__streamtest_record"
_EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)
_DELAY_KEY = "spark.watermarkDelayMs"
_ROW_WISE = (
    "Filter", "SubqueryAlias", "EventTimeWatermark", "Generate", "Union", "Sort",
    "Repartition", "RepartitionByExpression", "Join", "View",
)
# Analyzed-plan names of nodes that run as stateful operators (each one has a place in
# the progress' stateOperators); the first two pass the rows they keep through as they are.
_PASS_THROUGH = ("Deduplicate", "Distinct")
_STATEFUL = (*_PASS_THROUGH, "Aggregate", "FlatMapGroups", "TransformWithState", "GlobalLimit")


@dataclass(frozen=True)
class OperatorInput:
    """One input of a stateful operator: the plan below it and its late attribute."""

    side: str | None
    """"left" / "right" for a stream-stream join, else None."""
    plan: JavaObject
    attribute: JavaObject
    column: str
    derived: str | None = None
    """Why the rows reaching it are not piped records (they come out of another
    stateful operator), or None."""
    keys: tuple[JavaObject, ...] = ()
    """Attributes whose values each reaching row also reports (a deduplication's keys);
    with keys, ``attribute`` may be None (no watermark: no row is late)."""


@dataclass(frozen=True)
class LateOperator:
    """A stateful operator that drops late rows, in Spark's operator order."""

    index: int
    """Position in the query's progress ``stateOperators``."""
    kind: str
    inputs: tuple[OperatorInput, ...]
    below: range = range(0)
    """The positions of the stateful operators upstream of it (its plan's subtree)."""


def _children(node: JavaObject) -> list[JavaObject]:
    kids = node.children()
    return [kids.apply(i) for i in range(kids.size())]


def _is_stateful(node: JavaObject) -> bool:
    name = str(node.nodeName())
    if name == "Join":
        return sum(1 for c in _children(node) if c.isStreaming()) == 2
    return bool(name.startswith(_STATEFUL) and node.isStreaming())


def _late_attribute(attributes: JavaObject) -> JavaObject | None:
    for i in range(attributes.size()):
        attribute = attributes.apply(i)
        if attribute.metadata().contains(_DELAY_KEY):
            return attribute
    return None


def _stateful_below(plan: JavaObject) -> str | None:
    stack = [plan]
    while stack:
        node = stack.pop()
        name = str(node.nodeName())
        if _is_stateful(node) and not name.startswith(_PASS_THROUGH):
            return name
        stack.extend(_children(node))
    return None


def _input(
    side: str | None, plan: JavaObject, attribute: JavaObject | None
) -> OperatorInput | None:
    if attribute is None:
        return None
    below = _stateful_below(plan)
    derived = None if below is None else (
        f"its input rows come out of another stateful operator ({below}), not from the "
        "records piped in")
    return OperatorInput(side, plan, attribute, str(attribute.name()), derived)


def _count_stateful(plan: JavaObject) -> int:
    count, stack = 0, [plan]
    while stack:
        node = stack.pop()
        count += _is_stateful(node)
        stack.extend(_children(node))
    return count


def _operator(index: int, node: JavaObject) -> LateOperator | str | None:
    """The operator's late-drop inputs; None when it never drops a row as late; a reason
    when which rows it drops is not known."""
    name = str(node.nodeName())
    kids = _children(node)
    inputs: list[OperatorInput | None]
    if name == "Join":
        inputs = [_input(side, kid, _late_attribute(kid.output()))
                  for side, kid in zip(("left", "right"), kids, strict=True)]
    elif name == "Aggregate":  # by the grouping key that carries the watermark
        keys = [k for k in _attributes(node.groupingExpressions())
                if str(k.nodeName()) == "AttributeReference"]
        inputs = [_input(None, kids[0], next(
            (k for k in keys if k.metadata().contains(_DELAY_KEY)), None))]
    elif name.startswith(_PASS_THROUGH):
        inputs = [_input(None, kids[0], _late_attribute(kids[0].output()))]
    elif name == "GlobalLimit":  # a streaming limit keeps a count, drops nothing as late
        return None
    elif name.startswith("TransformWithState"):
        # transformWithState(InPandas) filters late rows in the EventTime time mode only
        # (measured on 4.0-4.3: ProcessingTime and None keep rows behind the watermark).
        if time_mode(node) != "EventTime":
            return None
        inputs = [_input(None, kids[0], _late_attribute(kids[0].output()))]
    elif name.startswith("FlatMapGroups"):
        # (flat)MapGroupsWithState drops late rows only with event-time timeouts; its
        # first child is the grouped input (the second, if any, the initial state).
        if "EventTimeTimeout" not in str(node.timeout().toString()):
            return None
        inputs = [_input(None, kids[0], _late_attribute(kids[0].output()))]
    else:
        return f"which rows {name} drops as late is not modelled"
    found = tuple(i for i in inputs if i is not None)
    below = range(index + 1, index + _count_stateful(node))
    return LateOperator(index, name, found, below) if found else None


def late_operators(df: DataFrame, complete: bool) -> tuple[LateOperator, ...] | str:
    """The stateful operators of ``df``'s query that drop late rows, or the reason the
    driver cannot tell which rows they drop. In ``complete`` output mode an aggregation
    keeps the whole result and drops nothing as late."""
    found: list[LateOperator] = []
    for index, node in _stateful_nodes(df):
        operator = _operator(index, node)
        if isinstance(operator, str):
            return operator
        if operator is not None and not (complete and operator.kind == "Aggregate"):
            found.append(operator)
    return tuple(found)


def _stateful_nodes(df: DataFrame) -> list[tuple[int, JavaObject]]:
    """The stateful nodes of ``df``'s analyzed plan with their positions in the progress'
    ``stateOperators``: pre-order, left first."""
    found: list[tuple[int, JavaObject]] = []
    stack = [df._jdf.queryExecution().analyzed()]
    while stack:
        node = stack.pop()
        if _is_stateful(node):
            found.append((len(found), node))
        stack.extend(reversed(_children(node)))
    return found


def watermark_inputs(df: DataFrame) -> tuple[OperatorInput, ...]:
    """Per ``withWatermark`` of ``df`` over the piped records: its node, with the
    event-time attribute it declares (evaluated, it gives each record's event time)."""
    found = []
    stack = [df._jdf.queryExecution().analyzed()]
    while stack:
        node = stack.pop()
        if str(node.nodeName()) == "EventTimeWatermark" and _stateful_below(node) is None:
            declared = int(node.eventTime().exprId().id())
            attribute = next(a for a in _attributes(node.output())
                             if int(a.exprId().id()) == declared)
            found.append(OperatorInput(None, node, attribute, str(attribute.name())))
        stack.extend(_children(node))
    return tuple(found)


# --- evaluation -----------------------------------------------------------------------------
class _UnsupportedPlanError(Exception):
    pass


class _Rebuild:
    def __init__(self, jvm: Jvm, sources: Mapping[int, JavaObject]) -> None:
        self._jvm = jvm
        self._sources = sources
        self._logical = jvm.jvm.org.apache.spark.sql.catalyst.plans.logical

    def __call__(self, node: JavaObject) -> JavaObject:
        if not node.isStreaming():
            return node
        name = str(node.nodeName())
        kids = _children(node)
        if not kids:
            output = node.output()
            source = self._sources.get(int(output.head().exprId().id())) if output.size() else None
            if source is None:
                raise _UnsupportedPlanError(f"a streaming source the driver does not feed ({name})")
            return source
        if name.startswith(_PASS_THROUGH):  # as a batch it would deduplicate the batch
            return self(kids[0])
        if name == "Join" and _is_stateful(node):
            # As a batch join, a half of the records holding one side only would join
            # nothing, and Spark's optimizer would not even evaluate the other side.
            raise _UnsupportedPlanError("a stream-stream join")
        rebuilt = [self(kid) for kid in kids]
        if name == "Project":
            tag = _tag_of(rebuilt[0])
            listed = [*_attributes(node.projectList()), tag]
            return self._logical.Project(self._jvm.seq(listed), rebuilt[0])
        if name == "Expand":  # sliding windows: one row per window of each row
            tag = _tag_of(rebuilt[0])
            projections = [self._jvm.seq([*_attributes(p), tag])
                           for p in _attributes(node.projections())]
            return self._logical.Expand(self._jvm.seq(projections),
                                        self._jvm.seq([*_attributes(node.output()), tag]),
                                        rebuilt[0])
        if name not in _ROW_WISE:
            raise _UnsupportedPlanError(f"a {name} between the source and the operator")
        return node.withNewChildren(self._jvm.seq(rebuilt))


def _attributes(seq: JavaObject) -> list[JavaObject]:
    return [seq.apply(i) for i in range(seq.size())]


def _tag_of(plan: JavaObject) -> JavaObject:
    tag = next((a for a in _attributes(plan.output()) if str(a.name()) == TAG), None)
    if tag is None:
        raise _UnsupportedPlanError("a plan node that does not keep the piped records apart "
                                    f"({plan.nodeName()})")
    return tag


def _source(jvm: Jvm, leaf_attribute: JavaObject, lines: Sequence[tuple[int, str]]) -> JavaObject:
    """A batch plan with the streaming leaf's ``value`` attribute (same expression id)
    and the tag, over ``lines``."""
    jlist = jvm.jvm.java.util.ArrayList()
    for tag, line in lines:
        jlist.add(f"{tag}\t{line}")
    encoder = jvm.jvm.org.apache.spark.sql.Encoders.STRING()
    functions = jvm.jvm.org.apache.spark.sql.functions
    text = functions.col("value")
    frame = jvm.jspark.createDataset(jlist, encoder).select(jvm.seq([
        functions.expr("substring(value, instr(value, '\t') + 1)").alias("value"),
        functions.substring_index(text, "\t", 1).cast("long").alias(TAG),
    ]))
    plan = frame.queryExecution().analyzed()
    value, tag = _attributes(plan.output())
    expressions = jvm.jvm.org.apache.spark.sql.catalyst.expressions
    renamed = expressions.Alias(value, leaf_attribute.name(), leaf_attribute.exprId(),
                                leaf_attribute.qualifier(), jvm.none(), jvm.seq([]))
    return jvm.jvm.org.apache.spark.sql.catalyst.plans.logical.Project(
        jvm.seq([renamed, tag]), plan)


def _of_rows(jvm: Jvm, plan: JavaObject) -> JavaObject:
    """A JVM Dataset of ``plan`` (a batch plan), through this line's Dataset class."""
    dataset = jvm.jvm
    for part in capabilities(jvm).dataset_class.split("."):
        dataset = getattr(dataset, part)
    return dataset.ofRows(jvm.jspark, plan)


@dataclass(frozen=True)
class Reached:
    """One row that reached the operator: the record's tag and the late attribute's
    value in microseconds (``start`` too when it is a window struct; :data:`NEVER_LATE`
    for a null or no event time where keys are asked for), and the keys' values (a
    ``TimestampType`` key as an aware UTC datetime)."""

    tag: int
    end_us: int
    start_us: int | None
    key: tuple[Any, ...] = ()


NEVER_LATE = sys.maxsize
"""``Reached.end_us`` of a row no watermark makes late."""


@dataclass(frozen=True)
class DedupOperator:
    """A ``dropDuplicates`` / ``dropDuplicatesWithinWatermark`` of the query, in Spark's
    operator order: the rows reaching it carry its keys (``key_names``, in order)."""

    index: int
    kind: str
    input: OperatorInput
    key_names: tuple[str, ...]


def dedup_operators(df: DataFrame) -> tuple[DedupOperator, ...]:
    """The deduplications of ``df``'s query (its streaming ``Deduplicate`` nodes)."""
    found = []
    for index, node in _stateful_nodes(df):
        name = str(node.nodeName())
        if not name.startswith("Deduplicate"):
            continue
        child = _children(node)[0]
        keys = tuple(_attributes(node.keys()))
        below = _stateful_below(child)
        derived = None if below is None else (
            f"its input rows come out of another stateful operator ({below}), not from the "
            "records piped in")
        attribute = _late_attribute(child.output())
        column = "" if attribute is None else str(attribute.name())
        found.append(DedupOperator(index, name, OperatorInput(
            None, child, attribute, column, derived, keys), tuple(str(k.name()) for k in keys)))
    return tuple(found)


def rows_reaching(
    jvm: Jvm,
    operator_input: OperatorInput,
    leaves: Mapping[int, JavaObject],
    lines: Mapping[int, Sequence[tuple[int, str]]],
) -> list[Reached] | str:
    """Evaluate the plan below ``operator_input`` with each streaming leaf (by its first
    output attribute's expression id, ``leaves`` gives the leaf's attribute) fed its
    ``lines``; the rows that reach the operator, or why this cannot be evaluated."""
    sources = {
        expr_id: _source(jvm, attribute, lines.get(expr_id, ()))
        for expr_id, attribute in leaves.items()
    }
    try:
        plan = _Rebuild(jvm, sources)(operator_input.plan)
        tag = _tag_of(plan)
    except _UnsupportedPlanError as reason:
        return str(reason)
    expressions = jvm.jvm.org.apache.spark.sql.catalyst.expressions

    def alias(expression: JavaObject, name: str) -> JavaObject:
        return expressions.Alias(expression, name, expressions.NamedExpression.newExprId(),
                                 jvm.seq([]), jvm.none(), jvm.seq([]))

    def micros(expression: JavaObject, name: str) -> JavaObject:
        return alias(expressions.UnixMicros(expression), name)

    if operator_input.keys:
        return _keys_reaching(jvm, operator_input, plan, tag, alias, micros)
    assert operator_input.attribute is not None
    target = _same(plan, operator_input.attribute)
    if target is None:
        return "the operator's input does not keep its event-time column"
    is_struct = str(target.dataType().typeName()) == "struct"
    if is_struct:
        start = expressions.GetStructField(target, 0, jvm.none())
        end = expressions.GetStructField(target, 1, jvm.none())
        listed = [tag, micros(start, "start"), micros(end, "end")]
    else:
        listed = [tag, micros(target, "end")]
    rows = _collect(jvm, plan, listed)
    if isinstance(rows, str):
        return rows
    reached = []
    for row in rows:
        if row["end"] is None:
            continue  # a null event time is never late
        reached.append(Reached(int(row[0]), int(row["end"]),
                               int(row["start"]) if is_struct else None))
    return reached


def _same(plan: JavaObject, attribute: JavaObject) -> JavaObject | None:
    wanted = int(attribute.exprId().id())
    return next((a for a in _attributes(plan.output()) if int(a.exprId().id()) == wanted), None)


def _collect(jvm: Jvm, plan: JavaObject, listed: list[JavaObject]) -> list[Any] | str:
    project = jvm.jvm.org.apache.spark.sql.catalyst.plans.logical.Project(jvm.seq(listed), plan)
    try:
        return list(wrap_dataframe(jvm, _of_rows(jvm, project)).collect())
    except Exception as error:  # e.g. a UDF below the operator raising on a record
        first = java_error_text(error).strip().splitlines()
        return f"replaying the query's input as a batch job failed: {first[0] if first else error}"


def _keys_reaching(
    jvm: Jvm, operator_input: OperatorInput, plan: JavaObject, tag: JavaObject,
    alias: Any, micros: Any,
) -> list[Reached] | str:
    """The rows reaching a deduplication, with its keys' values and event time."""
    listed, stamps = [tag], []
    for i, key in enumerate(operator_input.keys):
        target = _same(plan, key)
        if target is None:
            return f"the operator's input does not keep its key column {key.name()}"
        stamp = str(target.dataType().typeName()) == "timestamp"
        stamps.append(stamp)
        listed.append(micros(target, f"k{i}") if stamp else alias(target, f"k{i}"))
    event = None if operator_input.attribute is None else _same(plan, operator_input.attribute)
    if event is not None and str(event.dataType().typeName()) == "struct":
        return "the deduplication's event-time column is a window struct"
    if event is not None:
        listed.append(micros(event, "end"))
    rows = _collect(jvm, plan, listed)
    if isinstance(rows, str):
        return rows
    reached = []
    for row in rows:
        key = tuple(_instant(row[i + 1]) if stamp else row[i + 1]
                    for i, stamp in enumerate(stamps))
        end = row["end"] if event is not None else None
        reached.append(Reached(int(row[0]), NEVER_LATE if end is None else int(end), None, key))
    return reached


def _instant(micros: int | None) -> datetime | None:
    return None if micros is None else _EPOCH + timedelta(microseconds=micros)


# --- replaying a failed batch ---------------------------------------------------------------
def replay_error(
    jvm: Jvm,
    plan: JavaObject,
    leaves: Mapping[int, JavaObject],
    lines: Mapping[int, Sequence[tuple[int, str]]],
) -> str | None:
    """Run the row-wise parts of ``plan`` (a query's analyzed plan: each largest subtree
    from the sources up that holds no stateful operator; each input of a stream-stream
    join is one) as batch jobs over ``lines``; the error text of the first that raises (a
    UDF raising on one of the records), or None when none does or nothing of the plan
    can be replayed."""
    sources = {expr_id: _source(jvm, attribute, lines.get(expr_id, ()))
               for expr_id, attribute in leaves.items()}
    rebuild = _Rebuild(jvm, sources)
    parts: list[JavaObject] = []
    pending = [plan]
    while pending:
        node = pending.pop()
        try:
            parts.append(rebuild(node))
        except _UnsupportedPlanError:
            pending.extend(kid for kid in _children(node) if kid.isStreaming())
    for part in parts:
        try:
            _of_rows(jvm, part).queryExecution().toRdd().count()
        except Exception as error:  # the caller compares it with the batch's error
            return java_error_text(error)
    return None
