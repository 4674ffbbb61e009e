"""Restart from the checkpoint: state, watermark and batch ids carry over."""

from __future__ import annotations

from datetime import timedelta

from tests.helpers import at, clicks_per_user, window


def test_restart_mid_stream_keeps_state_and_watermark(topology_driver):
    driver = topology_driver(clicks_per_user)
    clicks = driver.create_input_topic("clicks")
    clicks.pipe_input({"user": "a", "url": "/"}, timestamp=at(1))
    clicks.pipe_input({"user": "a", "url": "/"}, timestamp=at(12))
    driver.process_all_available()
    before = driver.batches
    assert before[-1].num_state_rows_total == 2
    watermark = driver.watermark("counts")
    assert watermark == at(2)

    clicks.pipe_input({"user": "a", "url": "/"}, timestamp=at(5))  # piped before the restart
    # It reaches the source before the query starts again (as records that arrive while a
    # job is down), so Spark's first trigger on start runs it.
    ran = driver.restart()
    assert driver.batches == (*before, *ran)
    assert driver.watermark("counts") == watermark
    assert driver.process_all_available() == []
    assert ran[0].batch_id == before[-1].batch_id + 1  # ids continue
    assert ran[0].num_input_rows == 1
    assert ran[0].watermark == at(2)  # recovered from the checkpoint
    assert ran[0].num_state_rows_total == 2  # [0,10) a (now 2) and [10,20) a

    clicks.pipe_input({"user": "b", "url": "/"}, timestamp=at(40))
    driver.advance_wall_clock(timedelta(seconds=2))
    emitted = sorted(
        driver.create_output_topic("counts").read_values_to_list(),
        key=lambda v: v["window"]["start"],
    )
    assert emitted == [
        {"window": window(0, 10), "user": "a", "count": 2},  # state from before the restart
        {"window": window(10, 20), "user": "a", "count": 1},
    ]
