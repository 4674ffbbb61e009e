"""How long a Python worker that Spark starts afresh takes to be ready to connect back:
a new interpreter against a warm worker (issue 36).

    python -m benchmarks.worker_start [--samples N]

Spark gives such a worker (the ``transformWithState`` planner, Python data sources,
UDTF analysis) a fixed 10 s from its start to its connect-back. Each sample starts, with
the environment Spark gives its workers, a module that imports what the
``transformWithState`` planner imports and prints the moment it would connect; the figure
is the time from the start to that moment. Samples alternate between a new interpreter
(``python -m``, as Spark starts it) and the warm worker launcher, so that both see the
same load. Starts no Spark. Run it beside a load (``.ci/load-test``) to see the margin
left under load: the table prints the 10 s limit over the slowest start.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time

from pyspark_streamtest._spark.runtime import warm_workers

PROBE = """\
import time
import pyspark.sql.streaming.transform_with_state_driver_worker  # what the planner imports
print(time.time())
"""
SPARK_LIMIT_S = 10.0


def _start_s(executable: str, folder: str, env: dict[str, str]) -> float:
    started = time.time()
    done = subprocess.run([executable, "-m", "streamtest_start_probe"], cwd=folder, env=env,
                          capture_output=True, text=True, timeout=120, check=True)
    return float(done.stdout.strip()) - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--samples", type=int, default=20, help="starts of each kind")
    samples = parser.parse_args().samples
    launcher = warm_workers.worker_python(sys.executable, "local[1]")
    if launcher == sys.executable or not warm_workers.wait_until_ready(launcher, 120):
        sys.exit("warm workers are off or unavailable here (Linux, STREAMTEST_WARM_WORKERS)")
    with tempfile.TemporaryDirectory() as folder:
        with open(os.path.join(folder, "streamtest_start_probe.py"), "w") as probe:
            probe.write(PROBE)
        env = {**os.environ, "PYTHONHASHSEED": "0", "PYTHONUNBUFFERED": "YES",
               "PYTHONPATH": os.pathsep.join([*warm_workers.spark_python_path(), folder])}
        cold: list[float] = []
        warm: list[float] = []
        loads: list[float] = []
        for _ in range(samples):
            cold.append(_start_s(sys.executable, folder, env))
            warm.append(_start_s(launcher, folder, env))
            loads.append(os.getloadavg()[0])
    print(f"{samples} starts of each kind, 1-minute load {min(loads):.1f}-{max(loads):.1f} "
          f"on {os.cpu_count()} cores")
    print(f"{'start':<18}{'median s':>10}{'slowest s':>11}{'10 s / slowest':>16}")
    for name, times in (("new interpreter", cold), ("warm worker", warm)):
        print(f"{name:<18}{statistics.median(times):>10.3f}{max(times):>11.3f}"
              f"{SPARK_LIMIT_S / max(times):>15.1f}x")


if __name__ == "__main__":
    main()
