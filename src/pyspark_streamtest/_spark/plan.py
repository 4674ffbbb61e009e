"""Read-only facts about a streaming DataFrame's logical plan."""

from __future__ import annotations

from dataclasses import dataclass

from pyspark.sql import DataFrame

from .jvm import JavaObject


@dataclass(frozen=True)
class PlanFacts:
    is_streaming: bool
    streaming_leaf_expr_ids: tuple[int, ...]
    """First output attribute id of every streaming leaf (a source) of the plan."""
    streaming_leaf_names: tuple[str, ...]
    has_event_time_watermark: bool
    watermarks: tuple[tuple[str, str], ...] = ()
    """(event-time column, delay as Spark prints it, e.g. "10 seconds") per withWatermark."""


def plan_facts(df: DataFrame) -> PlanFacts:
    plan: JavaObject = df._jdf.queryExecution().analyzed()
    ids: list[int] = []
    names: list[str] = []
    has_watermark = False
    watermarks: list[tuple[str, str]] = []
    stack = [plan]
    while stack:
        node = stack.pop()
        name = str(node.nodeName())
        if name == "EventTimeWatermark":
            has_watermark = True
            watermarks.append((str(node.eventTime().name()), str(node.delay().toString())))
        children = node.children()
        count = children.size()
        if count == 0:
            if node.isStreaming():
                output = node.output()
                ids.append(int(output.head().exprId().id()) if output.size() else -1)
                names.append(str(node.simpleString(3)))
        else:
            stack.extend(children.apply(i) for i in range(count))
    return PlanFacts(
        bool(plan.isStreaming()), tuple(ids), tuple(names), has_watermark,
        tuple(sorted(set(watermarks))),
    )
