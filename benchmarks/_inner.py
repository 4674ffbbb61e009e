"""``--only inner``: the inner loop's rows, from the pytest runs from the shell that
``benchmarks/inner_loop.py`` times (each in a process of its own)."""

from __future__ import annotations

from typing import Any


def measure_inner(args: Any, rows: list[dict[str, Any]]) -> None:
    """The inner loop from the shell (``benchmarks/inner_loop.py``): one test's pytest
    run with a warm JVM against a cold one and against its own micro-batches, and the
    suite with ``-n 2`` against serially, both with warm JVMs."""
    from benchmarks.inner_loop import measure

    found = measure(args.inner_runs, args.suite_tests)
    with_cpu, without_cpu = found["no_spark_with_cpu_s"], found["no_spark_without_cpu_s"]
    rows.append({"measure": "one test without Spark from the shell, with the plugin",
                 "seconds": found["no_spark_with_wall_s"],
                 "ratio": round(with_cpu / without_cpu, 2),
                 "of": "the same run with -p no:pyspark_streamtest (CPU time)",
                 "extra_cpu_seconds": round(with_cpu - without_cpu, 2),
                 "without_seconds": found["no_spark_without_wall_s"]})
    warm, cold = found["one_test_warm_s"], found["one_test_cold_s"]
    rows.append({"measure": "one windowed test from the shell, warm JVM", "seconds": warm,
                 "ratio": round(warm / cold, 2), "of": "the same run with a cold JVM",
                 "cold_seconds": cold})
    rows.append({"measure": "one windowed test from the shell, warm JVM, over its batches",
                 "ratio": found["one_test_warm_over_batches"],
                 "of": "its own micro-batches", "batches_seconds":
                 found["one_test_warm_batches_s"]})
    if args.suite_tests:
        serial, parallel = found["suite_serial_warm_s"], found["suite_n2_warm_s"]
        rows.append({"measure": f"payments job: {args.suite_tests}-test pytest suite, -n 2, "
                     "warm JVMs", "ratio": round(parallel / serial, 2),
                     "of": "the suite run serially, warm JVM", "serial_seconds": serial,
                     "parallel_seconds": parallel,
                     "cold_serial_seconds": found["suite_serial_cold_s"],
                     "cold_parallel_seconds": found["suite_n2_cold_s"],
                     "serial_busy_cores": found["suite_serial_warm_busy_cores"],
                     "parallel_busy_cores": found["suite_n2_warm_busy_cores"]})

