"""What a failed batch raises: which kind of failure Spark's error is (a checkpoint an
upgrade cannot use, Spark's machinery, or the batch's own), and which record made it
fail: the failed batch's records replayed through the row-wise parts of the query's
plan (as :mod:`.._spark.late_rows` replays them for late records), halved until one
record alone raises the batch's own error."""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

from ..._spark.jvm import JavaObject, Jvm
from ..._spark.query.checkpoints.incompatible import incompatibility
from ..._spark.query.conf import scoped_sql_conf
from ..._spark.query.late_rows import replay_error
from ..._spark.query.plan import analyzed_plan, plan_facts
from ..._spark.runtime import warm_jvm
from ..._spark.runtime.infrastructure import channel_failure, infrastructure_failure, machine_load
from ...core.records import TestRecord
from ...errors import (
    BatchFailedError,
    CallbackChannelError,
    IncompatibleCheckpointError,
    SparkInfrastructureError,
    StreamingQueryFailedError,
    hide_our_frames,
)
from ..topology import BuiltOutput

__tracebackhide__ = hide_our_frames

_TRACEBACK = "Traceback (most recent call last):"
# The exception line that ends a Python traceback (not indented, unlike its frames).
_PYTHON_ERROR = re.compile(r"^([A-Za-z_][\w.]*(?:Error|Exception|Exit|Interrupt|Warning)\b.*)$",
                           re.MULTILINE)
_ERROR_CLASS = re.compile(r"\[[A-Z][A-Z0-9_]*(?:\.[A-Z0-9_]+)*\]")


class Replayable(Protocol):
    """What a query runner gives for a replay."""

    built: BuiltOutput

    def source_line(self, record: TestRecord) -> tuple[int, str] | None: ...

    def leaves(self) -> dict[int, JavaObject]: ...


@dataclass(frozen=True)
class CulpritSearch:
    """What the search for a failed batch's culprit found: the record, or why none."""

    record: TestRecord | None
    why_none: str | None = None


_NOT_A_RECORDS = (
    "the error (no Python traceback of a UDF, no Spark error class) is not one that "
    "replaying records through the query's plan can raise: it comes from a foreachBatch "
    "function, a sink or the batch as a whole"
)
_NONE_RAISES = (
    "replayed one half at a time through the query's row-wise plan (each input of a "
    "stream-stream join on its own), no record raises it alone: it comes from a stateful "
    "operator, a foreachBatch function or a sink, or from records together"
)


_IN_STATE_FUNCTION = (
    "the Python traceback above is the query's stateful function's (applyInPandasWithState, "
    "flatMapGroupsWithState or transformWithState): a replay through the row-wise plan does "
    "not run a stateful operator's function, and no record raises the error before it, so "
    "no record is named; the traceback shows the line, the batch's records are listed"
)


def batch_failure(
    output: str, batch_id: int, cause: str, records: tuple[TestRecord, ...],
    culprit: Callable[[], CulpritSearch], *, from_app: bool = False,
) -> BatchFailedError:
    """The error for batch ``batch_id`` of ``output`` that failed with ``cause`` (Spark's
    text) after reading ``records``; ``culprit`` finds the record that raised it (run
    only for a failure of the batch's own)."""
    refused = incompatibility(cause)
    if refused is not None:
        return IncompatibleCheckpointError(output, batch_id, cause, records,
                                           change=refused[0], operator=refused[1],
                                           from_app=from_app)
    channel = channel_failure(cause)
    if channel is not None:
        held = warm_jvm.held()
        return CallbackChannelError(output, batch_id, cause, channel, machine_load(),
                                    warm_jvm_pid=held.jvm_pid if held else None)
    machinery = infrastructure_failure(cause)
    if machinery is not None:
        return SparkInfrastructureError(output, batch_id, cause, machinery, machine_load())
    found = culprit()
    return StreamingQueryFailedError(output, batch_id, cause, records, culprit=found.record,
                                     culprit_note=found.why_none)


def error_signature(cause: str) -> str | None:
    """What identifies a batch's error in a replay's: the exception line of a Python
    traceback (a UDF's), else Spark's error class (``[CAST_OVERFLOW]``); None if neither."""
    if _TRACEBACK in cause:
        found = _PYTHON_ERROR.search(cause[cause.rindex(_TRACEBACK):])
        if found:
            return found.group(1).strip()
    error_class = _ERROR_CLASS.search(cause)
    return error_class.group(0) if error_class else None


def bisect_culprit(
    records: Sequence[TestRecord], raises: Callable[[Sequence[TestRecord]], bool]
) -> TestRecord | None:
    """The one record that raises alone, found by halving (about 2 log2 n replays);
    None when the records do not raise together, or raise only together."""
    part = list(records)
    if not part or not raises(part):
        return None
    while len(part) > 1:
        half = len(part) // 2
        if raises(part[:half]):
            part = part[:half]
        elif raises(part[half:]):
            part = part[half:]
        else:
            return None
    return part[0]


def raising_record(
    jvm: Jvm, runner: Replayable, cause: str, records: Sequence[TestRecord],
    sql_conf: Mapping[str, str],
) -> CulpritSearch:
    """The record of a failed batch (``records``, failed with ``cause``) that raises the
    batch's error on its own; none when there is one record or none (the message lists
    it), else with the reason: the error is not one a record can raise, no replay finds
    it, or a replay cannot run (the batch's own error is what the test must see)."""
    if len(records) < 2:
        return CulpritSearch(None)
    signature = error_signature(cause)
    if signature is None:
        return CulpritSearch(None, _NOT_A_RECORDS)
    try:
        found = _search(jvm, runner, signature, records, sql_conf)
    except Exception as error:  # e.g. the JVM died with the batch
        first = (str(error).strip().splitlines() or [type(error).__name__])[0][:200]
        return CulpritSearch(None, f"the replay could not run ({first})")
    if found is not None:
        return CulpritSearch(found)
    if _TRACEBACK in cause and plan_facts(runner.built.dataframe).has_grouped_state:
        return CulpritSearch(None, _IN_STATE_FUNCTION)
    return CulpritSearch(None, _NONE_RAISES)


def _search(
    jvm: Jvm, runner: Replayable, signature: str, records: Sequence[TestRecord],
    sql_conf: Mapping[str, str],
) -> TestRecord | None:
    plan = analyzed_plan(runner.built.dataframe)
    leaves = runner.leaves()

    def raises(part: Sequence[TestRecord]) -> bool:
        lines: dict[int, list[tuple[int, str]]] = {}
        for tag, record in enumerate(part):
            fed = runner.source_line(record)
            if fed is not None:
                lines.setdefault(fed[0], []).append((tag, fed[1]))
        error = replay_error(jvm, plan, leaves, lines)
        return error is not None and signature in error

    with scoped_sql_conf(jvm.spark, sql_conf):
        return bisect_culprit(records, raises)
