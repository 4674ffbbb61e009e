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


def _checkpoint_manager(driver: TopologyTestDriver) -> str:
    """The class of the CheckpointFileManager the (only) query's offset log writes with."""
    from pyspark_streamtest._spark.query import stream_execution

    (runner,) = driver._queries.runners
    log = stream_execution(runner._jquery).offsetLog()
    return str(log.fileManager().getClass().getSimpleName())


def test_checkpoints_use_the_file_system_manager_unless_sql_conf_says_otherwise(spark):
    """The driver's queries write checkpoints with Spark's FileSystem-based manager (no
    chmod/readlink process per file), and the session keeps its own setting; a driver's
    sql_conf overrides the choice. Restart and state still work with it."""
    from pyspark_streamtest._spark.checkpoint import CHECKPOINT_MANAGER_KEY
    from pyspark_streamtest._spark.jvm import Jvm

    session_value = spark.conf.get(CHECKPOINT_MANAGER_KEY, None)
    with TopologyTestDriver(clicks_per_user, spark=spark) as driver:
        assert _checkpoint_manager(driver) == "FileSystemBasedCheckpointFileManager"
        assert spark.conf.get(CHECKPOINT_MANAGER_KEY, None) == session_value
        clicks = driver.create_input_topic("clicks")
        clicks.pipe_input({"user": "a", "url": "/"}, timestamp=at(1))
        driver.process_all_available()
        driver.restart()
        clicks.pipe_input({"user": "a", "url": "/x"}, timestamp=at(2))
        clicks.pipe_input({"user": "b", "url": "/"}, timestamp=at(30))  # closes [0s, 10s)
        driver.process_all_available()
        counts = driver.create_output_topic("counts").read_values_to_list()
        assert [(v["user"], v["count"]) for v in counts] == [("a", 2)]
    manager = "FileContextBasedCheckpointFileManager"
    classes = {"org.apache.spark.sql.execution.streaming.checkpointing." + manager,
               "org.apache.spark.sql.execution.streaming." + manager}
    jvm = Jvm(spark)
    existing = next(name for name in classes if jvm.class_exists(name))
    with TopologyTestDriver(clicks_per_user, spark=spark,
                            sql_conf={CHECKPOINT_MANAGER_KEY: existing}) as driver:
        assert _checkpoint_manager(driver) == manager


def test_two_drivers_of_one_topology_run_side_by_side(spark):
    """Spark refuses two active queries with the same name in one session; the driver
    names its queries uniquely, so two drivers of one topology can be open together."""
    with TopologyTestDriver(clicks_per_user, spark=spark) as first, \
            TopologyTestDriver(clicks_per_user, spark=spark) as second:
        for driver, user in ((first, "a"), (second, "b")):
            clicks = driver.create_input_topic("clicks")
            clicks.pipe_input({"user": user, "url": "/"}, timestamp=at(1))
            clicks.pipe_input({"user": user, "url": "/"}, timestamp=at(30))
            driver.process_all_available()
        first.restart()
        assert [v["user"] for v in first.create_output_topic("counts").read_values_to_list()] \
            == ["a"]
        assert [v["user"] for v in second.create_output_topic("counts").read_values_to_list()] \
            == ["b"]
