"""Project-wide test configuration.

The pyspark-streamtest pytest plugin (fixtures ``spark`` and ``topology_driver``) is
registered by the package's ``pytest11`` entry point, so an installed package is all
the suite needs. Hypothesis profiles: ``ci`` (derandomized, no deadline: Spark steps
vary in wall time) is selected when CI is set.
"""

import os

import pytest
from hypothesis import HealthCheck, settings

settings.register_profile(
    "ci",
    derandomize=True,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
    database=None,
)
settings.register_profile("dev", deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("ci" if os.environ.get("CI") else "dev")


def pytest_configure(config):
    config.addinivalue_line(
        "markers", "stress: a long stress run; selected only by `pytest -m stress`"
    )
    _steal_work_unless_told(config)


def _steal_work_unless_told(config):
    """Under ``-n N``, xdist's ``worksteal`` mode unless ``--dist`` was given.

    A worker that runs out of tests takes the other's pending ones, so a file of long
    tests left at the end no longer keeps one worker busy while the other waits: the
    README command took 1355 s with it, 1660 s with xdist's default ``load`` (one run
    each, this 2-core machine). Set here rather than in ``addopts``, where ``--dist``
    would break ``pytest -p no:xdist``.
    """
    if not config.pluginmanager.hasplugin("xdist") or config.getoption("dist") != "load":
        return
    given = [*config.invocation_params.args, *os.environ.get("PYTEST_ADDOPTS", "").split()]
    if not any(arg in ("-d", "--distload") or arg.startswith("--dist") for arg in given):
        config.option.dist = "worksteal"


def pytest_collection_modifyitems(config, items):
    if "stress" in (config.getoption("markexpr") or ""):
        return
    skip = pytest.mark.skip(reason="a stress run: select it with `pytest -m stress`")
    for item in items:
        if item.get_closest_marker("stress"):
            item.add_marker(skip)


@pytest.fixture(autouse=True)
def _pytester_children_start_their_own_jvm(request, monkeypatch):
    """A pytester child run gets a temporary HOME, so a warm JVM it started would wait
    there, outside the user's cap, until its idle time: children of this suite run with
    warm JVMs off unless their test turns them on (tests/spark/test_warm_jvm.py runs its
    children itself, in a folder of its own)."""
    if "pytester" in request.fixturenames:
        monkeypatch.setenv("STREAMTEST_WARM_JVM", "off")
