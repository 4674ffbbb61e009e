"""What one update of a pipeline did, as values: the engine's events read into each
flow's states and attempts, and the flows' micro-batches from their queries' progress."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from types import MappingProxyType
from typing import Any

from ..errors import hide_our_frames

__tracebackhide__ = hide_our_frames

__all__ = ["FlowBatch", "FlowRun", "PipelineUpdate", "format_updates", "read_update"]

_FLOW_EVENT = re.compile(r"^Flow '?(?P<flow>[^' ]+)'? (?:is|has) (?P<state>[A-Z_]+)")
_RUN_EVENT = re.compile(r"^Run (?:is|has) (?P<state>[A-Z_]+)")


@dataclass(frozen=True)
class FlowBatch:
    """One micro-batch of a streaming flow, from its query's progress: ``batch_id`` goes
    on across updates (the flow's checkpoint is kept), ``input_rows`` were read,
    ``output_rows`` written (None where the sink does not say), ``watermark`` is the
    one the batch ran with (the epoch before any), ``state_rows`` the rows its stateful
    operators keep after it and ``late_rows`` the rows they dropped as late (None for a
    flow without state). A batch of no input rows is the no-data batch that moves the
    watermark, closes windows and evicts state."""

    flow: str
    batch_id: int
    input_rows: int
    output_rows: int | None
    watermark: datetime | None
    state_rows: int | None
    late_rows: int | None
    offered: bool = False
    """Whether a source offered the batch new data (its end offset differs from its
    start): a batch offered data that read no row never ran its plan (a file sink
    skips a batch id its table's log already has)."""


@dataclass(frozen=True)
class FlowRun:
    """One flow in one update: the states the engine reported, in order (``QUEUED``,
    ``STARTING``, ``RUNNING``, ``COMPLETED``, ``FAILED``, ``SKIPPED``, ``EXCLUDED``...),
    its micro-batches (none for a materialized view's batch flow) and the error of each
    failed attempt."""

    flow: str
    states: tuple[str, ...]
    batches: tuple[FlowBatch, ...]
    errors: tuple[str, ...] = ()

    @property
    def attempts(self) -> int:
        """How many times the engine started the flow in this update (a failed flow is
        restarted up to ``spark.sql.pipelines.maxFlowRetryAttempts`` times)."""
        return self.states.count("STARTING")

    @property
    def state(self) -> str:
        """The flow's last state: ``FAILED`` for a flow whose last attempt failed (the
        engine reports such an attempt ``COMPLETED``, then ``FAILED``)."""
        if self.states:
            return self.states[-1]
        return "FAILED" if self.errors else "UNKNOWN"


@dataclass(frozen=True)
class PipelineUpdate:
    """One triggered update: ``number`` counts the driver's updates from 1, ``flows``
    each flow that took part by its name (``orders_bronze``, or ``catalog.db.name``
    outside the driver's database), ``state`` the run's end (``COMPLETED``, ``FAILED``,
    ``CANCELED``), ``messages`` the engine's event log as ``spark-pipelines run`` prints
    it."""

    number: int
    state: str
    flows: Mapping[str, FlowRun] = field(default_factory=lambda: MappingProxyType({}))
    messages: tuple[str, ...] = ()

    def batches(self, flow: str | None = None) -> tuple[FlowBatch, ...]:
        """The micro-batches of ``flow`` in this update, or of every flow (by flow name,
        then batch id)."""
        if flow is not None:
            run = self.flows.get(flow)
            return () if run is None else run.batches
        return tuple(b for name in sorted(self.flows) for b in self.flows[name].batches)

    @property
    def failed_flows(self) -> tuple[str, ...]:
        return tuple(name for name in sorted(self.flows) if self.flows[name].state == "FAILED")


def _watermark(text: object) -> datetime | None:
    if not isinstance(text, str):
        return None
    return datetime.fromisoformat(text.replace("Z", "+00:00")).astimezone(timezone.utc)


def _batch(flow: str, progress: Mapping[str, Any]) -> FlowBatch:
    operators = progress.get("stateOperators") or []
    sink = progress.get("sink") or {}
    output = sink.get("numOutputRows")
    return FlowBatch(
        flow=flow,
        batch_id=int(progress["batchId"]),
        input_rows=int(progress.get("numInputRows", 0)),
        output_rows=None if output is None or int(output) < 0 else int(output),
        watermark=_watermark((progress.get("eventTime") or {}).get("watermark")),
        state_rows=sum(int(o.get("numRowsTotal", 0)) for o in operators) if operators else None,
        late_rows=(sum(int(o.get("numRowsDroppedByWatermark", 0)) for o in operators)
                   if operators else None),
        offered=any(source.get("startOffset") != source.get("endOffset")
                    for source in progress.get("sources") or []),
    )


def read_update(number: int, messages: Sequence[str],
                query_events: Sequence[tuple[str, str, str]],
                short_name: Any) -> PipelineUpdate:
    """The update from the engine's messages and the flows' query events; ``short_name``
    turns a full flow name into the one the update is keyed by."""
    states: dict[str, list[str]] = {}
    engine_errors: dict[str, list[str]] = {}
    run_state = "UNKNOWN"
    for message in messages:
        flow_event = _FLOW_EVENT.match(message)
        if flow_event:
            flow = short_name(flow_event["flow"])
            states.setdefault(flow, []).append(flow_event["state"])
            if flow_event["state"] == "FAILED" and "\nError: " in message:
                # the engine's text of the failure has the causes' error classes too
                engine_errors.setdefault(flow, []).append(message.split("\nError: ", 1)[1])
            continue
        run_event = _RUN_EVENT.match(message)
        if run_event:
            run_state = run_event["state"]
    names: dict[str, str] = {}
    batches: dict[str, list[FlowBatch]] = {}
    errors: dict[str, list[str]] = {}
    for kind, query_id, text in query_events:
        if kind == "S":
            names[query_id] = short_name(text)
        elif kind == "P":
            progress = json.loads(text)
            flow = short_name(str(progress.get("name") or names.get(query_id, query_id)))
            batches.setdefault(flow, []).append(_batch(flow, progress))
        elif kind == "T" and text:
            errors.setdefault(names.get(query_id, query_id), []).append(text)
    flows = {
        name: FlowRun(flow=name, states=tuple(states.get(name, ())),
                      batches=tuple(sorted(batches.get(name, []), key=lambda b: b.batch_id)),
                      errors=tuple(errors.get(name, ())) + tuple(engine_errors.get(name, ())))
        for name in sorted(set(states) | set(batches) | set(errors) | set(engine_errors))
    }
    if run_state == "UNKNOWN" and flows:  # the engine's event stream misses some ends
        ends = {run.state for run in flows.values()}
        run_state = ("FAILED" if "FAILED" in ends else
                     "COMPLETED" if ends <= {"COMPLETED", "SKIPPED", "EXCLUDED"} else run_state)
    return PipelineUpdate(number=number, state=run_state, flows=MappingProxyType(flows),
                          messages=tuple(messages))


def _batch_text(batch: FlowBatch) -> str:
    parts = [f"batch {batch.batch_id}: "
             + (f"{batch.input_rows} row{'s' * (batch.input_rows != 1)} in"
                if batch.input_rows else "no data")]
    if batch.watermark is not None:
        parts.append(f"watermark {batch.watermark.isoformat().replace('+00:00', 'Z')}")
    if batch.state_rows is not None:
        parts.append(f"state {batch.state_rows}")
    if batch.late_rows:
        parts.append(f"{batch.late_rows} late")
    return ", ".join(parts)


def format_updates(updates: Sequence[PipelineUpdate]) -> str:
    """A pipeline's updates as text, flow by flow: each streaming flow's batches (rows
    in, the watermark it ran with, state rows kept, late rows dropped), a batch flow's
    end state."""
    if not updates:
        return "(no update run)"
    lines: list[str] = []
    for update in updates:
        lines.append(f"update {update.number}: {update.state}")
        width = max((len(name) for name in update.flows), default=0)
        for name, run in update.flows.items():
            attempts = f" after {run.attempts} attempts" if run.attempts > 1 else ""
            if not run.batches:
                lines.append(f"  {name:<{width}}  {run.state}{attempts}")
                continue
            for index, batch in enumerate(run.batches):
                label = name if index == 0 else ""
                end = f"  ({run.state}{attempts})" if index == len(run.batches) - 1 else ""
                lines.append(f"  {label:<{width}}  {_batch_text(batch)}{end}")
    return "\n".join(lines)
