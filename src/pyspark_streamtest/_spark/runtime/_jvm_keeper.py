"""The keeper of one warm JVM: a small process that starts a Spark JVM with PySpark's own
``launch_gateway`` (the JVM lives as long as the keeper holds its stdin), tells the runs
that attach to it how to reach it, cleans it after each run, and ends it after an idle
time (see ``warm_jvm.py``, the side of the runs).

Run as a script, ``python _jvm_keeper.py FOLDER IDLE_SECONDS``, in the environment and
working directory the JVM is to have. It imports PySpark's gateway module and the
standard library only, so that it is ready as soon as the JVM is. The runs import
:func:`clean` from here as a module of the package; nothing here imports the package.

The folder (private to the user: 0700) holds:

- ``launch.json``: the Spark settings the JVM starts with (written by the first run);
- ``lock``: held (``flock``) by the run using the JVM, for as long as its process lives,
  so the kernel lets go of it when that process ends, however it ends;
- ``gateway.json`` (0600): the gateway's port and secret, the JVM's and keeper's
  process ids; written once the JVM answers, removed first when the keeper ends;
- ``keeper.pid``: the keeper's process id, written first;
- ``runs``: how many runs attached so far (each numbers its Python proxies in a range
  of its own, see ``callbacks.number_proxies_from``);
- ``cleaning``: there while the keeper cleans the JVM after a run (holding the lock);
- ``cleaned``: how many times the keeper has cleaned the JVM after a run (written when
  a cleaning ends: the JVM is ready for the next run);
- ``keeper.log``: the keeper's and the JVM's output.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from typing import Any

POLL_S = 0.25
"""How often the keeper looks whether a run holds the JVM."""

CLEAN_TIMEOUT_S = 60.0
"""How long cleaning may take (stopping a context a killed run left, with its queries)
before the JVM is given up as wedged and ended."""


def clean(jvm: Any) -> None:
    """Make the JVM as a new one would be for the next run: stop a SparkContext a run
    left (a run that was killed, or did not stop its session), with its queries and
    Python workers; unload the state stores (a JVM-wide cache); put the logging back as
    its configuration file says (``setLogLevel`` changes it for the whole JVM). (The
    keeper then lets go of the ended run's objects: :func:`forget_runs_objects`.)"""
    active = _object(jvm, "org.apache.spark.SparkContext").getActive()
    if active.isDefined():
        active.get().stop()
    state_store = _object(jvm, "org.apache.spark.sql.execution.streaming.state.StateStore")
    if state_store is not None:
        state_store.stop()
    context = jvm.org.apache.logging.log4j.LogManager.getContext(False)
    context.reconfigure()


def forget_runs_objects(gateway: Any) -> None:
    """Let go of the JVM objects that ended runs still held through Py4J.

    Py4J's gateway keeps every JVM object it handed to a Python process (``o123``) until
    that process says it dropped it. A run's process ends holding many (its session, its
    DataFrames, its queries), and nothing ever says so: a warm JVM would keep them all,
    and their memory, across every later run. Run only while no run is attached (the
    keeper, holding the lock): every object id then is an ended run's, but for the ones
    this call holds itself."""
    from py4j.java_gateway import JavaObject

    server = JavaObject("GATEWAY_SERVER", gateway._gateway_client)
    bindings = server.getGateway().getBindings()
    keys = [str(key) for key in bindings.keySet().toArray()]  # read whole, then removed
    for key in keys:
        if key.startswith("o") and key != bindings._target_id:
            bindings.remove(key)


def _clean_after_run(gateway: Any) -> None:
    clean(gateway.jvm)
    forget_runs_objects(gateway)


def _object(jvm: Any, name: str) -> Any:
    """A Scala object (``Name$.MODULE$``) of the JVM, or None where this Spark has none.
    (What ``Jvm.scala_object`` gives, read as a static field through Py4J's JVM view:
    the keeper imports nothing of the package, whose ``Jvm`` needs ``pyspark.sql``.)"""
    from py4j.java_gateway import JavaObject

    holder = jvm
    for part in name.split(".")[:-1]:
        holder = getattr(holder, part)
    found = getattr(getattr(holder, name.rsplit(".", 1)[-1] + "$"), "MODULE$")
    return found if isinstance(found, JavaObject) else None


def _bounded(call: Any, timeout_s: float) -> bool:
    """Run ``call()`` in a thread; True if it returned in time without raising."""
    outcome: list[bool] = []

    def run() -> None:
        try:
            call()
        except BaseException:
            outcome.append(False)
        else:
            outcome.append(True)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(timeout_s)
    return bool(outcome and outcome[0])


def _write_private(path: str, text: str) -> None:
    temporary = path + ".tmp"
    descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(descriptor, "w") as file:
        file.write(text)
    os.replace(temporary, path)


def _try_lock(path: str) -> int | None:
    descriptor = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        os.close(descriptor)
        return None
    return descriptor


def main(folder: str, idle_s: float) -> int:
    if os.fork() > 0:  # the starting run waits for this first process only
        os._exit(0)
    _write_private(os.path.join(folder, "keeper.pid"), str(os.getpid()))
    from pyspark import SparkConf
    from pyspark.java_gateway import launch_gateway

    with open(os.path.join(folder, "launch.json")) as file:
        settings: dict[str, str] = json.load(file)
    conf = SparkConf(loadDefaults=False)
    for key, value in settings.items():
        conf.set(key, value)
    gateway = launch_gateway(conf)  # type: ignore[no-untyped-call]
    process: subprocess.Popen[bytes] = gateway.proc
    parameters = gateway.java_parameters if hasattr(gateway, "java_parameters") else (
        gateway.gateway_parameters)
    info_path = os.path.join(folder, "gateway.json")
    _write_private(info_path, json.dumps({
        "port": parameters.port, "secret": parameters.auth_token,
        "jvm_pid": process.pid, "keeper_pid": os.getpid(),
    }))

    def end(*_: object) -> None:
        raise SystemExit(0)

    signal.signal(signal.SIGTERM, end)
    lock_path = os.path.join(folder, "lock")
    idle_since: float | None = None
    clean_needed = False
    cleanings = 0
    try:
        while True:
            time.sleep(POLL_S)
            if process.poll() is not None or not os.path.exists(info_path):
                return 0  # the JVM died, or a run gave this JVM up (it removed the file)
            descriptor = _try_lock(lock_path)
            if descriptor is None:  # a run holds it
                idle_since, clean_needed = None, True
                continue
            # From here the lock is ours: it is let go of below, or held to the end, so
            # that no run takes a JVM that is being given up.
            if clean_needed:
                marker = os.path.join(folder, "cleaning")
                _write_private(marker, "")  # a run that finds the lock taken waits
                if not _bounded(lambda: _clean_after_run(gateway), CLEAN_TIMEOUT_S):
                    return 1
                os.unlink(marker)
                cleanings += 1
                _write_private(os.path.join(folder, "cleaned"), str(cleanings))
                clean_needed = False
            if idle_since is None:
                idle_since = time.monotonic()
            if time.monotonic() - idle_since >= idle_s:
                return 0
            os.close(descriptor)
    finally:
        _end(folder, info_path, process)


def _end(folder: str, info_path: str, process: subprocess.Popen[bytes]) -> None:
    """Take the JVM away: first the file runs find it by, then the JVM (its stdin closed,
    as PySpark ends it; killed if it does not go), then the folder."""
    with contextlib.suppress(FileNotFoundError):
        os.unlink(info_path)
    if process.poll() is None:
        if process.stdin is not None:
            process.stdin.close()
        try:
            process.wait(10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(10)
    shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], float(sys.argv[2])))
