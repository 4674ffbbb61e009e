"""``--streamtest-mutate``: mutation testing of the streaming decisions the tests build.

The run has two phases in each process. First the selected tests run as always, while
a :class:`~pyspark_streamtest.mutate.mutator.Mutator` records the mutants each
test's topologies offer. Then, if every test passed, each mutant (all, or a sample of
``--streamtest-mutate-max`` from ``--streamtest-mutate-seed``) runs the tests that
built its topology again, in this process, on the same Spark session; the first
failing test kills it. Under pytest-xdist each worker runs the mutants its own tests
reached, with its own tests (the workers first agree on the sample through files, so it
is the same whatever the split); the controller merges, reports and gates.

Reports: a section at the end of the terminal report, ``--streamtest-mutate-json
PATH`` and ``--streamtest-mutate-junit PATH``. ``--streamtest-mutate-min-score X``
fails the run when the score (killed / (killed + survived), in percent) is below X.
"""

from __future__ import annotations

import json
import os
import random
import tempfile
import time
from collections import Counter
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any

import pytest

from ..errors import hide_our_frames
from ._options import setting

__tracebackhide__ = hide_our_frames

_KEY = "streamtest_mutation"
_AGREE_SECONDS = 3600.0  # the longest a worker waits for the others' first phase


def register_mutation(config: pytest.Config) -> None:
    """Register the mutation plugin objects, if ``--streamtest-mutate`` was given."""
    if not setting(config, "streamtest_mutate"):
        return
    if setting(config, "streamtest_oracle"):
        raise pytest.UsageError(
            "--streamtest-mutate and --streamtest-oracle cannot run together: a mutant "
            "is compared with its tests' expectations, not with Spark alone; run them "
            "as two runs")
    worker = hasattr(config, "workerinput")
    controller = getattr(config.option, "dist", "no") != "no" and not worker
    min_score = setting(config, "streamtest_mutate_min_score")
    plugin = Mutation(
        config, runs=not controller, gates=not worker,
        min_score=None if min_score in (None, "") else float(min_score))
    config.pluginmanager.register(plugin, "streamtest-mutate")
    if controller and config.pluginmanager.hasplugin("xdist"):
        config.pluginmanager.register(_Workers(plugin.folder), "streamtest-mutate-xdist")


class _Workers:
    """Tells each xdist worker the folder where the workers agree on the sample, and
    writes a worker's part there for it when it dies: the others wait for every
    worker's part, and a worker that crashed writes none (its tests did not pass, so
    no mutant runs, and nobody waits out the bound)."""

    def __init__(self, folder: str) -> None:
        self._folder = folder

    @pytest.hookimpl(optionalhook=True)
    def pytest_configure_node(self, node: Any) -> None:
        node.workerinput["streamtest_mutate_dir"] = self._folder

    @pytest.hookimpl(optionalhook=True)
    def pytest_testnodedown(self, node: Any, error: Any) -> None:
        if error is None:
            return
        worker = node.gateway.id
        _write_part(Path(self._folder), worker,
                    {"found": {}, "failed": [f"xdist worker {worker} crashed: {error}"]})


def _write_part(folder: Path, worker: str, part: dict[str, Any]) -> None:
    """Write a worker's part of the agreement whole (others poll for it), unless it is
    there already (a worker that crashed in its mutation phase had written its own)."""
    mine = folder / f"{worker}.json"
    if mine.exists():
        return
    partial = mine.with_suffix(".part")
    partial.write_text(json.dumps(part))
    partial.replace(mine)


class Mutation:
    """The plugin object. ``runs``: this process runs tests (not an xdist controller);
    ``gates``: it sees every result (not an xdist worker)."""

    def __init__(self, config: pytest.Config, *, runs: bool, gates: bool,
                 min_score: float | None) -> None:
        from ..core.build_hook import hooked
        from ..mutate.mutator import Mutator

        self._config = config
        self._runs = runs
        self._gates = gates
        self._min_score = min_score
        self._max = setting(config, "streamtest_mutate_max")
        self._seed = int(setting(config, "streamtest_mutate_seed") or 0)
        self.mutator = Mutator(str(config.rootpath))
        self._hook = ExitStack()
        if runs:
            self._hook.enter_context(hooked(self.mutator))
        # the folder where xdist workers agree on the sample: the controller's to make
        self.folder = tempfile.mkdtemp(prefix="streamtest-mutate-") if gates and not runs else ""
        self._reached: dict[str, set[str]] = {}  # test id -> ids of the mutants it reached
        self._builds: dict[str, list[Any]] = {}  # test id -> its builds that left queries out
        self._items: dict[str, pytest.Item] = {}
        self._failed: list[str] = []
        self._mutating = False
        self._error: BaseException | None = None
        self._test_seconds = 0.0
        self._results: list[Any] = []
        self._facts: dict[str, Any] = {"found": 0, "sampled": None, "test_seconds": 0.0,
                                       "found_by_topology": {},
                                       "phase_seconds": 0.0, "not_green": []}

    # --- the first phase: the tests as they are -----------------------------------------
    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_protocol(self, item: pytest.Item, nextitem: Any) -> Any:
        if not self._runs or self._mutating:
            return (yield)
        self.mutator.seen, self.mutator.builds = set(), []
        try:
            return (yield)
        finally:
            self._reached[item.nodeid] = set(self.mutator.seen)
            self._builds[item.nodeid] = self.mutator.builds
            self._items[item.nodeid] = item

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_makereport(self, item: pytest.Item, call: Any) -> Any:
        report = yield
        if not self._runs:
            return report
        if self._mutating:
            self._test_seconds += report.duration
            if report.failed and self._error is None:
                self._error = call.excinfo.value if call.excinfo is not None else None
        elif report.failed and item.nodeid not in self._failed:
            self._failed.append(item.nodeid)
        return report

    # --- the second phase: the mutants ----------------------------------------------------
    @pytest.hookimpl(wrapper=True)
    def pytest_runtestloop(self, session: pytest.Session) -> Any:
        outcome = yield
        if self._runs and not session.shouldstop and not session.shouldfail:
            started = time.monotonic()
            self._mutate(session)
            self._facts["phase_seconds"] = time.monotonic() - started
            self._facts["test_seconds"] = self._test_seconds
            if hasattr(self._config, "workeroutput"):
                self._config.workeroutput[_KEY] = json.dumps(
                    {"results": [r.to_json() for r in self._results], "facts": self._facts})
        return outcome

    def _mutate(self, session: pytest.Session) -> None:
        from ..mutate.results import merge

        passed = {test: ids for test, ids in self._reached.items() if test not in self._failed}
        found = {i: self.mutator.found[i].site.topology
                 for ids in passed.values() for i in ids}
        everyone = self._agree(found, self._failed)
        self._facts["found"] = len(everyone["found"])
        self._facts["found_by_topology"] = dict(Counter(everyone["found"].values()))
        if everyone["failed"]:
            self._facts["not_green"] = everyone["failed"]
            return
        chosen = sorted(everyone["found"])
        if self._max is not None and len(chosen) > int(self._max):
            chosen = sorted(random.Random(self._seed).sample(chosen, int(self._max)))
            self._facts["sampled"] = len(chosen)
        mine = sorted(self.mutator.found[i] for i in chosen if i in found)
        results = []
        reporter = self._config.pluginmanager.get_plugin("terminalreporter")
        if reporter is not None and not hasattr(self._config, "workerinput"):
            reporter.section(f"streamtest mutation: {len(mine)} mutants", sep="-")
        killers: dict[tuple[str, int], str] = {}  # a line's site -> the test that killed
        for number, mutant in enumerate(mine, start=1):
            tests = [self._items[t] for t, ids in passed.items() if mutant.id in ids]
            # The test that killed a mutant of the same line goes first: it most likely
            # kills this one too, and a killed mutant runs no test after its killer
            # (which test kills it does not change its fate).
            line = (mutant.site.file, mutant.site.line)
            tests.sort(key=lambda item: item.nodeid != killers.get(line))
            results.append(self._run(mutant, tests))
            if results[-1].by is not None:
                killers[line] = results[-1].by
            if reporter is not None and not hasattr(self._config, "workerinput"):
                reporter.write_line(  # one line per mutant: a long phase shows its way
                    f"{number}/{len(mine)} {results[-1].status:<9} {mutant.site.where}  "
                    f"{mutant.description}")
            if session.shouldstop:
                break
        self._results = merge(results)

    def _agree(self, found: dict[str, str], failed: list[str]) -> dict[str, Any]:
        """Every process's mutants and failed tests: its own, or under xdist all the
        workers' (each writes its own to the shared folder and waits, bounded, for
        the others')."""
        workerinput = getattr(self._config, "workerinput", None)
        if workerinput is None or "streamtest_mutate_dir" not in workerinput:
            return {"found": found, "failed": failed}
        folder = Path(workerinput["streamtest_mutate_dir"])
        _write_part(folder, workerinput["workerid"], {"found": found, "failed": failed})
        count = int(workerinput["workercount"])
        deadline = time.monotonic() + _AGREE_SECONDS
        while len(list(folder.glob("*.json"))) < count:
            if time.monotonic() > deadline:
                raise RuntimeError(
                    f"--streamtest-mutate: the other xdist workers did not finish their "
                    f"tests within {_AGREE_SECONDS:.0f} s; no mutant was run")
            time.sleep(0.1)
        everyone: dict[str, Any] = {"found": {}, "failed": []}
        for path in sorted(folder.glob("*.json")):
            data = json.loads(path.read_text())
            everyone["found"].update(data["found"])
            everyone["failed"] += data["failed"]
        return everyone

    def _run(self, mutant: Any, tests: list[pytest.Item]) -> Any:
        """Run ``tests`` with ``mutant`` made, to the first that fails."""
        from _pytest.runner import runtestprotocol

        from ..mutate.mutator import UNSEEN_IN_PLAN
        from ..mutate.results import MutantResult, classify

        result = MutantResult(mutant, "survived")
        before = self._test_seconds
        self.mutator.active, self.mutator.applied = mutant, 0
        self._mutating = True
        # the queries left out where the mutant was made, while no query that ran changed
        left_out: set[str] | None = set()
        try:
            for item in tests:
                self._error = None
                self.mutator.builds, applied = [], self.mutator.applied
                with _without_shrinking(item):
                    reports = runtestprotocol(item, log=False, nextitem=None)
                result.tests.append(item.nodeid)
                if left_out is not None and self.mutator.applied > applied:
                    left_out = _only_left_out(left_out, self._builds.get(item.nodeid, []),
                                              self.mutator.builds)
                if any(r.failed for r in reports):
                    result.status, result.reason = classify(self._error)
                    result.by = item.nodeid
                    break
        finally:
            self._mutating = False
            self.mutator.active = None
        if result.status == "survived" and self.mutator.applied == 0:
            result.status = "unreached"
            result.reason = "its tests no longer made the call it changes"
        elif (result.status == "survived" and left_out
              and mutant.kind not in UNSEEN_IN_PLAN):
            result.status = "unreached"
            result.reason = (
                f"it changes no query its tests run, only queries from_app(outputs=...) "
                f"leaves out ({', '.join(map(repr, sorted(left_out)))})")
        result.seconds = self._test_seconds - before
        return result

    # --- the controller's part: merge, gate, report ---------------------------------------
    @pytest.hookimpl(optionalhook=True)  # an xdist hook: a run without xdist has none
    def pytest_testnodedown(self, node: Any, error: Any) -> None:
        from ..mutate.results import MutantResult

        text = getattr(node, "workeroutput", {}).get(_KEY)
        if not text:
            return
        data = json.loads(text)
        self._results.extend(MutantResult.from_json(r) for r in data["results"])
        facts = data["facts"]
        self._facts["found"] = max(self._facts["found"], facts["found"])
        self._facts["found_by_topology"] = facts["found_by_topology"]
        self._facts["sampled"] = facts["sampled"]
        self._facts["not_green"] = sorted(set(self._facts["not_green"]) | set(
            facts["not_green"]))
        for key in ("test_seconds", "phase_seconds"):
            self._facts[key] += facts[key]

    @pytest.hookimpl(trylast=True)
    def pytest_sessionfinish(self, session: pytest.Session, exitstatus: int) -> None:
        if not self._gates:
            return
        from ..mutate.report import to_json, to_junit
        from ..mutate.results import Score, merge

        self._results = merge(self._results)
        facts = self._run_facts()
        for option, render in (("streamtest_mutate_json", to_json),
                               ("streamtest_mutate_junit", to_junit)):
            path = setting(self._config, option)
            if path:
                Path(path).parent.mkdir(parents=True, exist_ok=True)
                Path(path).write_text(render(self._results, facts))
        score = Score.of(self._results).percent
        if self._min_score is not None and session.exitstatus == 0 and (
                score is None or score < self._min_score):
            session.exitstatus = pytest.ExitCode.TESTS_FAILED

    def _run_facts(self) -> Any:
        from ..mutate.report import RunFacts

        return RunFacts(self._facts["found"], self._facts["sampled"], self._seed,
                        self._facts["test_seconds"], self._facts["phase_seconds"],
                        self._min_score, self._facts["found_by_topology"])

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        if not self._gates:
            return
        from ..mutate.report import terminal_lines
        from ..mutate.results import Score

        terminalreporter.section("streamtest mutation")
        if self._facts["not_green"]:
            terminalreporter.write_line(
                "no mutant was run: the tests must pass first; failed: "
                + ", ".join(self._facts["not_green"]))
            return
        for line in terminal_lines(self._results, self._run_facts(),
                                   verbose=self._config.option.verbose > 0):
            terminalreporter.write_line(line)
        score = Score.of(self._results).percent
        if self._min_score is not None and (score is None or score < self._min_score):
            shown = "not known" if score is None else f"{score:.1f} %"
            terminalreporter.write_line(
                f"FAILED: the mutation score is {shown}, below "
                f"--streamtest-mutate-min-score {self._min_score:g}", red=True)

    def pytest_unconfigure(self, config: pytest.Config) -> None:
        self._hook.close()
        if self.folder:
            for path in Path(self.folder).glob("*"):
                path.unlink()
            os.rmdir(self.folder)


def _only_left_out(so_far: set[str], before: list[Any], now: list[Any]) -> set[str] | None:
    """``so_far`` and the queries a test's builds left out, if the mutant made in them
    changed none of the queries that ran (each build's running outputs the same shape as
    in the tests' own run); None if it changed one, or a build ran every query."""
    if now != before or not now or not all(left for _, left in now):
        return None
    return so_far.union(*(left for _, left in now))


@contextmanager
def _without_shrinking(item: pytest.Item) -> Iterator[None]:
    """A hypothesis test run for a mutant stops at its first failing example: no
    shrinking (a killed mutant needs no minimal example) and no example database (the
    mutant's failures must not replay in the user's next run)."""
    test = getattr(item, "obj", None)
    current = getattr(test, "_hypothesis_internal_use_settings", None)
    if test is None or current is None or not hasattr(test, "hypothesis"):
        yield
        return
    from hypothesis import Phase, settings

    test._hypothesis_internal_use_settings = settings(
        current, phases=[p for p in current.phases if p is not Phase.shrink], database=None)
    try:
        yield
    finally:
        test._hypothesis_internal_use_settings = current
