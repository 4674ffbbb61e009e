"""The suite's profile (issue 59), loaded by ``.ci/profile`` with ``-p tests._profile_plugin``.

Each worker writes one JSON line per test to ``$STREAMTEST_PROFILE_DIR/<worker>.jsonl``:
its file, its setup, call and teardown seconds, the seconds each fixture's setup took in
it (a fixture of a wider scope counts in the test that made it), and the processes it
started, counted apart: JVMs (``spark-submit``, ``spark-class``, ``java``), pytest or
Python processes, others, each with the seconds from its start to the test's end (an
upper bound of its life in the test). ``.ci/profile`` reads the lines and prints the tables.
"""

from __future__ import annotations

import json
import os
import subprocess
import time
from typing import Any

import pytest

_DIR = os.environ.get("STREAMTEST_PROFILE_DIR", "")
_KINDS = (("jvm", ("spark-submit", "spark-class", "java", "start-master", "start-worker")),
          ("python", ("python", "pytest", "pyspark-streamtest")))


def _kind(args: Any) -> str:
    argv = [args] if isinstance(args, (str, bytes)) else list(args or [])
    words = " ".join(os.path.basename(str(a)) for a in argv[:4])
    for kind, names in _KINDS:
        if any(name in words for name in names):
            return kind
    return "other"


class _Profile:
    def __init__(self) -> None:
        self.test: dict[str, Any] | None = None
        self.started: list[tuple[str, float, subprocess.Popen[Any]]] = []
        real = subprocess.Popen.__init__
        profile = self

        def init(popen: subprocess.Popen[Any], args: Any, *rest: Any, **kwargs: Any) -> None:
            real(popen, args, *rest, **kwargs)
            profile.started.append((_kind(args), time.monotonic(), popen))

        subprocess.Popen.__init__ = init  # type: ignore[method-assign]
        worker = os.environ.get("PYTEST_XDIST_WORKER", "main")
        self.out = open(os.path.join(_DIR, f"{worker}.jsonl"), "a")  # noqa: SIM115

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_protocol(self, item: pytest.Item, nextitem: Any) -> Any:
        self.test = {"id": item.nodeid, "file": item.nodeid.split("::")[0],
                     "setup": 0.0, "call": 0.0, "teardown": 0.0, "fixtures": {},
                     "processes": {}}
        self.started = []
        try:
            return (yield)
        finally:
            now = time.monotonic()
            for kind, began, _ in self.started:
                entry = self.test["processes"].setdefault(kind, [0, 0.0])
                entry[0] += 1
                entry[1] += now - began
            self.out.write(json.dumps(self.test) + "\n")
            self.out.flush()
            self.test = None

    @pytest.hookimpl(wrapper=True)
    def pytest_fixture_setup(self, fixturedef: Any, request: Any) -> Any:
        began = time.monotonic()
        try:
            return (yield)
        finally:
            if self.test is not None:
                name = fixturedef.argname
                fixtures = self.test["fixtures"]
                fixtures[name] = fixtures.get(name, 0.0) + time.monotonic() - began

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        if self.test is not None:
            self.test[report.when] += report.duration


def pytest_configure(config: pytest.Config) -> None:
    if _DIR:
        config.pluginmanager.register(_Profile(), "streamtest-suite-profile")
