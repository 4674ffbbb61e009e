"""The ``pyspark-streamtest`` command.

``--version``
    Print ``pyspark-streamtest`` and the package's version (``pyspark_streamtest.__version__``).
``demo``
    Run the example topology on the canned clickstream and print the batch timeline
    (``--picture FILE.svg`` also draws it).
``run SCENARIO... [--topology mod:func] [--junitxml FILE] [--timeline-dir DIR]``
    Run scenario files (:mod:`pyspark_streamtest.gates.scenario`) without pytest; print
    PASS/FAIL per file with the difference and the timeline of each failure (ERROR and
    every mistake of an invalid file). Exit status 0 when every scenario passed, 1 when
    any failed or a file is invalid, 2 for a usage error. ``--junitxml`` is this
    command's own report; where pytest runs the files, pytest's ``--junitxml`` is.
``scenario-schema``
    Print the JSON Schema (draft 2020-12) of scenario files, for editors; the package
    ships the same text as ``pyspark_streamtest/gates/scenario.schema.json``.
``check-determinism SCENARIO... [--runs N] [--cpu-load K] [--topology mod:func]``
    Run each scenario N times (default 3), with K busy processes competing for the CPU
    meanwhile, and compare the batch histories (batches, watermarks, records in and
    out, state rows, outcome). Exit status 1 with the first differing batch if any run
    differs, or if a scenario fails its expectations; 0 otherwise.
``cluster start [--workers N] [--cores C] [--memory M] [--port P]`` / ``status`` / ``stop``
    A Spark standalone cluster on 127.0.0.1 (:mod:`pyspark_streamtest.cluster`): ``start``
    prints the master's URL for ``--streamtest-master`` once every worker has
    registered; ``stop`` stops exactly the processes ``start`` started.
``mutate [PYTEST_ARG...]``
    Run pytest with ``--streamtest-mutate`` and the arguments that follow (test paths,
    ``-n 2``, ``--streamtest-mutate-min-score 80``...): the tests, then each mutant of
    the streaming decisions they build (see ``docs/how-to/mutation-testing.md``). Exit
    status: pytest's.
``warm-jvm list`` / ``stop [--in-use]`` (``--all-projects``)
    The warm JVMs pytest runs of this folder's project left for the next runs
    (``--streamtest-warm-jvm``): list them, or end those no run is using (``--in-use``:
    those too); ``--all-projects``: every project's.
"""

from __future__ import annotations

import argparse
import importlib.metadata
import os
import sys
from collections.abc import Sequence
from typing import Any

from ..core.files import safe_file_name
from ..errors import hide_our_frames

__tracebackhide__ = hide_our_frames

__all__ = ["main"]


def _parser() -> argparse.ArgumentParser:
    # The installed distribution's version: what pyproject reads from the package's
    # __version__ (imported from here, the face would be an import running back up).
    version = importlib.metadata.version("pyspark-streamtest")
    parser = argparse.ArgumentParser(
        prog="pyspark-streamtest",
        description="Deterministic tests for PySpark Structured Streaming.",
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {version}")
    commands = parser.add_subparsers(dest="command", required=True)
    demo = commands.add_parser(
        "demo",
        help="run the example topology on the canned clickstream and print the batch timeline",
    )
    demo.add_argument("--picture", metavar="FILE",
                      help="also draw the timeline to FILE (.svg, or .png with matplotlib)")
    run = commands.add_parser("run", help="run scenario files (exit 0 if all pass, else 1)")
    run.add_argument("scenarios", nargs="+", metavar="SCENARIO")
    run.add_argument("--topology", metavar="MODULE:FUNCTION",
                     help="the topology function (overrides the files' 'topology')")
    run.add_argument("--junitxml", metavar="FILE",
                     help="write a JUnit XML report to FILE (under pytest, use pytest's "
                     "own --junitxml instead)")
    run.add_argument("--timeline-dir", metavar="DIR",
                     help="write an SVG timeline picture of each failing scenario to DIR")
    commands.add_parser(
        "scenario-schema", help="print the JSON Schema of scenario files (for editors)")
    gate = commands.add_parser(
        "check-determinism",
        help="run scenarios several times and fail if any run differs (exit 0/1)")
    gate.add_argument("scenarios", nargs="+", metavar="SCENARIO")
    gate.add_argument("--runs", type=int, default=3, help="runs per scenario (default 3)")
    gate.add_argument("--cpu-load", type=int, default=0, metavar="K",
                      help="busy processes competing for the CPU meanwhile (default 0)")
    gate.add_argument("--topology", metavar="MODULE:FUNCTION",
                      help="the topology function (overrides the files' 'topology')")
    mutate = commands.add_parser(
        "mutate", help="run pytest with --streamtest-mutate and the arguments that follow")
    mutate.add_argument("pytest_args", nargs="*", metavar="PYTEST_ARG",
                        help="pytest's arguments: test paths and options")
    _cluster_parser(commands)
    warm = commands.add_parser(
        "warm-jvm", help="list or end the warm Spark JVMs pytest runs left for the next runs")
    warm_verbs = warm.add_subparsers(dest="warm_command", required=True)
    warm_list = warm_verbs.add_parser(
        "list", help="list this project's: process ids, in use or waiting")
    warm_stop = warm_verbs.add_parser("stop", help="end this project's no run is using")
    warm_stop.add_argument("--in-use", action="store_true",
                           help="end those in use too (their runs lose their JVM)")
    for verb in (warm_list, warm_stop):
        verb.add_argument("--all-projects", action="store_true",
                          help="every project's, not only this folder's project's")
    return parser


def _warm_jvm(args: Any) -> int:
    from .._spark.runtime import warm_jvm, warm_jvm_admin

    everywhere = args.all_projects
    scope = "" if everywhere else f" of project {warm_jvm.current_project()}"
    if args.warm_command == "list":
        found = warm_jvm_admin.running(all_projects=everywhere)
        for jvm in found:
            print(f"JVM pid {jvm.jvm_pid} ({'in use' if jvm.in_use else 'waiting'}), "
                  f"keeper pid {jvm.keeper_pid}, {jvm.folder}"
                  + (f", project {jvm.project or 'unknown'}" if everywhere else ""))
        if not found:
            print(f"no warm JVM{scope} is running")
        return 0
    ended, left = warm_jvm_admin.stop(in_use=args.in_use, all_projects=everywhere)
    print(f"ended {ended} warm JVM{'s' if ended != 1 else ''}{scope}"
          + (f"; {left} in use left running (--in-use ends them too)" if left else ""))
    return 0


def _cluster_parser(commands: Any) -> None:
    cluster = commands.add_parser(
        "cluster", help="start, show or stop a Spark standalone cluster on 127.0.0.1")
    verbs = cluster.add_subparsers(dest="cluster_command", required=True)
    start = verbs.add_parser("start", help="start a master and workers; print the master URL")
    start.add_argument("--workers", type=int, default=2, help="workers (default 2)")
    start.add_argument("--cores", type=int, default=2, help="cores per worker (default 2)")
    start.add_argument("--memory", default="2g", help="memory per worker (default 2g)")
    start.add_argument("--port", type=int, default=None,
                       help="the master's port (default: a free one)")
    start.add_argument("--timeout", type=float, default=120.0,
                       help="seconds to wait for every worker to register (default 120)")
    for verb in (start, verbs.add_parser("status", help="show the running cluster"),
                 verbs.add_parser("stop", help="stop the cluster 'start' started")):
        verb.add_argument("--state-dir", default=None,
                          help="the cluster's state folder (default: $STREAMTEST_CLUSTER_DIR, "
                          "else ~/.local/state/pyspark-streamtest/cluster)")


def _cluster(args: Any) -> int:
    from ..cluster import cluster_status, start_cluster, stop_cluster
    from ..errors import ClusterError

    if args.cluster_command == "start":
        try:
            cluster = start_cluster(workers=args.workers, cores=args.cores,
                                    memory=args.memory, port=args.port,
                                    state_dir=args.state_dir, timeout=args.timeout)
        except ClusterError as error:
            print(f"error: {error}", file=sys.stderr)
            return 1
        print(cluster.url)
        print(f"{cluster.workers} workers x {cluster.cores} cores, {cluster.memory} each; "
              f"web UI {cluster.web_ui}; run the tests with --streamtest-master {cluster.url}",
              file=sys.stderr)
        return 0
    if args.cluster_command == "status":
        running = cluster_status(args.state_dir)
        if running is None:
            print("no cluster is running")
            return 1
        print(f"{running.url} running: master pid {running.master_pid}, workers "
              f"{', '.join(map(str, running.worker_pids))}; web UI {running.web_ui}")
        return 0
    stopped = stop_cluster(args.state_dir)
    print("no cluster was running" if stopped is None else f"stopped {stopped.url}")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    arguments = list(sys.argv[1:] if argv is None else argv)
    if arguments[:1] == ["mutate"] and not {"-h", "--help"} & set(arguments[1:2]):
        # pytest's options pass through as they are (argparse would take them as ours)
        import pytest

        return int(pytest.main(["--streamtest-mutate", *arguments[1:]]))
    parser = _parser()
    args = parser.parse_args(arguments)
    if args.command == "demo":
        from ._demo import run_demo

        print(run_demo(picture=args.picture))
        return 0
    if args.command == "run":
        return _run(args)
    if args.command == "scenario-schema":
        from ._scenario_schema import scenario_schema_text

        sys.stdout.write(scenario_schema_text())
        return 0
    if args.command == "cluster":
        return _cluster(args)
    if args.command == "warm-jvm":
        return _warm_jvm(args)
    if args.runs < 2:
        parser.error("--runs must be at least 2")
    if args.cpu_load < 0:
        parser.error("--cpu-load must be 0 or more")
    return _check_determinism(args)


def _run(args: Any) -> int:
    from ..reporting.picture import write_timeline_picture
    from ..reporting.timeline import format_timeline
    from .scenario import (
        ScenarioError,
        ScenarioResult,
        invalid_result,
        junit_xml,
        load_scenario,
        run_scenario,
    )

    results: list[ScenarioResult] = []
    properties: dict[str, dict[str, str]] = {}
    invalid = 0
    for path in args.scenarios:
        try:
            scenario = load_scenario(path)
            result = run_scenario(scenario, topology=args.topology)
        except ScenarioError as error:
            invalid += 1
            print(f"ERROR {path}\n{_indent(str(error))}")
            results.append(invalid_result(path, error))
            continue
        results.append(result)
        if result.passed:
            print(f"PASS {path} ({result.scenario.name}, {len(result.batches)} batches, "
                  f"{result.seconds:.2f} s)")
            continue
        print(f"FAIL {path} ({result.scenario.name})")
        print(_indent(result.message))
        print(_indent("batch timeline:\n" + format_timeline(result.batches, show_rows=3)))
        if args.timeline_dir:
            name = safe_file_name(os.path.basename(path)) + ".svg"
            picture = write_timeline_picture(
                result.batches, os.path.join(args.timeline_dir, name),
                title=f"{result.scenario.name} (failed)")
            properties[path] = {"streamtest_timeline": picture}
            print(f"  timeline picture: {picture}")
    if args.junitxml:
        folder = os.path.dirname(args.junitxml)
        if folder:
            os.makedirs(folder, exist_ok=True)
        with open(args.junitxml, "w", encoding="utf-8") as out:
            out.write(junit_xml(results, properties=properties))
    failed = sum(not r.passed for r in results)
    print(f"{len(results) - failed} passed, {failed} failed" +
          (f" ({invalid} invalid)" if invalid else ""))
    return 1 if failed else 0


def _check_determinism(args: Any) -> int:
    from ..reporting.golden import describe_difference
    from .load import busy_processes
    from .scenario import ScenarioError, load_scenario, run_scenario, scenario_history

    status = 0
    with busy_processes(args.cpu_load):
        for path in args.scenarios:
            try:
                scenario = load_scenario(path)
                histories = []
                outcomes = []
                for _ in range(args.runs):
                    result = run_scenario(scenario, topology=args.topology)
                    histories.append(scenario_history(result))
                    outcomes.append(result)
            except ScenarioError as error:
                print(f"ERROR {path}\n{_indent(str(error))}")
                status = 1
                continue
            differing = next((i for i, h in enumerate(histories) if h != histories[0]), None)
            if differing is not None:
                status = 1
                print(f"NOT DETERMINISTIC {path}: run {differing + 1} of {args.runs} differs "
                      f"from run 1 (cpu load {args.cpu_load})")
                print(_indent(describe_difference(histories[0], histories[differing])))
            elif not outcomes[0].passed:
                status = 1
                print(f"DETERMINISTIC BUT FAILING {path}: {args.runs} identical runs, each "
                      f"failing:\n{_indent(outcomes[0].message)}")
            else:
                print(f"DETERMINISTIC {path}: {args.runs} identical runs "
                      f"({len(outcomes[0].batches)} batches each, cpu load {args.cpu_load})")
    return status


def _indent(text: str) -> str:
    return "\n".join("  " + line for line in text.splitlines())


if __name__ == "__main__":
    sys.exit(main())
