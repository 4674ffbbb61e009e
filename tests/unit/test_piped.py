"""Records built when first read: a batch's input records behave as the tuple they stand
for, and the queue of piped records keeps order, topics and JSON lines."""

from __future__ import annotations

import dataclasses
import pickle
from datetime import datetime, timezone

from pyspark_streamtest import BatchRecord, TestRecord
from pyspark_streamtest.core.records import LateRecord, LazyComputed, LazyRecords, field_known
from pyspark_streamtest.driver.queries._piped import RecordBlock, RecordQueue

T0 = datetime(2024, 1, 1, tzinfo=timezone.utc)


class Counted(LazyRecords):
    __slots__ = ("_records", "built")

    def __init__(self, records: tuple[TestRecord, ...]) -> None:
        self.built = 0
        self._records = records

    def records(self) -> tuple[TestRecord, ...]:
        self.built += 1
        return self._records


def batch(input_records: object) -> BatchRecord:
    return BatchRecord("out", 0, T0, None, None, input_records, (), 1, 0, 0)  # type: ignore[arg-type]


def test_a_batch_s_later_records_are_built_once_on_first_read_and_act_as_the_tuple():
    records = (TestRecord({"k": "a"}, topic="in"),)
    later = Counted(records)
    lazy, eager = batch(later), batch(records)
    assert later.built == 0
    assert lazy.input_records == records and lazy.input_records is lazy.input_records
    assert later.built == 1
    assert lazy == eager and repr(lazy) == repr(eager)
    assert dataclasses.replace(lazy, batch_id=3).input_records == records
    assert dataclasses.asdict(lazy) == dataclasses.asdict(eager)
    unpickled = pickle.loads(pickle.dumps(batch(Counted(records))))
    assert unpickled == eager and type(unpickled.__dict__["_input_records"]) is tuple


def test_a_deferred_field_is_worked_out_once_on_first_read_and_acts_as_its_value():
    """A batch's late records known from its piped records are worked out when first
    read (by whoever reads them, the driver open or not), once; the batch compares,
    copies, prints and pickles as one holding the value."""
    records = (TestRecord({"k": "a"}, timestamp=T0, topic="in"),)
    late = (LateRecord(records[0], 0, T0),)
    calls: list[int] = []

    def work_out() -> tuple[LateRecord, ...]:
        calls.append(1)
        return late

    def lazy_batch() -> BatchRecord:
        return dataclasses.replace(batch(records), late_records=LazyComputed(work_out))  # type: ignore[arg-type]

    lazy, eager = lazy_batch(), dataclasses.replace(batch(records), late_records=late)
    assert calls == []
    assert field_known(lazy, "late_records") and calls == [1]  # known: worked out here
    assert lazy.late_records == late and lazy.late_records is lazy.late_records
    assert calls == [1]
    assert lazy == eager and repr(lazy) == repr(eager)
    unpickled = pickle.loads(pickle.dumps(lazy_batch()))
    assert unpickled == eager and unpickled.__dict__["_late_records"] == late


def test_input_records_stays_a_required_field():
    field = {f.name: f for f in dataclasses.fields(BatchRecord)}["input_records"]
    assert field.default is dataclasses.MISSING
    assert [name for name in BatchRecord.__match_args__][:6] == [
        "output", "batch_id", "processing_time", "watermark", "watermark_after",
        "input_records"]


def block(rows: list[tuple[object, ...]], topic: str = "in", at: int | None = 1) -> RecordBlock:
    return RecordBlock(rows, ("k", "ts"), at, topic, [f"line {r[0]}" for r in rows])


def test_a_block_builds_the_per_row_records_once_and_shares_their_lines():
    rows = [("a", T0), ("b", T0)]
    early: dict[int, str] = {}
    blk = block(rows)
    blk.share_lines(early)
    assert early == {} and len(blk) == 2
    records = blk.records()
    assert records == [TestRecord({"k": "a", "ts": T0}, timestamp=T0, topic="in"),
                       TestRecord({"k": "b", "ts": T0}, timestamp=T0, topic="in")]
    assert blk.records() is records and blk[1] is records[1] and list(blk) == records
    late: dict[int, str] = {}
    blk.share_lines(late)
    assert early == late == {id(records[0]): "line a", id(records[1]): "line b"}
    assert block(rows, at=None)[0] == TestRecord({"k": "a", "ts": T0}, topic="in")


def test_the_queue_keeps_order_topics_and_lines_across_chunks():
    eager = [TestRecord({"k": "x"}, topic="other"), TestRecord({"k": "y"}, topic="in")]
    lines = {id(eager[0]): "line x", id(eager[1]): "line y"}
    first, last = block([("a", T0), ("b", T0)]), block([("c", T0)], topic="other")
    queue = RecordQueue()
    for chunk in (first, [], eager, last):
        queue.add(chunk)
    assert len(queue) == 5
    assert queue.lines_of("in", lines) == ["line a", "line b", "line y"]
    assert queue.lines_of("other", lines) == ["line x", "line c"]
    kept = queue.of_topics({"in"})
    assert [r.value["k"] for r in kept] == ["a", "b", "y"] and len(kept) == 3
    taken = queue.take()
    assert len(queue) == 0 and list(queue) == []
    later = taken
    assert [r.value["k"] for r in later.records()] == list("abxyc")
    taken.drop_first(3)
    assert [r.value["k"] for r in taken] == ["y", "c"] and len(taken) == 2
