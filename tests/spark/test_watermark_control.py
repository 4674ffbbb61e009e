"""advance_watermark_to: move a query's watermark without data, as a test-only control."""

from __future__ import annotations

import pytest

from pyspark_streamtest import TimeWentBackwardsError, Topology
from tests.helpers import at, clicks_per_user, window


def test_advancing_the_watermark_closes_windows_and_drops_later_late_rows(topology_driver):
    driver = topology_driver(clicks_per_user)
    clicks = driver.create_input_topic("clicks")
    counts = driver.create_output_topic("counts")
    clicks.pipe_input({"user": "a", "url": "/"}, timestamp=at(1))
    clicks.pipe_input({"user": "a", "url": "/x"}, timestamp=at(7))
    clicks.pipe_input({"user": "b", "url": "/"}, timestamp=at(12))
    driver.process_all_available()
    assert counts.is_empty()
    assert driver.watermark("counts") == at(2)

    ran = driver.advance_watermark_to(at(10))
    # One no-data batch, planned with the new watermark, emits the window [0, 10).
    assert [(b.num_input_rows, b.watermark, b.watermark_after) for b in ran] == [
        (0, at(10), at(10))]
    assert counts.read_values_to_list() == [{"window": window(0, 10), "user": "a", "count": 2}]
    assert driver.watermark("counts") == at(10)

    clicks.pipe_input({"user": "a", "url": "/late"}, timestamp=at(9))  # behind the watermark
    clicks.pipe_input({"user": "b", "url": "/ok"}, timestamp=at(15))
    ran = driver.process_all_available()
    assert [(b.num_input_rows, b.num_rows_dropped_by_watermark) for b in ran] == [(2, 1)]

    # Data moves it further only when it is ahead: max event time 15 - 10 s = 5 < 10.
    assert driver.watermark("counts") == at(10)
    ran = driver.advance_watermark_to(at(20))
    assert counts.read_values_to_list() == [{"window": window(10, 20), "user": "b", "count": 2}]


def test_the_watermark_only_moves_forward(topology_driver):
    driver = topology_driver(clicks_per_user)
    driver.advance_watermark_to(at(30))
    with pytest.raises(TimeWentBackwardsError, match=r"cannot move the watermark of output "
                                                     r"'counts' back from 2024-01-01T00:00:30"):
        driver.advance_watermark_to(at(29))
    assert driver.watermark("counts") == at(30)
    assert driver.advance_watermark_to(at(30)) == []  # the same value: nothing to do


def test_a_restart_keeps_an_advanced_watermark(topology_driver):
    driver = topology_driver(clicks_per_user)
    clicks = driver.create_input_topic("clicks")
    counts = driver.create_output_topic("counts")
    assert driver.advance_watermark_to(at(50)) == []  # no state: Spark runs no batch
    driver.restart()
    assert driver.watermark("counts") == at(50)

    # Spark filters late rows with the previous batch's watermark (the epoch: no batch
    # ran yet) and evicts with the current one (50 s): the row at 40 s is counted and
    # its window [40, 50) is emitted in the same batch.
    clicks.pipe_input({"user": "a", "url": "/"}, timestamp=at(40))
    ran = driver.process_all_available()
    assert [(b.watermark, b.num_rows_dropped_by_watermark) for b in ran] == [(at(50), 0)]
    assert counts.read_values_to_list() == [{"window": window(40, 50), "user": "a", "count": 1}]
    # From the next batch on, rows behind 50 s are dropped.
    clicks.pipe_input({"user": "a", "url": "/"}, timestamp=at(41))
    ran = driver.process_all_available()
    assert [(b.watermark, b.num_rows_dropped_by_watermark) for b in ran] == [(at(50), 1)]
    assert counts.is_empty()


def test_without_a_watermark_there_is_nothing_to_advance(topology_driver):
    def stateless(t: Topology) -> None:
        t.output("o", t.input("x", schema="v STRING"))

    driver = topology_driver(stateless)
    with pytest.raises(ValueError, match="no query of this topology has an event-time "
                                         "watermark"):
        driver.advance_watermark_to(at(1))
    with pytest.raises(ValueError, match="output 'o' has no event-time watermark"):
        driver.advance_watermark_to(at(1), output="o")
