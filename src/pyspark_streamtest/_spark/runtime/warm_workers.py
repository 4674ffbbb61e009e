"""Warm Python workers: the executable Spark starts its Python workers with, for a
session the library creates.

Spark starts the ``transformWithState`` planner (once per query start), Python data
sources and UDTF analysis in a new interpreter and waits a fixed 10 s for it to connect
back (Spark 3.5-4.3, ``PythonWorkerFactory.createSimpleWorker``; no setting changes it).
Importing PySpark (from Spark's own ``pyspark.zip``, as the JVM sets the workers' path)
is most of that start: 0.97 s on a quiet 2-core machine, 15.9 s (median) at a load of
13-24 (issue 36), when a test fails with "Python worker failed to connect back" although
nothing is wrong with it. With warm workers on, Spark runs a launcher
(``_worker_launcher.py``) that gets a child forked from a server which imported
PySpark's worker modules once (``_worker_server.py``): the same module runs with the
same arguments, environment, working directory and streams, but is ready in 0.19 s
quiet and 1.1 s at that load (``python -m benchmarks.worker_start``).
User code is never imported by the server, so each worker imports it as it is on disk.

On by default where it can work (Linux, a local master); ``STREAMTEST_WARM_WORKERS=0``
turns it off. Whatever the server cannot serve exactly as a new interpreter would (Spark's
own daemon, another PySpark on the import path, other interpreter-start settings), the
launcher starts the real interpreter for, by ``exec``. Only this process's own
interpreter is served: a ``PYSPARK_PYTHON`` naming another one is used as it is.
"""

from __future__ import annotations

import atexit
import json
import os
import select
import shlex
import shutil
import socket
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

from ...errors import hide_our_frames
from .home import spark_home

__tracebackhide__ = hide_our_frames

ENV_SWITCH = "STREAMTEST_WARM_WORKERS"
_HERE = Path(__file__).parent
_SERVER = _HERE / "_worker_server.py"
_LAUNCHER = _HERE / "_worker_launcher.py"


@dataclass
class _Server:
    process: subprocess.Popen[bytes]
    folder: str
    socket_path: str
    launcher: str


_servers: dict[str, _Server] = {}


def enabled(master: str) -> bool:
    """Whether warm workers are used for a session on ``master``."""
    if os.environ.get(ENV_SWITCH, "1").strip().lower() in ("0", "false", "no", "off"):
        return False
    return sys.platform.startswith("linux") and master.startswith("local") and hasattr(
        socket, "send_fds")


def worker_python(real_python: str, master: str, *, quiet: bool = True) -> str:
    """The executable to give Spark for its Python workers: the launcher of a warm
    server for ``real_python`` (started now, in the background), or ``real_python``
    itself where warm workers are off. ``quiet``: drop PySpark's own log lines of the
    ``transformWithState`` planner (the user's prints stay)."""
    if not enabled(master) or os.path.realpath(real_python) != os.path.realpath(
            sys.executable):
        return real_python  # another interpreter: its version and modules are unknown
    server = _servers.get(real_python)
    if server is not None and server.process.poll() is None:
        return server.launcher
    if server is not None:  # it died: its folder goes with it
        shutil.rmtree(server.folder, ignore_errors=True)
    folder = tempfile.mkdtemp(prefix="streamtest-workers-")  # 0700: this user's only
    socket_path = os.path.join(folder, "server.sock")
    launcher = os.path.join(folder, "python")
    Path(launcher).write_text(
        "#!/bin/sh\n"
        f"exec {shlex.quote(real_python)} -I -S {shlex.quote(str(_LAUNCHER))} "
        f"{shlex.quote(real_python)} {shlex.quote(socket_path)} \"$@\"\n"
    )
    os.chmod(launcher, 0o700)
    env = dict(os.environ)
    # As Spark's workers get them (SparkContext: PYTHONHASHSEED defaults to 0; the JVM
    # sets PYTHONUNBUFFERED), so that their requests match this server's start.
    env["PYTHONHASHSEED"] = os.environ.get("PYTHONHASHSEED", "0")
    env["PYTHONUNBUFFERED"] = "YES"
    # Spark puts its own copy of PySpark first on its workers' import path (the JVM's
    # PythonUtils.sparkPythonPath); the server imports that same copy.
    env["PYTHONPATH"] = os.pathsep.join(
        [*spark_python_path(), *filter(None, env.get("PYTHONPATH", "").split(os.pathsep))])
    with open(os.path.join(folder, "server.log"), "wb") as log:
        process = subprocess.Popen(
            [real_python, str(_SERVER), socket_path, str(os.getpid()),
             "quiet" if quiet else "logs"],
            env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=log,
            cwd=folder, start_new_session=True,
        )
    server = _Server(process, folder, socket_path, launcher)
    _servers[real_python] = server
    return launcher


def wait_until_ready(launcher: str, timeout_s: float) -> bool:
    """Wait (at most ``timeout_s``) until the server behind ``launcher`` serves workers;
    False if it is not there or did not become ready in time. Until then, the launcher
    starts the real interpreter, so nobody has to wait for it but a test that counts."""
    for server in _servers.values():
        if server.launcher != launcher:
            continue
        stdout = server.process.stdout
        if stdout is None:
            return os.path.exists(server.socket_path)
        ready, _, _ = select.select([stdout], [], [], timeout_s)
        if ready:
            stdout.readline()
            stdout.close()
            server.process.stdout = None
        return os.path.exists(server.socket_path)
    return False


def spark_python_path() -> list[str]:
    """The zips Spark's JVM puts first on its Python workers' ``PYTHONPATH``."""
    lib = Path(spark_home(), "python", "lib")
    return [str(path) for path in [lib / "pyspark.zip", *sorted(lib.glob("py4j-*.zip"))]
            if path.exists()]


def started_workers(launcher: str) -> int | None:
    """How many workers the server behind ``launcher`` has forked so far, or None when
    there is no such server (warm workers off, or not ready yet)."""
    for server in _servers.values():
        if server.launcher != launcher or not os.path.exists(server.socket_path):
            continue
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as conn:
            conn.settimeout(30)
            conn.connect(server.socket_path)
            body = json.dumps({"stats": True}).encode()
            socket.send_fds(conn, [len(body).to_bytes(4, "big") + body], [])
            reply = b""
            while chunk := conn.recv(4096):
                reply += chunk
        return int(json.loads(reply)["started"])
    return None


def _stop_all() -> None:
    for server in _servers.values():
        if server.process.stdout is not None:
            server.process.stdout.close()
        if server.process.poll() is None:
            server.process.terminate()
            try:
                server.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                server.process.kill()
                server.process.wait(timeout=10)
        shutil.rmtree(server.folder, ignore_errors=True)
    _servers.clear()


atexit.register(_stop_all)
