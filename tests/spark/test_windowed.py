"""Windowed counts with a watermark: exact emissions, watermarks and late drops per batch."""

from __future__ import annotations

from datetime import timedelta
from itertools import pairwise

from tests.helpers import T0, at, clicks_per_user, window


def test_window_closes_when_watermark_passes(topology_driver):
    driver = topology_driver(clicks_per_user)
    clicks = driver.create_input_topic("clicks")
    counts = driver.create_output_topic("counts")

    clicks.pipe_input({"user": "a", "url": "/"}, timestamp=at(1))
    clicks.pipe_input({"user": "a", "url": "/x"}, timestamp=at(7))
    clicks.pipe_input({"user": "b", "url": "/"}, timestamp=at(3))  # out of order
    ran = driver.process_all_available()
    # One data batch; its watermark-after (7 - 10 s) moves the watermark from the epoch,
    # so Spark runs one no-data batch, which closes nothing yet.
    assert [(b.batch_id, b.num_input_rows) for b in ran] == [(0, 3), (1, 0)]
    assert ran[0].watermark_after == at(-3)
    assert counts.is_empty()
    assert driver.watermark("counts") == at(-3)

    clicks.pipe_input({"user": "b", "url": "/y"}, timestamp=at(21))
    ran = driver.process_all_available()
    assert [(b.batch_id, b.num_input_rows, b.watermark) for b in ran] == [
        (2, 1, at(-3)),
        (3, 0, at(11)),  # the no-data batch runs with watermark 11 s and emits [0, 10)
    ]
    closed = [
        {"window": window(0, 10), "user": "a", "count": 2},
        {"window": window(0, 10), "user": "b", "count": 1},
    ]
    assert sorted(ran[1].output_values, key=lambda v: v["user"]) == closed
    assert ran[0].output_values == []
    assert sorted(counts.read_values_to_list(), key=lambda v: v["user"]) == closed

    clicks.pipe_input({"user": "a", "url": "/late"}, timestamp=at(4))  # window already closed
    ran = driver.process_all_available()
    assert [(b.batch_id, b.num_input_rows, b.num_rows_dropped_by_watermark) for b in ran] == [
        (4, 1, 1)
    ]
    assert counts.is_empty()
    assert all(b.processing_time == T0 for b in driver.batches)


def test_watermark_after_is_the_next_batch_watermark(topology_driver):
    driver = topology_driver(clicks_per_user)
    clicks = driver.create_input_topic("clicks", auto_advance=timedelta(seconds=4))
    for _ in range(6):
        clicks.pipe_input({"user": "a", "url": "/"})
        driver.advance_wall_clock(timedelta(seconds=1))
    history = driver.batches
    assert len(history) >= 6
    for before, after in pairwise(history):
        assert before.watermark_after == after.watermark
    assert [r.timestamp for b in history for r in b.input_records] == [
        at(4 * i) for i in range(6)
    ]


def test_record_in_the_batch_that_closes_its_window_is_still_counted(topology_driver):
    # Spark filters late rows with the previous batch's watermark and evicts with the
    # current one; a row that arrives with the batch that closes its window is counted.
    driver = topology_driver(clicks_per_user)
    clicks = driver.create_input_topic("clicks")
    clicks.pipe_input({"user": "a", "url": "/"}, timestamp=at(1))
    driver.advance_wall_clock(timedelta(seconds=1))
    clicks.pipe_input({"user": "a", "url": "/"}, timestamp=at(25))
    driver.advance_wall_clock(timedelta(seconds=1))  # next watermark: 15 s
    clicks.pipe_input({"user": "a", "url": "/"}, timestamp=at(2))  # older than 15 s
    ran = driver.advance_wall_clock(timedelta(seconds=1))
    assert [(b.watermark, b.num_rows_dropped_by_watermark) for b in ran] == [(at(15), 0)]
    assert driver.create_output_topic("counts").read_values_to_list() == [
        {"window": window(0, 10), "user": "a", "count": 2}
    ]


def test_assert_values_reads_the_topic_and_shows_the_difference(topology_driver):
    import pytest

    from pyspark_streamtest import OutputMismatchError

    driver = topology_driver(clicks_per_user)
    clicks = driver.create_input_topic("clicks")
    counts = driver.create_output_topic("counts")
    for user, second in [("a", 1), ("b", 2), ("a", 3), ("c", 30)]:
        clicks.pipe_input({"user": user, "url": "/"}, timestamp=at(second))
    driver.process_all_available()
    counts.assert_values([{"window": window(0, 10), "user": "b", "count": 1},
                          {"window": window(0, 10), "user": "a", "count": 2}],
                         ignore_order=True)
    clicks.pipe_input({"user": "d", "url": "/"}, timestamp=at(55))  # watermark 45 s
    driver.process_all_available()
    with pytest.raises(OutputMismatchError) as caught:
        counts.assert_values([{"window": window(30, 40), "user": "c", "count": 2}])
    # A windowed row is too wide for one line a side: a field per line.
    lines = str(caught.value).splitlines()
    assert lines[0] == ("output 'counts': 1 values expected, 1 read; 1 differ "
                        "(wide values: a field per line)")
    assert lines[1] == "  *   0  (batch 3)    count: 2 != 1"  # the batch that emitted it
    assert lines[3].split() == ["*", "count", "2", "1"]
    assert max(map(len, lines)) <= 100
