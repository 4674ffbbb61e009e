"""The inner loop, from the shell: what one ``pytest`` run of one streaming test costs
with a cold JVM and with a warm one (``--streamtest-warm-jvm``), and a 20-test suite run
serially and with ``-n 2``, cold and warm. Each figure is the median wall time of whole
``pytest`` processes, as a developer waits for them.

``python -m benchmarks.inner_loop [--runs 5] [--suite-tests 20] [--json FILE]``

The warm runs use JVMs of their own (a folder of this run's), started by a first run that
is not counted, and ended at the end. The one test is a windowed count with a watermark
(the README's example); beside its wall time stands the time its own micro-batches took
(``--streamtest-durations``' "batches"), the part no harness can take away.

First, what the plugin costs a run that never uses Spark: a one-test project without
Spark, run with the plugin and with ``-p no:pyspark_streamtest`` in turn, wall time and
the CPU time of the ``pytest`` process (the plugin's promise: it costs nothing where
Spark is unused; what it imports and starts there is held by
``tests/unit/test_plugin_cost.py``).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import resource
import statistics
import subprocess
import sys
import tempfile
from typing import Any

from benchmarks import _app
from benchmarks._app import _SUITE

ONE_TEST = '''
from datetime import datetime, timedelta, timezone
from pyspark.sql import functions as F


def at(s):
    return datetime(2024, 1, 1, tzinfo=timezone.utc) + timedelta(seconds=s)


def clicks_per_user(t):
    clicks = t.input("clicks", schema="user STRING, url STRING, ts TIMESTAMP",
                     timestamp_column="ts")
    counts = (clicks.withWatermark("ts", "10 seconds")
                    .groupBy(F.window("ts", "10 seconds"), "user").count())
    t.output("counts", counts, output_mode="append")


def test_window_closes_when_watermark_passes(topology_driver):
    driver = topology_driver(clicks_per_user)
    clicks = driver.create_input_topic("clicks")
    counts = driver.create_output_topic("counts")
    clicks.pipe_input({"user": "a", "url": "/"}, timestamp=at(1))
    clicks.pipe_input({"user": "a", "url": "/x"}, timestamp=at(7))
    driver.process_all_available()
    assert counts.is_empty()
    clicks.pipe_input({"user": "b", "url": "/"}, timestamp=at(21))
    driver.process_all_available()
    assert counts.read_values_to_list() == [
        {"window": {"start": at(0), "end": at(10)}, "user": "a", "count": 2}]
'''


def pytest_seconds(folder: str, target: str, *options: str, warm: bool,
                   jvms: str) -> tuple[float, str]:
    """Wall seconds of one ``pytest`` process in ``folder``, and its output; warm JVMs
    on or off, their folders in ``jvms``."""
    return _app.pytest_seconds(folder, target, *options, env={
        "STREAMTEST_WARM_JVM": "on" if warm else "off", "STREAMTEST_WARM_JVM_DIR": jvms})


def _children_cpu_s() -> float:
    used = resource.getrusage(resource.RUSAGE_CHILDREN)
    return used.ru_utime + used.ru_stime


def plugin_cost(folder: str, runs: int) -> dict[str, float]:
    """Medians over ``runs`` alternated pairs of a one-test run without Spark, with the
    plugin and with ``-p no:pyspark_streamtest``: wall and CPU seconds of each."""
    plain = os.path.join(folder, "test_no_spark.py")
    with open(plain, "w") as out:
        out.write("def test_one():\n    assert 1 + 1 == 2\n")
    taken: dict[str, list[float]] = {key: [] for key in (
        "with_wall", "with_cpu", "without_wall", "without_cpu")}
    for _ in range(runs):
        for name, options in (("with", ()), ("without", ("-p", "no:pyspark_streamtest"))):
            cpu = _children_cpu_s()
            # -v undoes pytest_seconds' -q, so that the report header shows the plugin
            wall, output = _app.pytest_seconds(folder, plain, "-v", *options)
            taken[f"{name}_cpu"].append(_children_cpu_s() - cpu)
            taken[f"{name}_wall"].append(wall)
            if ("pyspark-streamtest 0" in output) != (name == "with"):
                raise RuntimeError(f"the plugin was {'not ' * (name == 'with')}loaded:\n"
                                   f"{output[-2000:]}")
    return {f"no_spark_{key}_s": round(statistics.median(values), 2)
            for key, values in taken.items()}


def _batches_seconds(output: str) -> float:
    """The "batches" column of ``--streamtest-durations``' line for all tests."""
    found = re.search(r"^\s*[\d.]+s\s+([\d.]+)s\s.*\ball \d+ tests?$", output, re.MULTILINE)
    if found is None:
        raise RuntimeError(f"no durations line in:\n{output[-2000:]}")
    return float(found[1])


def _cpu_ticks() -> tuple[int, int] | None:
    """The machine's busy and total CPU ticks so far (``/proc/stat``; None elsewhere)."""
    try:
        with open("/proc/stat") as stat:
            fields = [int(v) for v in stat.readline().split()[1:]]
    except (OSError, ValueError):
        return None
    idle = fields[3] + (fields[4] if len(fields) > 4 else 0)  # idle + iowait
    return sum(fields) - idle, sum(fields)


def busy_cores(before: tuple[int, int] | None, after: tuple[int, int] | None) -> float | None:
    """How many cores were busy on average between two :func:`_cpu_ticks` readings,
    the whole machine's (every process: the run's JVMs are not always its children)."""
    if before is None or after is None or after[1] <= before[1]:
        return None
    return (after[0] - before[0]) / (after[1] - before[1]) * (os.cpu_count() or 1)


def measure(runs: int, suite_tests: int) -> dict[str, Any]:
    results: dict[str, Any] = {"runs": runs, "suite_tests": suite_tests,
                               "machine": f"{os.cpu_count()} cores", "load": os.getloadavg()[0]}
    with tempfile.TemporaryDirectory(prefix="bench-inner-") as folder:
        jvms = os.path.join(folder, "jvms")
        one = os.path.join(folder, "test_one.py")
        with open(one, "w") as out:
            out.write(ONE_TEST)
        suite = os.path.join(folder, "test_suite.py")
        with open(suite, "w") as out:
            out.write(_SUITE.format(tests=suite_tests))
        cost = plugin_cost(folder, runs)
        results.update(cost)
        print(f"one test without Spark: {cost['no_spark_with_wall_s']:.2f} s wall, "
              f"{cost['no_spark_with_cpu_s']:.2f} s CPU with the plugin; "
              f"{cost['no_spark_without_wall_s']:.2f} s wall, "
              f"{cost['no_spark_without_cpu_s']:.2f} s CPU with -p no:pyspark_streamtest "
              f"(medians of {runs}, alternated)", flush=True)
        try:
            for warm in (False, True):
                name = "warm" if warm else "cold"
                if warm:
                    pytest_seconds(folder, one, warm=True, jvms=jvms)  # starts the JVM
                walls, batches = [], []
                for _ in range(runs):
                    seconds, output = pytest_seconds(
                        folder, one, "--streamtest-durations", "0", warm=warm, jvms=jvms)
                    walls.append(seconds)
                    batches.append(_batches_seconds(output))
                results[f"one_test_{name}_s"] = round(statistics.median(walls), 2)
                results[f"one_test_{name}_batches_s"] = round(statistics.median(batches), 2)
                print(f"one windowed test, {name}: {statistics.median(walls):.2f} s wall "
                      f"(median of {runs}); its micro-batches {statistics.median(batches):.2f} s",
                      flush=True)
            if suite_tests:
                for workers in (0, 2):
                    options = ("-n", str(workers)) if workers else ()
                    label = f"-n {workers}" if workers else "serial"
                    for warm in (False, True):
                        name = "warm" if warm else "cold"
                        if warm:
                            pytest_seconds(folder, suite, *options, warm=True, jvms=jvms)
                        ticks = _cpu_ticks()
                        seconds, _ = pytest_seconds(folder, suite, *options, warm=warm,
                                                    jvms=jvms)
                        busy = busy_cores(ticks, _cpu_ticks())
                        key = f"suite_{'n2' if workers else 'serial'}_{name}"
                        results[f"{key}_s"] = round(seconds, 1)
                        results[f"{key}_busy_cores"] = None if busy is None else round(busy, 2)
                        print(f"{suite_tests}-test suite, {label}, {name}: {seconds:.1f} s"
                              + ("" if busy is None else
                                 f", {busy:.2f} of {os.cpu_count()} cores busy"), flush=True)
        finally:
            subprocess.run([sys.executable, "-m", "pyspark_streamtest.gates.cli", "warm-jvm",
                            "stop", "--in-use", "--all-projects"],
                           env={**os.environ, "STREAMTEST_WARM_JVM_DIR": jvms},
                           capture_output=True, timeout=300, check=False)
    one_cold, one_warm = results["one_test_cold_s"], results["one_test_warm_s"]
    results["one_test_warm_over_cold"] = round(one_warm / one_cold, 2)
    results["one_test_warm_over_batches"] = round(
        one_warm / results["one_test_warm_batches_s"], 2)
    print(f"one test: warm {one_warm:.2f} s = {one_warm / one_cold:.2f}x cold "
          f"({one_cold:.2f} s), {results['one_test_warm_over_batches']:.2f}x its own "
          f"micro-batches; targets: warm <= 2 s, <= 1.5x its micro-batches")
    if suite_tests:
        for name in ("cold", "warm"):
            ratio = results[f"suite_n2_{name}_s"] / results[f"suite_serial_{name}_s"]
            results[f"suite_n2_over_serial_{name}"] = round(ratio, 2)
            # How busy the cores were says whether -n 2 had room: a serial run that keeps
            # both cores busy leaves a second worker little to gain. (No bound follows
            # from it: the two workers' JVMs run with other options than the serial
            # run's, C1 only, see SHARED_CORES_JVM_OPTIONS, so they do other work.)
            print(f"suite -n 2 over serial, {name}: {ratio:.2f}x (cores busy: serial "
                  f"{results[f'suite_serial_{name}_busy_cores']}, -n 2 "
                  f"{results[f'suite_n2_{name}_busy_cores']})")
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=5, help="runs of the one test per figure")
    parser.add_argument("--suite-tests", type=int, default=20,
                        help="tests of the suite (0: no suite figures)")
    parser.add_argument("--json", help="also write the figures to this file")
    args = parser.parse_args()
    results = measure(args.runs, args.suite_tests)
    if args.json:
        with open(args.json, "w") as out:
            json.dump(results, out, indent=2)


if __name__ == "__main__":
    main()
