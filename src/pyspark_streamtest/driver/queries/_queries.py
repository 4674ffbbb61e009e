"""Every output's query of one driver: started, restarted and stopped together.

The query set owns the checkpoint directory (one folder per output, deleted on stop)
and knows which queries read which input.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from ..._spark.jvm import Jvm
from ...core.files import safe_file_name
from ...core.query_names import ALONE_SUFFIX
from ...core.records import BatchRecord, TestRecord
from ...errors import (
    BackfillNeverEndsError,
    BatchFailedError,
    CheckpointMissingError,
    DriverStoppedError,
    InvalidArgumentTypeError,
    UnknownTopicError,
    hide_our_frames,
)
from ...kafka.broker import Broker
from ..topology import BuiltOutput, landing_dirs, temp_root
from ._backfill import run_backfill
from ._runner import QueryRunner
from ._saved import SavedCheckpoint, copy_checkpoint, save_checkpoint

__tracebackhide__ = hide_our_frames

__all__ = ["Queries", "check_sql_conf", "names_text"]


def names_text(names: Iterable[str]) -> str:
    """``'a', 'b'`` sorted, or ``(none)``: for error messages that list what exists."""
    listed = sorted(names)
    return ", ".join(repr(n) for n in listed) if listed else "(none)"


DEFAULT_TRIGGER_MS = 1000
"""The trigger interval of a query that sets none, when the driver is given none."""


class Queries:
    """One :class:`QueryRunner` per output, in declaration order, with checkpoints in a
    fresh temporary directory under ``checkpoint_root``. Nothing starts until
    :meth:`start`. ``interval_ms`` is every query's trigger interval; None runs each on
    its own (``trigger_ms`` of its output, else :data:`DEFAULT_TRIGGER_MS`)."""

    def __init__(
        self,
        jvm: Jvm,
        built: Iterable[BuiltOutput],
        *,
        checkpoint_root: str | os.PathLike[str] | None,
        interval_ms: int | None,
        timeout_ms: int,
        sql_conf: Mapping[str, str],
        broker: Broker,
        saved: SavedCheckpoint | None = None,
        carried: Mapping[str, QueryRunner] | None = None,
    ) -> None:
        self._folder: str | None = tempfile.mkdtemp(
            prefix="pyspark-streamtest-", dir=temp_root(checkpoint_root)
        )
        self.runners: list[QueryRunner] = []
        # The driver's landing directories (file inputs), if any: held while these
        # queries live (a reset or close deletes them, an upgrade keeps them).
        self._landing = landing_dirs(jvm, make=False)
        if self._landing is not None:
            self._landing.acquire(self)
        try:
            for index, output in enumerate(built):
                name = safe_file_name(output.spec.name)
                folder = os.path.join(self._folder, f"{index}-{name}")
                own = output.spec.trigger_ms or DEFAULT_TRIGGER_MS
                self.runners.append(QueryRunner(
                    jvm, output, folder, own if interval_ms is None else interval_ms,
                    timeout_ms / 1000, sql_conf, broker,
                ))
            if saved is not None:
                self._resume(saved, carried or {})
        except BaseException:
            self.close()
            raise

    def _resume(self, saved: SavedCheckpoint, carried: Mapping[str, QueryRunner]) -> None:
        """Each output the saved version had goes on from its copied checkpoint."""
        if not os.path.isdir(saved.path):
            raise CheckpointMissingError(
                f"the saved checkpoint {saved.path!r} is gone; save one again"
            )
        for runner in self.runners:
            query = saved.queries.get(runner.name)
            if query is not None:
                source = os.path.join(saved.path, query["folder"])
                copy_checkpoint(source, runner.checkpoint, new_query_id=not carried)
                # (the differential oracle's query run by Spark alone, if it was on)
                copy_checkpoint(source + ALONE_SUFFIX, runner.checkpoint + ALONE_SUFFIX,
                                new_query_id=not carried)
                runner.resume(query, carried.get(runner.name))

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(r.name for r in self.runners)

    def runner(self, output: str) -> QueryRunner:
        """The runner of ``output``; :class:`UnknownTopicError` lists the outputs."""
        for runner in self.runners:
            if runner.name == output:
                return runner
        raise UnknownTopicError(
            f"unknown output {output!r}; this topology's outputs are {names_text(self.names)}"
        )

    @property
    def running(self) -> bool:
        """True while the queries run (between :meth:`start` and :meth:`stop`, and until
        every backfill query has ended)."""
        return any(r.running for r in self.runners)

    @property
    def active(self) -> list[QueryRunner]:
        """The runners whose query runs (not stopped, not ended)."""
        return [r for r in self.runners if r.running]

    @property
    def ended(self) -> tuple[str, ...]:
        """The outputs whose query ended by itself (``availableNow``, ``once``)."""
        return tuple(r.name for r in self.runners if r.ended and not r.running)

    def check_checkpoints(self) -> None:
        """Raise :class:`CheckpointMissingError` if a query that has run batches has lost
        its checkpoint (its offset log), before anything is stopped or started."""
        for runner in self.runners:
            if runner.next_batch_id > 0 and not os.path.isdir(
                os.path.join(runner.checkpoint, "offsets")
            ):
                raise CheckpointMissingError(
                    f"the checkpoint of output {runner.name!r} ({runner.checkpoint}) is gone "
                    f"after {runner.next_batch_id} batches; starting from it would silently "
                    "start over (state lost, batch ids repeated). Something deleted it: keep "
                    "checkpoint_root= out of cleanup, or create a new driver"
                )

    def as_saved(self, now_ms: int) -> SavedCheckpoint:
        """These queries' checkpoints as a saved checkpoint, for an upgrade in place (the
        driver keeps its broker, so none is recorded)."""
        assert self._folder is not None
        queries = {r.name: {"folder": os.path.basename(r.checkpoint), **r.saved()}
                   for r in self.runners}
        return SavedCheckpoint(self._folder, now_ms, queries)

    def save(self, path: str, now_ms: int, broker: Mapping[str, Any]) -> None:
        """Copy every query's checkpoint to ``path``, with the manifest."""
        for runner in self.runners:
            if runner.retry_pending:
                raise DriverStoppedError(
                    f"batch {runner.next_batch_id} of output {runner.name!r} failed and awaits "
                    "its retry; a checkpoint saved now would hold a batch that never "
                    "finished. restart() (or restart(topology=fixed_version)) first"
                )
        save_checkpoint(path, self.runners, broker, now_ms)

    def start(self, now_ms: int, record: Callable[[list[BatchRecord]], None]) -> None:
        """Start every query at processing time ``now_ms`` (from its checkpoint, if it has
        one), with the records piped so far handed to its sources. The batches Spark runs
        on start go to ``record``, query by query. A query that fails its first batch
        does not keep the others from starting; the first failure is raised after."""
        failed: BatchFailedError | BackfillNeverEndsError | None = None
        for runner in self.runners:
            try:
                first = runner.start(now_ms)
                record(first)
                if runner.backfill:
                    run_backfill(runner, first, record)
            except (BatchFailedError, BackfillNeverEndsError) as error:
                failed = failed or error
        if failed is not None:
            raise failed

    def stop(self) -> None:
        """Stop every query; checkpoints and queued records stay for :meth:`start`."""
        for runner in self.runners:
            runner.stop()

    def pipe(self, input_name: str, lines: list[str], records: Sequence[TestRecord]) -> None:
        """Queue rows for every query that reads ``input_name``."""
        for runner in self.runners:
            if input_name in runner.input_names:
                runner.enqueue(input_name, lines, records)

    def pipe_empty(self, input_name: str) -> None:
        """Queue an offset of zero rows for every query that reads ``input_name``."""
        for runner in self.runners:
            if input_name in runner.input_names:
                runner.enqueue_empty(input_name)

    def flush(self) -> None:
        """Hand every running query's queued rows to its memory streams (one offset
        each); a stopped or ended query's wait for its start."""
        for runner in self.active:
            runner.flush()

    def close(self) -> None:
        """Stop every query (all of them, even when one fails to stop), then delete the
        checkpoints, and the landing directories of file inputs when no query set of the
        driver holds them any more (a close or a reset, not an upgrade). Raises the first
        stop error after that."""
        errors: list[BaseException] = []
        for runner in self.runners:
            try:
                runner.stop()
            except BaseException as error:  # keep stopping the others
                errors.append(error)
        if self._folder is not None:
            # Nothing writes into it any more: each stopped query's tasks have ended and
            # its state store providers are closed (which joins their checksum writers).
            shutil.rmtree(self._folder, ignore_errors=True)
            self._folder = None
        if self._landing is not None:
            self._landing.release(self)
        if errors:
            raise errors[0]


def check_sql_conf(conf: Mapping[str, str] | None) -> dict[str, str]:
    """``sql_conf`` checked, with every value as Spark's text (booleans lower case)."""
    if conf is None:
        return {}
    if not isinstance(conf, Mapping):
        raise InvalidArgumentTypeError(
            f"sql_conf must be a mapping of setting names to values, got {conf!r}"
        )
    checked = {}
    for key, value in conf.items():
        if not isinstance(key, str) or not key:
            raise InvalidArgumentTypeError(
                f"sql_conf keys must be Spark setting names (str), got {key!r}"
            )
        if isinstance(value, bool):
            checked[key] = "true" if value else "false"
        elif isinstance(value, (str, int, float)):
            checked[key] = str(value)
        else:
            raise InvalidArgumentTypeError(
                f"sql_conf[{key!r}] must be a str, int, float or bool, got "
                f"{type(value).__name__}"
            )
    return checked
