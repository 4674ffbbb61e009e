"""The Spark session the plugin makes: its master (local, or a cluster's), its JVM
options under pytest-xdist, the settings of the run's options, the facts the report
header shows, and stopping it when pytest ends. Nothing here imports PySpark until a
session is made (or, under pytest-xdist, the header names the JVM options)."""

from __future__ import annotations

import os
import re
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from ..errors import hide_our_frames
from ._guards import _SESSION
from ._options import parse_conf, setting

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
    """The ``streamtest_master`` setting if given (``--streamtest-master`` /
    ``$STREAMTEST_MASTER``, the ini option, in that order, see
    :mod:`pyspark_streamtest.plugin._options`); else ``local[2]``, or under xdist one task
    thread per CPU core each worker has (at least 1, at most 2): two workers on two cores
    each get ``local[1]`` rather than four task threads fighting over two cores."""
    given = setting(config, "streamtest_master")
    if given:
        return str(given)
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return f"local[{min(2, max(1, (cores or 1) // workers))}]"


def _jvm_options(config: pytest.Config, workers: int) -> str:
    """JVM options of the ``spark`` fixture's JVM: under xdist, where the workers' JVMs
    share the cores, C1 compiles only and the serial collector (see
    ``SHARED_CORES_JVM_OPTIONS``); none when ``streamtest_conf`` sets the JVM's options.
    (Under xdist only, this imports PySpark, where the constant lives.)"""
    if workers <= 1 or "spark.driver.extraJavaOptions" in parse_conf(
            setting(config, "streamtest_conf")):
        return ""
    from ..core.session import SHARED_CORES_JVM_OPTIONS

    return SHARED_CORES_JVM_OPTIONS


def _java_version() -> str:
    """The version of the Java PySpark starts (``$JAVA_HOME``'s, else the first ``java``
    on the ``PATH``, as Spark's launcher chooses), read from its installation's
    ``release`` file (``JAVA_VERSION="17.0.15"``); ``unknown`` without one.

    Not from ``java -version``: the report header shows on every run, those that never
    use Spark included, and each would pay a process and a JVM start for one line (40 ms
    on a 2-core test machine, more where the JVM is slow to start). Reading a file costs
    next to nothing; JDKs since 9 have one, and Java 8 ones too (beside
    ``jre/bin/java``'s ``jre``, the second folder looked in)."""
    home = os.environ.get("JAVA_HOME")
    if home:
        folders = [Path(home)]
    else:
        java = shutil.which("java")
        if java is None:
            return "not found"
        bin_folder = Path(os.path.realpath(java)).parent
        folders = [bin_folder.parent, bin_folder.parent.parent]
    for folder in folders:
        try:
            release = (folder / "release").read_text(encoding="utf-8", errors="replace")
        except OSError:
            continue
        found = re.search(r'^JAVA_VERSION="([^"]+)"', release, re.MULTILINE)
        if found:
            return found[1]
    return "unknown"


def warm_jvm_wanted(config: pytest.Config) -> bool:
    """Whether this run's local session attaches to a warm JVM (``--streamtest-warm-jvm``,
    see ``_spark/runtime/warm_jvm.py``); a value that is not auto, on or off is a usage error."""
    from .._spark.runtime import warm_jvm
    from ..errors import InvalidArgumentError

    try:
        return warm_jvm.wanted(setting(config, "streamtest_warm_jvm"))
    except InvalidArgumentError as error:
        raise pytest.UsageError(str(error)) from None


def connect_wanted(config: pytest.Config) -> bool:
    """Whether the run's session is a Spark Connect one (``--streamtest-connect``, the
    ini option, or ``STREAMTEST_CONNECT`` 1/0, true/false, on/off); another value is a
    usage error."""
    value = setting(config, "streamtest_connect")
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if text in ("1", "true", "yes", "on"):
        return True
    if text in ("0", "false", "no", "off", ""):
        return False
    raise pytest.UsageError(
        f"STREAMTEST_CONNECT expects 1 or 0 (true/false, on/off), got {value!r}")


def install_session_defaults(config: pytest.Config) -> None:
    """Make this run's options the defaults of every session the library creates while
    it lasts (the ``spark`` fixture, a driver made without ``spark=``,
    ``test_spark_session()``), and adopt the first one made as the run's session."""
    from .._spark.runtime import session_defaults

    warm_jvm_wanted(config)  # a bad value stops the run before any test
    config.add_cleanup(_share_warm_jvm_project())
    if connect_wanted(config):
        config.add_cleanup(session_defaults.enter_connect_mode())

    undo = session_defaults.install(lambda: _session_defaults(config),
                                    lambda session: _adopt(config, session))
    config.add_cleanup(undo)


def _share_warm_jvm_project() -> Callable[[], None]:
    """Name this run's project (see ``_spark/runtime/warm_jvm.py``) for the processes it
    starts: a test's own pytest runs, in folders of their own, then share the project's
    warm JVMs and their cap. Returns what restores the environment."""
    from .._spark.runtime import warm_jvm

    def restore() -> None:
        os.environ.pop(warm_jvm.ENV_PROJECT, None)

    if os.environ.get(warm_jvm.ENV_PROJECT):
        return lambda: None
    os.environ[warm_jvm.ENV_PROJECT] = warm_jvm.current_project()
    return restore


def _session_defaults(config: pytest.Config) -> Any:
    from .._spark.runtime.session_defaults import SessionDefaults

    workers = _xdist_workers(config)
    master = _spark_master(config, workers)
    conf = parse_conf(setting(config, "streamtest_conf"))
    if master.startswith("spark://") and workers > 1:
        # Each xdist worker's application takes a share of the cluster's cores, or
        # the first would take them all and the others wait for it to end.
        conf = {"spark.cores.max": "2", "spark.executor.cores": "1", **conf}
    return SessionDefaults(
        master=master,
        conf=conf,
        jvm_logs=bool(setting(config, "streamtest_jvm_logs")),
        jvm_options=_jvm_options(config, workers),
        warm_jvm=warm_jvm_wanted(config),
        connect=connect_wanted(config),
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
        from .. import test_spark_session  # the face's: its exceptions show by their name

        # The active session, if any (made by the user, or by an outer pytest run in
        # this process), is not ours to stop: then no adoption happens.
        config.stash[_SESSION] = test_spark_session()
    return config.stash[_SESSION]


def _stop_session(session: SparkSession) -> None:
    """Stop the session at the end of the run, unless its JVM died (nothing to stop) or
    is a warm JVM: its keeper stops the context once this process has let go of it, and
    a run attaching before that stops it first (see ``_spark/runtime/warm_jvm.py``), so that
    this run does not wait for it (half a second)."""
    from .._spark.runtime import warm_jvm
    from .._spark.runtime.liveness import jvm_is_gone

    if warm_jvm.held() is None and not jvm_is_gone(session):
        session.stop()
