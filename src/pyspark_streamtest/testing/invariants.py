"""Assertions for property tests: the driver against the model, and properties that
hold whatever the input. Each raises :class:`InvariantError` (an ``AssertionError``)
whose message shows the difference batch by batch.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from datetime import datetime
from typing import Any

from ..core.equality import OutputMismatchError, assert_values_equal
from ..core.records import BatchRecord, TestRecord
from ..core.stable import stable_json, utc_text
from ..errors import InvalidArgumentError, InvalidArgumentTypeError, hide_our_frames
from .model import Event, ModelBatch, Schedule, last_values

__tracebackhide__ = hide_our_frames

__all__ = [
    "InvariantError",
    "assert_matches_expected",
    "assert_matches_model",
    "assert_no_late_rows",
    "assert_same_final_results",
    "assert_same_history",
    "assert_table_matches_changelog",
    "assert_watermark_never_goes_back",
    "final_results",
    "row_of",
]


class InvariantError(AssertionError):
    """A property of the streaming run does not hold (the message says where)."""


def row_of(record: TestRecord) -> dict[str, Any]:
    """The model's shape of an output record: the row dict of a plain output; for a
    Kafka output ``{"key", "value"}`` decoded as UTF-8 (None stays None)."""
    if record.partition is not None:
        def text(data: Any) -> Any:
            return data.decode("utf-8") if isinstance(data, (bytes, bytearray)) else data
        return {"key": text(record.key), "value": text(record.value)}
    return dict(record.value)


def _rows(rows: Iterable[Any]) -> list[str]:
    return sorted(stable_json(r) for r in rows)


def assert_matches_model(
    batches: Sequence[BatchRecord],
    expected: Sequence[ModelBatch],
    *,
    row: Callable[[TestRecord], Any] = row_of,
    context: str = "",
) -> None:
    """Every batch Spark ran equals the model's: same ids, watermark during and after,
    and the same rows (as multisets: rows of one batch have no order). ``context`` (for
    example the schedule) is added to the message."""
    problems: list[str] = []
    for index in range(max(len(batches), len(expected))):
        actual = batches[index] if index < len(batches) else None
        model = expected[index] if index < len(expected) else None
        if actual is None or model is None:
            which = "Spark ran" if model is None else "the model predicts"
            one = actual or model
            problems.append(f"batch {getattr(one, 'batch_id', index)}: only {which} it")
            continue
        notes = []
        if actual.batch_id != model.batch_id:
            notes.append(f"id {actual.batch_id} != model {model.batch_id}")
        if (actual.watermark, actual.watermark_after) != (model.watermark,
                                                          model.watermark_after):
            notes.append(f"watermark {utc_text(actual.watermark)} -> "
                         f"{utc_text(actual.watermark_after)}, model "
                         f"{utc_text(model.watermark)} -> {utc_text(model.watermark_after)}")
        got = _rows(row(r) for r in actual.output_records)
        want = _rows(model.rows)
        if got != want:
            only_spark = [r for r in got if r not in want]
            only_model = [r for r in want if r not in got]
            notes.append("rows differ:" + "".join(f"\n      spark only: {r}" for r in only_spark)
                         + "".join(f"\n      model only: {r}" for r in only_model)
                         + ("" if only_spark or only_model else
                            f"\n      same rows, other counts: spark {got} model {want}"))
        if notes:
            problems.append(f"batch {model.batch_id}: " + "; ".join(notes))
    if problems:
        lines = ["Spark and the model disagree:", *("  " + p for p in problems),
                 "history (spark | model):"]
        for index in range(max(len(batches), len(expected))):
            a = batches[index] if index < len(batches) else None
            m = expected[index] if index < len(expected) else None
            lines.append(
                f"  batch {index}: in {_events_text(m.events) if m else '-'}; watermark "
                f"{utc_text(a.watermark) if a else '-'} | {utc_text(m.watermark) if m else '-'}"
                f"; out {len(a.output_records) if a else '-'} | {len(m.rows) if m else '-'}"
                f"; late model {_events_text(m.late) if m else '-'}")
        if context:
            lines.extend(["", context])
        raise InvariantError("\n".join(lines))


def assert_matches_expected(
    batches: Sequence[BatchRecord],
    expected: Sequence[Any] | Callable[[Schedule], Sequence[Any]],
    *,
    schedule: Schedule | None = None,
    row: Callable[[TestRecord], Any] = row_of,
    ignore_order: bool = True,
    rtol: float = 0.0,
    atol: float = 0.0,
    ignore_columns: Collection[str] | None = None,
    context: str = "",
) -> None:
    """The rows the run emitted, over all ``batches``, are ``expected``: the rows your
    own statement of the pipeline predicts, instead of the built-in model's.

    ``expected`` is those rows, or a function of the schedule that returns them (then
    pass ``schedule``), e.g. a plain-Python count of ``schedule.events``. Compute them
    *before* the Spark run when you can (``expected = my_counts(schedule)``, then
    ``run_topology``): an expectation that fails on its own then shrinks without Spark.
    Each output record becomes a row by ``row`` (:func:`row_of` by default; a Kafka
    output's JSON value needs ``row=lambda r: json.loads(r.value)``).

    Rows compare as :func:`~pyspark_streamtest.assert_values_equal` compares them: as
    multisets by default (``ignore_order``; rows of one batch have no order), floats
    exactly unless ``rtol``/``atol`` is given, ``pytest.approx`` inside an expected row
    with its own tolerance, ``ignore_columns`` left out of both sides. A mismatch raises
    :class:`InvariantError` with the side-by-side table (each actual row with the
    batch that emitted it) and ``context``, or the schedule when no ``context`` is given.
    """
    if callable(expected):
        if schedule is None:
            raise InvalidArgumentError(
                "expected is a function of the schedule; pass schedule= too (or pass "
                "the rows: expected=my_rows(schedule))")
        expected = expected(schedule)
    if isinstance(expected, (str, bytes, Mapping)) or not isinstance(
            expected, (Sequence, Iterable)):
        raise InvalidArgumentTypeError(
            f"expected must be a list of rows (or a function returning one), got "
            f"{type(expected).__name__} {expected!r}")
    records = [(batch.batch_id, record) for batch in batches for record in batch.output_records]
    output = batches[0].output if batches else None
    try:
        assert_values_equal([row(r) for _, r in records], list(expected),
                            ignore_order=ignore_order, rtol=rtol, atol=atol,
                            ignore_columns=ignore_columns,
                            title="rows" if output is None else f"rows of {output!r}",
                            batch_ids=[batch_id for batch_id, _ in records])
    except OutputMismatchError as mismatch:
        if not context and schedule is not None:
            context = f"schedule:\n{schedule}"
        text = str(mismatch) + (f"\n\n{context}" if context else "")
        raise InvariantError(text) from None


def _events_text(events: Iterable[Event]) -> str:
    return "[" + ", ".join(map(str, events)) + "]"


def assert_watermark_never_goes_back(batches: Sequence[BatchRecord]) -> None:
    """Per output, each batch's watermark is at or after the previous batch's, and no
    batch's ``watermark_after`` is below its ``watermark``."""
    last: dict[str, datetime] = {}
    for batch in batches:
        if batch.watermark is None:
            continue
        before = last.get(batch.output)
        if before is not None and batch.watermark < before:
            raise InvariantError(f"batch {batch.batch_id} of {batch.output!r}: watermark "
                                 f"{utc_text(batch.watermark)} is behind the previous "
                                 f"batch's {utc_text(before)}")
        if batch.watermark_after is not None and batch.watermark_after < batch.watermark:
            raise InvariantError(f"batch {batch.batch_id} of {batch.output!r}: watermark "
                                 f"went back within the batch")
        last[batch.output] = batch.watermark_after or batch.watermark


def assert_no_late_rows(
    batches: Sequence[BatchRecord], event_time: Callable[[Mapping[str, Any]], datetime],
) -> None:
    """No batch emits a row whose event time (``event_time(row)``: the row's time
    column, or its window's end) is at or before the watermark of the batch before it,
    the watermark Spark drops late rows with."""
    previous: dict[str, datetime] = {}
    for batch in batches:
        limit = previous.get(batch.output)
        for record in batch.output_records:
            if limit is not None and event_time(record.value) <= limit:
                raise InvariantError(
                    f"batch {batch.batch_id} of {batch.output!r} emitted "
                    f"{stable_json(record.value)}, at or behind the late-row watermark "
                    f"{utc_text(limit)}")
        if batch.watermark is not None:
            previous[batch.output] = batch.watermark


def final_results(
    batches: Iterable[BatchRecord], *, key: Callable[[Any], Any],
    row: Callable[[TestRecord], Any] = row_of,
) -> dict[str, Any]:
    """The last row emitted per ``key(row)`` over all batches (the result table of an
    update- or append-mode aggregation), keys as stable JSON text."""
    table: dict[str, Any] = {}
    for batch in batches:
        for record in batch.output_records:
            value = row(record)
            table[stable_json(key(value))] = value
    return table


def assert_same_final_results(
    first: Iterable[BatchRecord], second: Iterable[BatchRecord], *,
    key: Callable[[Any], Any], row: Callable[[TestRecord], Any] = row_of,
) -> None:
    """Two runs end with the same result per key (for order-insensitive aggregations
    fed the same in-order records split into batches differently)."""
    a, b = final_results(first, key=key, row=row), final_results(second, key=key, row=row)
    if a != b:
        keys = sorted(set(a) | set(b))
        lines = [f"  {k}: {stable_json(a.get(k))} | {stable_json(b.get(k))}" for k in keys
                 if stable_json(a.get(k)) != stable_json(b.get(k))]
        raise InvariantError("the final results differ (first run | second run):\n"
                             + "\n".join(lines))


def assert_same_history(
    first: Sequence[BatchRecord], second: Sequence[BatchRecord], *,
    row: Callable[[TestRecord], Any] = row_of,
) -> None:
    """Two runs ran the same batches: ids, watermarks and rows (a restart at a batch
    boundary must change none of them)."""
    one = [(b.batch_id, b.watermark, b.watermark_after, _rows(row(r) for r in b.output_records))
           for b in first]
    two = [(b.batch_id, b.watermark, b.watermark_after, _rows(row(r) for r in b.output_records))
           for b in second]
    if one != two:
        lines = []
        for index in range(max(len(one), len(two))):
            x = one[index] if index < len(one) else None
            y = two[index] if index < len(two) else None
            mark = " " if x == y else "*"
            lines.append(f" {mark} {_history_text(x)} | {_history_text(y)}")
        raise InvariantError("the histories differ (first | second):\n" + "\n".join(lines))


def _history_text(entry: Any) -> str:
    if entry is None:
        return "-"
    batch_id, watermark, after, rows = entry
    return f"batch {batch_id} wm {utc_text(watermark)}->{utc_text(after)} rows {rows}"


def assert_table_matches_changelog(table: Mapping[Any, Any], events: Iterable[Event]) -> None:
    """A table read from an output topic (tombstones deleting keys) equals the last
    non-tombstone value per key of the events piped (keys whose last event is a
    tombstone absent)."""
    expected = last_values(events)
    if dict(table) != expected:
        keys = sorted(set(table) | set(expected), key=str)
        lines = [f"  {k!r}: table {table.get(k)!r}, changelog {expected.get(k)!r}"
                 for k in keys if table.get(k) != expected.get(k)]
        raise InvariantError("the table differs from the changelog's last values:\n"
                             + "\n".join(lines))
