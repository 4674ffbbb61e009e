"""``--only state``: a step's latency with many keys in state, with Spark's default state
store and with RocksDB (``benchmarks/_scale.py`` adds the memory at the largest size)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pyspark.sql import SparkSession

from pyspark_streamtest import TopologyTestDriver

from ._pipelines import T0, key_counts
from ._timing import timed


def measure_state(spark: SparkSession, args: Any, record: Callable[..., None],
                  probe: Callable[[], None] | None = None) -> None:
    """Step latency with many keys in state, with Spark's default state store (HDFS-backed:
    it copies its whole map every batch) and with RocksDB plus changelog checkpointing;
    ``probe`` runs with ``--max-keys`` keys in state, before that size is recorded."""
    steps = args.steps
    sizes = sorted({1000, min(100_000, args.max_keys), args.max_keys})
    rocksdb = {"spark.sql.streaming.stateStore.providerClass":
               "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider",
               "spark.sql.streaming.stateStore.rocksdb.changelogCheckpointing.enabled": "true"}
    for store, conf in [("", {}), (" (RocksDB, changelog checkpointing)", rocksdb)]:
        by_size: dict[int, float] = {}
        for size in sizes:
            by_size[size] = keyed_step(spark, size, steps, conf,
                                       probe if size == args.max_keys else None)
            record(f"step with {size} keys in state{store}", by_size[size], by_size[sizes[0]],
                   f"{sizes[0]}-key step{store}")


def keyed_step(spark: SparkSession, size: int, steps: int, conf: dict[str, str],
               probe: Callable[[], None] | None = None) -> float:
    """Median step (10 updates) of a per-key count holding ``size`` keys in state;
    ``probe`` runs after the steps, the keys still in state."""
    with TopologyTestDriver(key_counts, spark=spark, sql_conf=conf) as driver:
        topic = driver.create_input_topic("events")
        for start in range(0, size, 200_000):
            end = min(size, start + 200_000)
            topic.pipe_value_list([(f"key{i}", i, T0) for i in range(start, end)])
            driver.process_all_available()
        counter = iter(range(10**9))
        seconds = timed(lambda: (
            topic.pipe_value_list([(f"key{next(counter) % size}", 1, T0) for _ in range(10)]),
            driver.process_all_available()), steps)
        if probe is not None:
            probe()
        return seconds
