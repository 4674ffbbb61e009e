"""The orders example (examples/orders_pipeline/) run two ways on the same landed files,
update after update: by PipelineTestDriver, and by ``spark-pipelines run`` itself, which
is Spark alone (its own two JVMs, its own Connect server, the definitions registered by
the command, a Hive catalog with an embedded Derby metastore kept between its runs as a
production catalog is: the command's default in-memory one cannot run a second
update). Every table is compared after every update.

Each run of the command starts two JVMs, so this runs with the differential oracle
(``--streamtest-oracle``: CI's oracle step), as the other checks against Spark alone
do, and is skipped without it."""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any

import pytest

from pyspark_streamtest import Feature
from pyspark_streamtest.driver.oracle import ORACLE_ENV
from tests.pipeline_command import EXAMPLE, command_conf, command_pipeline, order, run_command

pytestmark = pytest.mark.streamtest_requires(Feature.DECLARATIVE_PIPELINES)


def _rows(frame: Any) -> list[tuple[Any, ...]]:
    return sorted((tuple(row) for row in frame.collect()), key=repr)


def test_every_table_after_every_update_is_the_command_s(topology_driver, spark, tmp_path):
    if os.environ.get(ORACLE_ENV) != "1":  # the plugin sets it for --streamtest-oracle
        pytest.skip("runs spark-pipelines twice (two JVMs each): with --streamtest-oracle")
    landing = tmp_path / "landing"
    landing.mkdir()
    folder = command_pipeline(tmp_path, landing)
    conf = command_conf(tmp_path)
    pipeline = topology_driver.from_pipeline(EXAMPLE, file_inputs={"orders": "orders.path"})
    updates = [
        [order("o1", "ann", 5, 1), order("o2", "bob", 7, 4), order("o1", "ann", 5, 3)],
        # moves the watermarks: the first window closes, o1 and o2 are forgotten
        [order("o3", "ann", 1, 31), order("o4", "bob", 2, 12)],
    ]
    landed_so_far = 0
    for number, lines in enumerate(updates, start=1):
        landed = Path(pipeline.land_lines("orders", lines))
        shutil.copy(landed, landing / landed.name)
        pipeline.run_update()
        run_command(folder, conf, tmp_path)
        names = pipeline.table_names()
        assert names == ["customer_totals", "orders_bronze", "orders_per_window",
                         "orders_silver"]
        landed_so_far += len(lines)
        assert len(_rows(pipeline.read_table("orders_bronze"))) == landed_so_far
        for name in names:
            ours = _rows(pipeline.read_table(name))
            # The command's tables, read from their files as any reader of the
            # warehouse does (a streaming table through its commit log).
            theirs = _rows(spark.read.parquet(str(tmp_path / "warehouse" / name)))
            assert (number, name, ours) == (number, name, theirs)
