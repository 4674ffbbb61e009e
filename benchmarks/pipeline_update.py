"""How long one update of the orders example takes through PipelineTestDriver in a
warm session, against ``spark-pipelines run`` running the same update (issue 61's
target: at most 0.1x).

    python -m benchmarks.pipeline_update [--updates N]

Both read the same landed files; the command keeps its tables between runs in a Hive
catalog of its own (``tests/pipeline_command.py``). The driver's first update (the
session's first batches pay the JIT) is not counted; each later update lands one file
of orders, runs through the driver, then through the command, each timed whole (the
command as a process: its two JVMs, the graph's registration, the run). Prints each
pair and the medians' ratio; nothing is asserted about the time.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import tempfile
import time
from pathlib import Path

from tests.pipeline_command import EXAMPLE, command_conf, command_pipeline, order, run_command

from pyspark_streamtest import TopologyTestDriver, test_spark_session


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.pipeline_update")
    parser.add_argument("--updates", type=int, default=3,
                        help="timed updates after the first (default 3)")
    args = parser.parse_args(argv)
    root = Path(tempfile.mkdtemp(prefix="streamtest-bench-pipeline-"))
    try:
        landing = root / "landing"
        landing.mkdir()
        folder, conf = command_pipeline(root, landing), command_conf(root)
        spark = test_spark_session()
        with TopologyTestDriver.from_pipeline(EXAMPLE, spark=spark,
                                              file_inputs={"orders": "orders.path"}) as driver:
            ours: list[float] = []
            theirs: list[float] = []
            for number in range(args.updates + 1):
                lines = [order(f"o{number}-{i}", "ann", i, 10 * number + i) for i in range(3)]
                landed = Path(driver.land_lines("orders", lines))
                shutil.copy(landed, landing / landed.name)
                started = time.perf_counter()
                driver.run_update()
                driver_s = time.perf_counter() - started
                started = time.perf_counter()
                run_command(folder, conf, root)
                command_s = time.perf_counter() - started
                counted = number > 0
                if counted:
                    ours.append(driver_s)
                    theirs.append(command_s)
                print(f"update {number + 1}: driver {driver_s:.2f} s, spark-pipelines run "
                      f"{command_s:.2f} s{'' if counted else ' (warm-up, not counted)'}",
                      flush=True)
        ratio = statistics.median(ours) / statistics.median(theirs)
        print(f"median update: driver {statistics.median(ours):.2f} s, spark-pipelines run "
              f"{statistics.median(theirs):.2f} s: {ratio:.3f}x (target at most 0.1x)")
    finally:
        shutil.rmtree(root, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
