"""The Spark session the plugin makes: its master (local, or a cluster's), its JVM
options under pytest-xdist, the settings given on the command line, the facts the
report header shows, and stopping it when pytest ends."""

from __future__ import annotations

import os
import shutil
import subprocess
from typing import TYPE_CHECKING, Any

import pytest

from ._plugin_guards import _SESSION
from .errors import hide_our_frames

__tracebackhide__ = hide_our_frames

if TYPE_CHECKING:
    from pyspark.sql import SparkSession


def _xdist_workers(config: pytest.Config) -> int:
    """How many pytest-xdist workers run the tests (1 without xdist): in a worker from
    what xdist hands it (``config.workerinput``), in the controller from ``-n``."""
    worker_input = getattr(config, "workerinput", None)
    if isinstance(worker_input, dict) and "workercount" in worker_input:
        return max(1, int(worker_input["workercount"]))
    workers = getattr(config.option, "numprocesses", None)
    return workers if isinstance(workers, int) and workers > 1 else 1


def _spark_master(config: pytest.Config, workers: int) -> str:
    """``--streamtest-master``, ``--spark-master`` or ``$STREAMTEST_MASTER`` if given;
    else ``local[2]``, or under xdist one task thread per CPU core each worker has (at
    least 1, at most 2): two workers on two cores each get ``local[1]`` rather than four
    task threads fighting over two cores."""
    given = (config.getoption("--streamtest-master") or config.getoption("--spark-master")
             or os.environ.get("STREAMTEST_MASTER"))
    if given:
        return str(given)
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return f"local[{min(2, max(1, (cores or 1) // workers))}]"


def _jvm_options(config: pytest.Config, workers: int) -> str:
    """JVM options of the ``spark`` fixture's JVM: under xdist, where the workers' JVMs
    share the cores, C1 compiles only and the serial collector (see
    ``SHARED_CORES_JVM_OPTIONS``); none when ``--spark-conf`` sets the JVM's options."""
    from .core.session import SHARED_CORES_JVM_OPTIONS

    if workers <= 1 or any(
        item.partition("=")[0].strip() == "spark.driver.extraJavaOptions"
        for item in config.getoption("--spark-conf")
    ):
        return ""
    return SHARED_CORES_JVM_OPTIONS


def _java_version() -> str:
    java = shutil.which("java")
    if java is None:
        return "not found"
    try:
        done = subprocess.run(
            [java, "-version"], capture_output=True, text=True, timeout=20, check=False
        )
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    first = ((done.stderr or done.stdout).strip().splitlines() or [""])[0]
    return first.split('"')[1] if '"' in first else "unknown"


def _parse_conf(items: list[str]) -> dict[str, str]:
    conf = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise pytest.UsageError(f"--spark-conf expects KEY=VALUE, got {item!r}")
        conf[key.strip()] = value
    return conf


def install_session_defaults(config: pytest.Config) -> None:
    """Make this run's options the defaults of every session the library creates while
    it lasts (the ``spark`` fixture, a driver made without ``spark=``,
    ``test_spark_session()``), and adopt the first one made as the run's session."""
    from ._spark import session_defaults

    undo = session_defaults.install(lambda: _session_defaults(config),
                                    lambda session: _adopt(config, session))
    config.add_cleanup(undo)


def _session_defaults(config: pytest.Config) -> Any:
    from ._spark.session_defaults import SessionDefaults

    workers = _xdist_workers(config)
    master = _spark_master(config, workers)
    conf = _parse_conf(config.getoption("--spark-conf"))
    if master.startswith("spark://") and workers > 1:
        # Each xdist worker's application takes a share of the cluster's cores, or
        # the first would take them all and the others wait for it to end.
        conf = {"spark.cores.max": "2", "spark.executor.cores": "1", **conf}
    return SessionDefaults(
        master=master,
        conf=conf,
        jvm_logs=bool(config.getoption("--streamtest-jvm-logs")),
        jvm_options=_jvm_options(config, workers),
    )


def _adopt(config: pytest.Config, session: SparkSession) -> None:
    """A session the library created with this run's defaults is the run's: the
    ``spark`` fixture's, watched by the guards, stopped when pytest ends."""
    if _SESSION not in config.stash:
        config.stash[_SESSION] = session
    config.add_cleanup(lambda: _stop_session(session))


def _shared_session(config: pytest.Config) -> SparkSession:
    """The test session's SparkSession, made on first use (with this run's options,
    see :func:`install_session_defaults`) and stopped when pytest ends if this run made
    it (shared by the ``spark`` fixture and scenario files)."""
    if _SESSION not in config.stash:
        from .core.session import test_spark_session

        # The active session, if any (made by the user, or by an outer pytest run in
        # this process), is not ours to stop: then no adoption happens.
        config.stash[_SESSION] = test_spark_session()
    return config.stash[_SESSION]


def _stop_session(session: SparkSession) -> None:
    """Stop the session at the end of the run, unless its JVM died (nothing to stop)."""
    from ._spark.liveness import jvm_is_gone

    if not jvm_is_gone(session):
        session.stop()
