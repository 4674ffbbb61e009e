"""A pipeline's graph as values (:class:`PipelineGraph`), as Spark's engine resolves it
before an update, and the hazards its shape carries (:class:`Hazard`)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from ..errors import hide_our_frames

__tracebackhide__ = hide_our_frames

__all__ = ["DatasetInfo", "FlowInfo", "Hazard", "PipelineGraph", "graph_from"]

_FILE_FORMATS = frozenset({None, "parquet", "json", "csv", "orc", "text"})
"""Formats written by Spark's file sink, whose commit log (``_spark_metadata``) one
query at a time may write: a table's format None is the session's default, Parquet."""


@dataclass(frozen=True)
class DatasetInfo:
    """One dataset: ``kind`` is ``"streaming_table"``, ``"materialized_view"``,
    ``"view"`` or ``"sink"``; ``format`` the table's or sink's format (None: the
    session's default, Parquet); ``flows`` the flows that write it; ``path`` a sink's
    ``path`` option (where a file-format sink writes)."""

    name: str
    kind: str
    format: str | None
    flows: tuple[str, ...]
    comment: str | None = None
    path: str | None = None

    @property
    def file_written(self) -> bool:
        """Written by Spark's file sink with its commit log: a streaming table of a
        file format, or a sink of one with a ``path``."""
        return self.format in _FILE_FORMATS and (
            self.kind == "streaming_table" or (self.kind == "sink" and self.path is not None))


@dataclass(frozen=True)
class FlowInfo:
    """One flow: where it writes (``target``), whether it streams (a streaming table's
    flows do; a materialized view's is a batch query recomputed each update), whether
    it runs ``once``, the pipeline datasets it reads (``inputs``), what it reads from
    outside the pipeline (``file_sources``: folders; ``external_tables``), its
    ``watermarks`` as ``(column, delay)`` and its ``stateful`` operators (Spark's plan
    node names: ``Aggregate``, ``Deduplicate``, ``DeduplicateWithinWatermark``,
    ``Join``, ...). ``error`` is why the engine could not resolve it (then the other
    facts are empty)."""

    name: str
    target: str
    streaming: bool
    once: bool = False
    inputs: tuple[str, ...] = ()
    file_sources: tuple[str, ...] = ()
    external_tables: tuple[str, ...] = ()
    watermarks: tuple[tuple[str, str], ...] = ()
    stateful: tuple[str, ...] = ()
    error: str | None = None
    auto_cdc: bool = False
    """An AutoCDC flow (``create_auto_cdc_flow``): it MERGEs each batch's changes into
    its target by key and sequence."""
    schema: str | None = None
    """The schema of the rows the flow writes, as Spark's JSON (None when unresolved)."""


@dataclass(frozen=True)
class Hazard:
    """A way the graph loses or repeats data in Spark's engine, whatever the test
    feeds it: ``kind`` names it, ``dataset`` and ``flows`` where it is, ``text`` says
    what happens and the fix."""

    kind: str
    dataset: str
    flows: tuple[str, ...]
    text: str


@dataclass(frozen=True)
class PipelineGraph:
    """The datasets and flows of a pipeline by name (names in the driver's database
    without it, others ``catalog.database.name``), and its :class:`Hazard` s."""

    datasets: Mapping[str, DatasetInfo]
    flows: Mapping[str, FlowInfo]
    hazards: tuple[Hazard, ...]

    def __str__(self) -> str:
        lines = []
        for name, dataset in self.datasets.items():
            fmt = f" ({dataset.format})" if dataset.format else ""
            lines.append(f"{dataset.kind} {name}{fmt}")
            for flow_name in dataset.flows:
                flow = self.flows[flow_name]
                reads = [*flow.inputs, *(f"files {p}" for p in flow.file_sources),
                         *flow.external_tables]
                facts = [f"reads {', '.join(reads) or 'nothing'}"]
                facts += [f"watermark {c} - {d}" for c, d in flow.watermarks]
                if flow.stateful:
                    facts.append(f"state: {', '.join(flow.stateful)}")
                if flow.error:
                    facts.append(f"unresolved: {flow.error}")
                kind = " (once)" if flow.once else " (AutoCDC)" if flow.auto_cdc else ""
                lines.append(f"  flow {flow_name}{kind}: "
                             + "; ".join(facts))
        lines += [f"HAZARD {h.kind} at {h.dataset}: {h.text}" for h in self.hazards]
        return "\n".join(lines)


def graph_from(described: Mapping[str, Any], short: Callable[[str], str]) -> PipelineGraph:
    """The graph from the adapter's description; ``short`` shortens a full name."""
    flows = {
        short(f["name"]): FlowInfo(
            name=short(f["name"]), target=short(f["target"]),
            streaming=bool(f.get("streaming", False)), once=bool(f["once"]),
            inputs=tuple(short(i) for i in f.get("inputs", ())),
            file_sources=tuple(f.get("file_sources", ())),
            external_tables=tuple(short(t) for t in f.get("external_tables", ())),
            watermarks=tuple((str(c), str(d)) for c, d in f.get("watermarks", ())),
            stateful=tuple(f.get("stateful", ())), error=f.get("error"),
            auto_cdc=str(f.get("kind", "")).startswith("AutoCdc"), schema=f.get("schema"))
        for f in described["flows"]
    }
    writers: dict[str, list[str]] = {}
    for flow in flows.values():
        writers.setdefault(flow.target, []).append(flow.name)
    datasets: dict[str, DatasetInfo] = {}
    for table in described["tables"]:
        name = short(table["name"])
        datasets[name] = DatasetInfo(
            name=name, kind="streaming_table" if table["streaming"] else "materialized_view",
            format=table["format"], flows=tuple(sorted(writers.get(name, ()))),
            comment=table.get("comment"))
    for view in described["views"]:
        name = short(view["name"])
        datasets[name] = DatasetInfo(name=name, kind="view", format=None,
                                     flows=tuple(sorted(writers.get(name, ()))))
    for sink in described["sinks"]:
        name = short(sink["name"])
        datasets[name] = DatasetInfo(name=name, kind="sink", format=sink["format"],
                                     flows=tuple(sorted(writers.get(name, ()))),
                                     path=sink.get("options", {}).get("path"))
    return PipelineGraph(datasets=dict(sorted(datasets.items())),
                         flows=dict(sorted(flows.items())),
                         hazards=tuple(_hazards(datasets, flows)))


def _hazards(datasets: Mapping[str, DatasetInfo],
             flows: Mapping[str, FlowInfo]) -> list[Hazard]:
    found = []
    for dataset in datasets.values():
        streaming = [f for f in dataset.flows if flows[f].streaming and not flows[f].once]
        if dataset.file_written and len(streaming) > 1:
            what = "streaming table" if dataset.kind == "streaming_table" else "sink"
            found.append(Hazard(
                kind="shared_commit_log", dataset=dataset.name, flows=tuple(streaming),
                text=(f"flows {', '.join(streaming)} all write {what} "
                      f"{dataset.name} ({dataset.format or 'parquet'}), whose files one "
                      "commit log (_spark_metadata) makes visible. Each flow numbers its "
                      "batches from 0 in its own checkpoint, so their batch ids collide: "
                      "the first to commit a batch id wins and the other flow's batch of "
                      "that id is dropped as 'already committed' (after a "
                      "SparkConcurrentModificationException and a retry when they race), "
                      "while the update still ends COMPLETED. Which flow loses is a "
                      f"race. Fix: give each flow a {what.split()[-1]} of its own and "
                      "union them in a view or a downstream flow, or use a table format with "
                      "transactional commits")))
        for flow in (flows[f] for f in dataset.flows if flows[f].auto_cdc):
            if dataset.format in _FILE_FORMATS:
                found.append(Hazard(
                    kind="auto_cdc_without_merge", dataset=dataset.name, flows=(flow.name,),
                    text=(f"AutoCDC flow {flow.name} MERGEs into {dataset.name}, a "
                          f"{dataset.format or 'parquet'} table, which has no row-level "
                          "operations: Spark's engine fails every update of the pipeline "
                          "with AUTOCDC_TARGET_DOES_NOT_SUPPORT_MERGE before any flow "
                          "runs. PySpark ships no table format with MERGE; declare the "
                          "target with one your Spark has (its format=), or test the "
                          "flow's source and keys without the AutoCDC flow")))
    return found
