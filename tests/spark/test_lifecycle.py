"""Nothing outlives a driver: no query, no clock callback, no checkpoint directory."""

from __future__ import annotations

import sys
import traceback
from datetime import timedelta

from pyspark_streamtest import TopologyTestDriver
from tests.helpers import at, clicks_per_user


def _threads_in_clock_callbacks() -> list[str]:
    """Stacks of threads currently inside our clock (a blocked or running callback)."""
    stacks = ["".join(traceback.format_stack(frame)) for frame in sys._current_frames().values()]
    return [stack for stack in stacks if "_spark/clock.py" in stack and "waitTillTime" in stack]


def test_twenty_lifecycles_leave_nothing_behind(spark, tmp_path):
    for i in range(20):
        with TopologyTestDriver(clicks_per_user, spark=spark, checkpoint_root=tmp_path) as driver:
            driver.create_input_topic("clicks").pipe_input({"user": "a", "url": "/"},
                                                            timestamp=at(i))
            if i % 2:
                driver.process_all_available()
            else:
                driver.advance_wall_clock(timedelta(seconds=1))
            if i % 5 == 0:
                driver.restart()
        assert spark.streams.active == []
    assert list(tmp_path.iterdir()) == []
    assert _threads_in_clock_callbacks() == []


def test_close_while_records_are_pending(spark, tmp_path):
    driver = TopologyTestDriver(clicks_per_user, spark=spark, checkpoint_root=tmp_path)
    driver.create_input_topic("clicks").pipe_input({"user": "a", "url": "/"}, timestamp=at(1))
    assert len(_threads_in_clock_callbacks()) == 1  # the idle query waits in its clock
    driver.close()
    assert spark.streams.active == []
    assert list(tmp_path.iterdir()) == []
    assert _threads_in_clock_callbacks() == []
