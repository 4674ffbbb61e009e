"""What a driver follows of its streaming tables (and file sinks) across updates: each
table's commit log read after every update, the rows of its new batches queued for the
table's output topics, and the rows an update lost (:class:`TableWatch`)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from ..core.records import TestRecord
from ..errors import LostRowsError, hide_our_frames
from ._commit_log import read_commit_log
from ._graph import PipelineGraph
from ._topics import TopicQueue
from ._updates import PipelineUpdate

__tracebackhide__ = hide_our_frames

__all__ = ["TableWatch"]


class TableWatch:
    """The streaming tables of one pipeline as the driver has read them: the files each
    table's log made visible so far, the files left outside it already reported, and
    the queues of the tables' output topics. ``location`` gives a table's folder,
    ``rows`` the rows of some of its files."""

    def __init__(self, pipeline: str, graph: PipelineGraph, *,
                 location: Callable[[str], str],
                 rows: Callable[[str, Sequence[str]], list[dict[str, Any]]]) -> None:
        self._pipeline = pipeline
        self._graph = graph
        self._location = location
        self._rows = rows
        self._known: dict[str, frozenset[str]] = {}
        self._orphans: set[str] = set()
        self._queues: dict[str, TopicQueue] = {}
        self._folders: dict[str, str] = {}
        """Each table's folder, asked of the catalog once (a full refresh keeps it)."""

    def _folder(self, table: str) -> str:
        if table not in self._folders:
            path = self._graph.datasets[table].path  # a sink's: its own option
            self._folders[table] = path if path is not None else self._location(table)
        return self._folders[table]

    def queue(self, table: str, *, updated: bool) -> TopicQueue:
        """The queue of ``table``'s output topics, made on first use: it holds the
        batches committed from then on (``updated``: the table may have batches
        already, which are not queued)."""
        if table not in self._queues:
            queue = self._queues[table] = TopicQueue(table)
            if updated:
                log = read_commit_log(self._folder(table))
                queue.batches = set(log.batches)
                self._known[table] = log.visible
        return self._queues[table]

    def reset(self, tables: set[str]) -> None:
        """``tables`` were refreshed from nothing: their files and batch ids start again."""
        for table in tables:
            self._known.pop(table, None)
            if table in self._queues:
                self._queues[table].reset()

    def _records(self, table: str, batch: int, files: Sequence[str]) -> list[TestRecord]:
        if not files:
            return []
        return [TestRecord(value=row, topic=table, batch_id=batch)
                for row in self._rows(table, files)]

    def follow(self, update: PipelineUpdate) -> None:
        """The commit log, read after the update, of each streaming table an output
        topic follows or several flows write: the new batches' rows queued for the
        table's topics, and, for a table several flows write, rows that never became
        visible raised as :class:`LostRowsError`: files the log does not name (a flow
        that lost the race to commit a batch id, retried, then skipped it), and batches
        a flow was offered data for but never ran (skipped as already committed by
        another flow)."""
        __tracebackhide__ = True
        lost: dict[str, list[dict[str, Any]]] = {}
        skipped: dict[str, list[str]] = {}
        for name, dataset in self._graph.datasets.items():
            queue = self._queues.get(name)
            shared = len(dataset.flows) > 1
            if not dataset.file_written or not (shared or queue is not None):
                continue
            log = read_commit_log(self._folder(name), self._known.get(name, frozenset()))
            if queue is not None:
                for batch in sorted(set(log.batches) - queue.batches):
                    queue.records.extend(self._records(name, batch, log.batches[batch]))
                    queue.batches.add(batch)
            self._known[name] = log.visible
            new = [f for f in log.orphans if f not in self._orphans] if shared else []
            if new:  # the files stay: each is reported by the update that left it
                self._orphans.update(new)
                lost[name] = self._rows(name, new)
            if shared:
                for flow in dataset.flows:
                    run = update.flows.get(flow)
                    for ran in run.batches if run is not None else ():
                        if ran.offered and ran.input_rows == 0:
                            skipped.setdefault(flow, []).append(
                                f"flow {flow!r} batch {ran.batch_id} into {name!r}: offered "
                                "new data, ran no row (skipped as already committed)")
        if lost or skipped:
            # The flows the engine failed on the table's commit log and ran again (the
            # retry skipped the batch as already committed), and those that skipped one.
            losers = tuple(sorted({
                *skipped,
                *(flow for table in lost for flow in self._graph.datasets[table].flows
                  if flow in update.flows and (update.flows[flow].errors
                                               or update.flows[flow].attempts > 1))}))
            described = [
                f"table {t!r}: {len(rows)} row{'s' * (len(rows) != 1)} in files its commit "
                f"log does not name, e.g. {rows[:3]}" for t, rows in lost.items()]
            described += [text for texts in skipped.values() for text in texts]
            raise LostRowsError(
                f"update {update.number} of pipeline {self._pipeline!r} ended COMPLETED but "
                f"lost rows of {', '.join(losers) or 'a flow'}: " + "; ".join(described),
                update, lost, losers)
