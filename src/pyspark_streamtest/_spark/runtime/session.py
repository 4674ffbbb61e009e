"""The test-tuned local SparkSession and session checks."""

from __future__ import annotations

import atexit
import os
import shutil
import sys
import tempfile
from collections.abc import Callable, Mapping
from pathlib import Path

from pyspark import SparkContext
from pyspark.sql import SparkSession

from ...errors import NotASparkSessionError, SparkConnectNotSupportedError, hide_our_frames
from ..jvm import Jvm
from ..versions import check_pyspark_version
from . import py4j_converters, session_defaults, warm_jvm, warm_workers
from .python_logs import quiet_query_context_logs

__tracebackhide__ = hide_our_frames

_LOG4J2 = Path(__file__).with_name("log4j2.properties")
_LOG4J2_FULL = Path(__file__).with_name("log4j2-full.properties")

# Chosen for small, fast, deterministic tests on a laptop or a 2-core CI box.
TEST_CONF: Mapping[str, str] = {
    "spark.ui.enabled": "false",
    "spark.ui.showConsoleProgress": "false",
    "spark.sql.shuffle.partitions": "1",
    "spark.default.parallelism": "2",
    "spark.sql.session.timeZone": "UTC",
    "spark.driver.host": "127.0.0.1",
    "spark.driver.bindAddress": "127.0.0.1",
    "spark.sql.adaptive.enabled": "false",
    "spark.sql.streaming.stateStore.maintenanceInterval": "600s",
    "spark.python.worker.reuse": "true",
    # How long a Python worker and the JVM wait for each other's socket and its
    # authentication (Spark's default 15 s): on a loaded machine 15 s can pass before
    # the other side is scheduled, and the batch fails with CANNOT_OPEN_SOCKET although
    # nothing is wrong with it (issue 36). A dead peer is still seen at once (EOF).
    "spark.python.authenticate.socketTimeout": "120s",
}

# JVM options for a test JVM that shares its CPU cores with another one (pytest-xdist
# workers): C1 compiles only, and the serial collector. Measured with two 8-test runs of
# examples/payments_pipeline.py side by side on 2 cores, `local[1]` each: 110 s with the
# JVM's defaults, 68 s with these (a serial run of the 16 takes 78 s either way). With
# the defaults both JVMs' C2 compiler threads fight the tests for the two cores.
SHARED_CORES_JVM_OPTIONS = "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"


def build_test_session(
    *,
    master: str | None = None,
    conf: Mapping[str, str] | None = None,
    jvm_logs: bool | None = None,
    jvm_options: str | None = None,
    connect: bool | None = None,
) -> SparkSession:
    """Get or create the test-tuned session (see :func:`pyspark_streamtest.test_spark_session`).

    Arguments left out (``None``) take the defaults in force (:mod:`.session_defaults`:
    ``local[2]``, or the pytest plugin's options); ``conf`` adds to the default settings.
    With ``connect``, a Spark Connect session of a local server in this process's JVM
    (see :func:`_connect_session`)."""
    check_pyspark_version()
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    defaults, created = session_defaults.current()
    jvm_logs = defaults.jvm_logs if jvm_logs is None else jvm_logs
    quiet_query_context_logs(not jvm_logs)  # PySpark's own error logs follow the JVM's
    if defaults.connect if connect is None else connect:
        return _connect_session(master, conf, jvm_logs, jvm_options, created)
    active = SparkSession.getActiveSession()
    if active is not None:
        ensure_classic_session(active)
        return active
    session, ours = _new_session(master, conf, jvm_logs, jvm_options,
                                 warm=defaults.warm_jvm)
    if ours and created is not None:
        created(session)
    return session


def _connect_session(
    master: str | None, conf: Mapping[str, str] | None, jvm_logs: bool,
    jvm_options: str | None, created: Callable[[SparkSession], None] | None,
) -> SparkSession:
    """This process's Spark Connect test session, made on first use: the test-tuned
    classic session's JVM serves Connect (:func:`.connect.server_settings`) and the
    session is a client of it, as ``SparkSession.builder.remote("local[...]")`` makes
    one, which puts the process in Connect mode. Never a warm JVM: Connect mode is the
    whole process's and its server lives as long as the context (a run makes one)."""
    from ..connect import session as connect

    made = connect.made_session()
    if made is not None:
        return made  # type: ignore[no-any-return]
    if SparkContext._active_spark_context is not None:
        raise SparkConnectNotSupportedError(
            "Spark Connect mode starts this process's Spark itself, but a classic session "
            "already runs here; run the Connect tests in a process of their own "
            "(pytest --streamtest-connect), before any classic session is made")
    connect.require_server_jar()
    token = connect.new_token()
    settings = connect.server_settings(token, dict(conf or {}))
    classic, _ = _new_session(master, settings, jvm_logs, jvm_options, warm=False)
    client = connect.connect_client(connect.server_port(Jvm(classic)), token)
    if created is not None:
        created(client)
    return client  # type: ignore[no-any-return]


def _new_session(
    master: str | None, conf: Mapping[str, str] | None, jvm_logs: bool,
    jvm_options: str | None, *, warm: bool,
) -> tuple[SparkSession, bool]:
    """A new test-tuned classic session, and whether this call made its context."""
    # Before the first call to the JVM: PySpark's NumPy converters would import pandas
    # on it (0.5-0.8 s) to learn whether NumPy is there.
    py4j_converters.defer_numpy_converters()
    defaults, _ = session_defaults.current()
    master = defaults.master if master is None else master
    jvm_options = defaults.jvm_options if jvm_options is None else jvm_options
    launch_python_path = os.environ.get("PYTHONPATH")
    _share_import_paths_with_workers()
    warehouse = tempfile.mkdtemp(prefix="pyspark-streamtest-warehouse-")
    atexit.register(shutil.rmtree, warehouse, True)
    settings = dict(TEST_CONF)
    # Spark's workers start through the warm worker launcher where it can (see
    # warm_workers): PySpark reads the workers' executable from PYSPARK_PYTHON when the
    # context starts, so it is set for that moment only.
    workers_python = warm_workers.worker_python(os.environ["PYSPARK_PYTHON"], master,
                                                quiet=not jvm_logs)
    settings["spark.pyspark.python"] = workers_python
    settings["spark.sql.warehouse.dir"] = warehouse
    log_config = _LOG4J2_FULL if jvm_logs else _LOG4J2
    log_option = f"-Dlog4j2.configurationFile={log_config.as_uri()}"
    settings["spark.driver.extraJavaOptions"] = " ".join(filter(None, [log_option, jvm_options]))
    if not master.startswith("local"):  # executors in processes of their own
        settings.update(cluster_conf(log_option))
    settings.update(defaults.conf)
    settings.update(conf or {})
    builder = SparkSession.builder.master(master).appName("pyspark-streamtest")
    # A context of this process made elsewhere (another thread's session) is not ours.
    ours = SparkContext._active_spark_context is None
    chosen_python = os.environ["PYSPARK_PYTHON"]
    # Not with the JVM's logs asked for: a warm JVM writes them to its keeper's log, not
    # to this run's terminal.
    if (ours and warm and not jvm_logs and master.startswith("local")
            and SparkContext._gateway is None and warm_jvm.available()):
        _attach_warm_jvm(master, settings, launch_python_path)
    for key, value in settings.items():
        builder = builder.config(key, value)
    os.environ["PYSPARK_PYTHON"] = workers_python
    # In Connect mode PySpark's builder makes Connect sessions only: the classic session
    # a local Connect server runs in is made outside it (as PySpark's own remote("local")
    # makes it), so neither the JVM nor its Python workers inherit the mode.
    connect_mode = os.environ.pop(session_defaults.CONNECT_MODE, None)
    try:
        session = builder.getOrCreate()
    finally:
        os.environ["PYSPARK_PYTHON"] = chosen_python
        if connect_mode is not None:
            os.environ[session_defaults.CONNECT_MODE] = connect_mode
    return session, ours


def _attach_warm_jvm(master: str, settings: dict[str, str],
                     launch_python_path: str | None) -> None:
    """Make a warm JVM (see :mod:`.warm_jvm`) the JVM of this process's SparkContext,
    if one can be had; else the context starts its own JVM as usual.

    The JVM's environment is this process's as a JVM started now would get it, but for
    the import paths given to Python workers: a JVM started by PySpark inherits them in
    ``PYTHONPATH`` (see :func:`_share_import_paths_with_workers`); a warm JVM keeps the
    ``PYTHONPATH`` this process started with, and each run gives its workers its own
    paths as ``spark.executorEnv.PYTHONPATH``, which PySpark's workers put right after
    Spark's own (as the inherited ones are), so that which tests a run collects does not
    decide which JVM it may use."""
    env = dict(os.environ)
    if launch_python_path is None:
        env.pop("PYTHONPATH", None)
    else:
        env["PYTHONPATH"] = launch_python_path
    if os.environ.get("PYTHONPATH"):
        settings["spark.executorEnv.PYTHONPATH"] = os.environ["PYTHONPATH"]
    gateway = warm_jvm.attach(
        {"spark.master": master, "spark.app.name": "pyspark-streamtest", **settings}, env)
    if gateway is not None:
        SparkContext._ensure_initialized(gateway=gateway)


def cluster_conf(log_option: str) -> dict[str, str]:
    """What executors started by a cluster's workers need from this process: the same
    Python (``spark.pyspark.python`` is set for every master) with this process's import
    paths (a worker's executors inherit the worker's environment, not ours) and the same
    quiet logging."""
    conf = {"spark.executor.extraJavaOptions": log_option}
    if os.environ.get("PYTHONPATH"):
        conf["spark.executorEnv.PYTHONPATH"] = os.environ["PYTHONPATH"]
    return conf


def _share_import_paths_with_workers() -> None:
    """Let Spark's Python workers import what this process imports.

    Functions given to Spark (pandas UDFs, ``applyInPandasWithState``) are pickled by
    reference to their module; a test module is importable here only because pytest
    put its folder on ``sys.path``. Workers inherit ``PYTHONPATH`` from the JVM, which
    inherits it from this process at launch, so we add this process's own (non
    site-packages) import paths to it before the JVM starts.
    """
    prefixes = {os.path.realpath(p) for p in (sys.prefix, sys.base_prefix, sys.exec_prefix)}
    current = [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
    extra = []
    for entry in [os.getcwd(), *sys.path]:
        path = os.path.realpath(entry or os.getcwd())
        if not os.path.isdir(path) or path in current or path in extra:
            continue
        if any(path == prefix or path.startswith(prefix + os.sep) for prefix in prefixes):
            continue  # the interpreter's own libraries: workers have them already
        extra.append(path)
    if extra:
        os.environ["PYTHONPATH"] = os.pathsep.join(current + extra)


def ensure_classic_session(spark: object) -> None:
    """Raise for anything but a classic (JVM-backed) SparkSession."""
    kind = f"{type(spark).__module__}.{type(spark).__qualname__}"
    if not hasattr(spark, "_jsparkSession") and not kind.startswith("pyspark.sql.connect"):
        raise NotASparkSessionError(
            f"spark= must be a SparkSession, got {kind} {spark!r:.80}; pass the session the "
            "test uses (the plugin's `spark` fixture), or leave spark= out for "
            "pyspark_streamtest.test_spark_session()"
        )
    if not hasattr(spark, "_jsparkSession"):
        raise SparkConnectNotSupportedError(
            f"{kind} is a Spark Connect session; the driver needs a classic session with a "
            "local JVM (it controls the query's trigger clock and memory sources in that JVM). "
            "Create one with SparkSession.builder.master('local[2]') without .remote(...), "
            "or use pyspark_streamtest.test_spark_session()."
        )
