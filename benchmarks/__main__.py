"""The driver's costs as ratios to Spark's floor, all measured in one process and run.

    python -m benchmarks [--steps N] [--long-steps N] [--max-keys N] [--bulk-rows N]
                         [--property-examples N]
                         [--only all|steps|app|state|memory|property|inner]
                         [--suite-tests N] [--inner-runs N] [--master URL] [--json FILE]
    python -m benchmarks --only scale [--scale-records N] [--max-keys N] [--master URL]
                         [--json FILE]
    python -m benchmarks --only connect [--steps N] [--json FILE]   (steps over Spark
                         Connect beside classic mode: benchmarks/connect_steps.py)
    python -m benchmarks --profile stateless|windowed|join|grouped-state [--steps N]
    python -m benchmarks --compare BASE.json [--against NEW.json] [--chart FILE.svg]
    python -m benchmarks --chart FILE.svg [--json FILE]

Floors, measured first on the same warm session:

* trivial job: ``spark.range(1).count()``, the cheapest thing Spark can do;
* createDataFrame: ``spark.createDataFrame(rows).count()`` of the rows the bulk pipe moves.

And beside each step row, the same micro-batches run by Spark alone (``...: Spark alone``
rows, ``benchmarks/_bare.py``): the same plan and sources with Spark's own JVM clock and
memory sink; the step row's ``spark_alone`` is the driver's step over it. The two are
measured in turn, a driver step then a Spark-alone step, so that their ratio does not
move with the machine's speed over the run.

Every figure is a median over repeated steps after a warm-up. "Public API" rows drive the
same pipeline the usual way: a JSON file source fed by writing files, a memory sink, and
``processAllAvailable()``. Results are printed as a table and written as JSON, followed
by one line per performance target: met or MISSED.

``--compare`` and ``--chart`` measure nothing and start no Spark session: they read the
results file (``--against``, else ``--json``) and print its comparison with BASE.json
(one line per measure: both values, the change, better or worse, the target) or write a
bar chart of its targeted rows as SVG.
"""

from __future__ import annotations

import argparse
from typing import Any

from pyspark_streamtest import test_spark_session

from ._app import measure_app
from ._backfill import measure_backfill
from ._inner import measure_inner
from ._memory import measure_memory
from ._pipelines import PROFILED
from ._property import measure_property
from ._report import chart, compare, load_results, verdicts_text
from ._results import write_results
from ._scale import add_scale_arguments, measure_scale
from ._state import measure_state
from ._steps import measure_steps, profile
from ._timing import timed, warm_up


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--steps", type=int, default=20, help="measured steps per figure")
    parser.add_argument("--long-steps", type=int, default=1000,
                        help="steps of the memory-growth run (the target is stated for 10000)")
    parser.add_argument("--max-keys", type=int, default=1_000_000,
                        help="largest state size measured (1k, 100k and this)")
    parser.add_argument("--bulk-rows", type=int, default=100_000)
    parser.add_argument("--json", default="benchmarks/results.json")
    parser.add_argument("--property-examples", type=int, default=100,
                        help="examples of the property-test figure (the target is for 100)")
    parser.add_argument("--only", choices=("all", "steps", "app", "property", "memory", "state",
                                           "inner", "scale", "connect"),
                        default="all", help="only the floor and that part (scale and connect "
                        "are no part of all: see benchmarks/_scale.py and "
                        "benchmarks/connect_steps.py)")
    add_scale_arguments(parser)
    parser.add_argument("--warmup-seconds", type=float, default=60,
                        help="JIT warm-up before anything is measured (floor jobs, stateless "
                        "and windowed steps); a cold JVM makes early figures slower")
    parser.add_argument("--suite-tests", type=int, default=20,
                        help="tests of the payments suite run serially and with -n 2 (the "
                        "target is stated for 20; 0 skips the two pytest runs)")
    parser.add_argument("--inner-runs", type=int, default=5,
                        help="pytest runs of one test per inner-loop figure, cold and warm "
                        "JVM (benchmarks/inner_loop.py; its suite has --suite-tests tests)")
    parser.add_argument("--profile", choices=sorted(PROFILED),
                        help="measure only where one step of this pipeline spends its time")
    parser.add_argument("--compare", metavar="BASE.json",
                        help="measure nothing: compare the results file with this earlier run")
    parser.add_argument("--against", metavar="NEW.json",
                        help="the results file --compare and --chart read (default: --json)")
    parser.add_argument("--chart", metavar="FILE.svg",
                        help="measure nothing: write the results file's targets as SVG bars")
    args = parser.parse_args()
    if args.compare or args.chart:
        report(args)
        return
    if args.against:
        parser.error("--against needs --compare or --chart")
    steps = args.steps

    spark = test_spark_session(master=args.master)
    warm_up(spark, args.warmup_seconds)
    if args.profile:
        profile(spark, args.profile, steps)
        return
    floor = timed(lambda: spark.range(1).count(), steps)
    rows: list[dict[str, Any]] = []

    def record(name: str, seconds: float, base: float, base_name: str, **extra: Any) -> None:
        rows.append({"measure": name, "ms": round(seconds * 1000, 2), "ratio": round(
            seconds / base, 2), "of": base_name, **extra})
        print(f"  {name:<66} {seconds * 1000:>9.1f} ms {seconds / base:>7.2f}x {base_name}",
              flush=True)

    print(f"floor: spark.range(1).count() = {floor * 1000:.1f} ms (median of {steps})")
    if args.only in ("all", "steps"):
        measure_steps(spark, args, floor, record)
    if args.only in ("all", "inner"):
        measure_inner(args, rows)
    if args.only in ("all", "app"):
        measure_app(spark, steps, timed, record, suite_tests=args.suite_tests)
        measure_backfill(spark, steps, record)
    if args.only in ("all", "state"):
        measure_state(spark, args, record)
    if args.only in ("all", "memory"):
        measure_memory(spark, args, floor, record)
    if args.only in ("all", "property"):
        measure_property(spark, args, floor, rows)
    if args.only == "scale":
        measure_scale(spark, args, record)
    if args.only == "connect":  # each mode in a process of its own (see connect_steps.py)
        from benchmarks import connect_steps

        connect_rows = connect_steps.measure(steps, max(3, steps // 2))
        connect_steps.print_rows(connect_rows)
        rows.extend(connect_rows)
    floor_end = timed(lambda: spark.range(1).count(), steps)
    print(f"floor at the end: {floor_end * 1000:.1f} ms ({floor_end / floor:.2f}x the first)")
    print(verdicts_text(write_results(args, spark, floor, rows, floor_end)))


def report(args: Any) -> None:
    """``--compare`` and ``--chart``: report on the results file, without Spark."""
    results = load_results(args.against or args.json)
    if args.compare:
        print(compare(load_results(args.compare), results))
    if args.chart:
        with open(args.chart, "w") as out:
            out.write(chart(results))
        print(f"chart of {args.against or args.json} written to {args.chart}")


if __name__ == "__main__":
    main()
