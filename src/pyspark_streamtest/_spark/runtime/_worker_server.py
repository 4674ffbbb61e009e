"""The warm worker server: one Python process that has imported PySpark's worker modules
once, and forks a ready child for each Python worker that Spark starts afresh.

Run by path (``python _worker_server.py SOCKET PARENT_PID quiet|logs``), never imported: it must
not import the package (whose face imports PySpark's session machinery) nor any user
code, so that every child imports the user's modules as they are on disk now.

Spark starts most Python workers through its own daemon, which forks them; but the
``transformWithState`` planner, Python data sources and UDTF analysis start a new
interpreter each time (``python -m <module>``), and Spark gives it a fixed 10 s to start
and connect back. On a loaded machine the interpreter's start (importing PySpark is
most of it) can take seconds. The launcher Spark runs instead (``_worker_launcher.py``)
hands this server its arguments, environment, working directory and standard streams;
the server forks a child that takes them over and runs the module as ``python -m``
would, and reports the child's pid and, later, its exit status.

Protocol, over a Unix socket: the launcher sends a 4-byte length and a JSON request
(``{"argv": [...], "env": {...}, "cwd": "..."}``) with its fds 0, 1 and 2 attached; the
server answers a 4-byte signed pid (-1: "start yourself", when the request cannot be
served exactly as a new interpreter would run it), then a 4-byte exit status when the
child ends. ``{"stats": true}`` answers a JSON count of the children started.
"""

from __future__ import annotations

import contextlib
import importlib
import json
import os
import runpy
import select
import shutil
import signal
import socket
import struct
import sys
import traceback
from importlib.machinery import PathFinder
from typing import TextIO

# The modules whose import is most of a new worker's start.
PREIMPORTED = (
    "pyspark.worker",
    "pyspark.sql.streaming.transform_with_state_driver_worker",
)

# Environment variables that take effect when an interpreter starts (hash seed, stream
# buffering, flags): a request is served only where each is as in this server, which
# started with the values Spark gives its workers; otherwise the launcher starts itself.
START_TIME_ENV = (
    "PYTHONHASHSEED", "PYTHONUNBUFFERED", "PYTHONOPTIMIZE", "PYTHONDONTWRITEBYTECODE",
    "PYTHONUTF8", "PYTHONIOENCODING", "PYTHONWARNINGS", "PYTHONFAULTHANDLER",
    "PYTHONDEVMODE", "PYTHONSAFEPATH", "PYTHONNOUSERSITE", "PYTHONHOME",
    "PYTHONPLATLIBDIR", "PYTHONINTMAXSTRDIGITS", "PYTHONMALLOC", "PYTHONTRACEMALLOC",
    "PYTHONPROFILEIMPORTTIME", "PYTHONNODEBUGRANGES",
)

_INT = struct.Struct("!i")

# PySpark's transformWithState planner prints four or five lines of up to 600
# characters at every query start ("Starting Streaming TransformWithStateInPandas Python
# worker." ...) to its stdout, which Spark copies to the JVM's stderr: a third of every
# failure report. Quiet (unless the JVM's logs are asked for), they are dropped, and
# only they: whatever the user's processor prints stays.
_PLANNER = "pyspark.sql.streaming.transform_with_state_driver_worker"
_PLANNER_LOG = "Streaming TransformWithStateInPandas Python worker"


class _WithoutPlannerLogs:
    """A text stream that passes everything but PySpark's planner log lines."""

    def __init__(self, stream: TextIO) -> None:
        self._stream = stream
        self._line = ""
        self._dropped = False

    def write(self, text: str) -> int:
        self._line += text
        while "\n" in self._line:
            line, self._line = self._line.split("\n", 1)
            if _PLANNER_LOG in line or (self._dropped and not line):
                self._dropped = _PLANNER_LOG in line
                continue
            self._dropped = False
            self._stream.write(line + "\n")
        return len(text)

    def flush(self) -> None:
        if self._line and _PLANNER_LOG not in self._line:
            self._stream.write(self._line)
            self._line = ""
        self._stream.flush()

    def __getattr__(self, name: str) -> object:
        return getattr(self._stream, name)


def _read_request(conn: socket.socket) -> tuple[dict[str, object], list[int]]:
    data, fds, _flags, _addr = socket.recv_fds(conn, 1 << 16, 3)
    while len(data) < 4:
        more = conn.recv(1 << 16)
        if not more:
            raise ConnectionError("the launcher went away")
        data += more
    (size,) = _INT.unpack(data[:4])
    body = data[4:]
    while len(body) < size:
        more = conn.recv(size - len(body))
        if not more:
            raise ConnectionError("the launcher went away")
        body += more
    return json.loads(body), fds


def _base_path() -> list[str]:
    """This interpreter's import path without what its start added for this script and
    its own PYTHONPATH: the part every ``python -m`` shares."""
    own = {os.path.realpath(p) for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p}
    script_dir = os.path.realpath(os.path.dirname(os.path.abspath(__file__)))
    return [p for p in sys.path[1:] if os.path.realpath(p or ".") not in own
            and os.path.realpath(p or ".") != script_dir]


def _child_path(request: dict[str, object], base: list[str]) -> list[str]:
    env = request["env"]
    assert isinstance(env, dict)
    extra = [p for p in str(env.get("PYTHONPATH", "")).split(os.pathsep) if p]
    return [str(request["cwd"]), *extra, *base]


def _servable(request: dict[str, object], base: list[str]) -> str | None:
    """The module to run, when the request can be run exactly as a new interpreter would
    run it; None otherwise (the reason goes to the server's log)."""
    argv = request.get("argv")
    env = request.get("env")
    if not isinstance(argv, list) or len(argv) < 2 or argv[0] != "-m" or not isinstance(
            env, dict):
        _refused(f"not `python -m module`: {argv!r}")
        return None
    for name in START_TIME_ENV:
        if env.get(name) != os.environ.get(name):
            _refused(f"{name}={env.get(name)!r}, the server has {os.environ.get(name)!r}")
            return None
    # PySpark must be the one this server imported, under the child's own import path.
    spec = PathFinder.find_spec("pyspark", _child_path(request, base))
    if spec is None or spec.origin != sys.modules["pyspark"].__file__:
        _refused(f"another PySpark on its import path: {spec and spec.origin}")
        return None
    return str(argv[1])


def _refused(reason: str) -> None:
    print(f"started itself: {reason}", file=sys.stderr, flush=True)


def _run_child(module: str, request: dict[str, object], fds: list[int],
               base: list[str]) -> None:
    """In the forked child: become the worker ``python -m module`` would have been."""
    code: object = 0
    try:
        signal.set_wakeup_fd(-1)
        for sig in (signal.SIGCHLD, signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
            signal.signal(sig, signal.SIG_DFL)
        for target, fd in enumerate(fds):
            os.dup2(fd, target)
            os.close(fd)
        env = request["env"]
        assert isinstance(env, dict)
        os.chdir(str(request["cwd"]))
        os.environ.clear()
        os.environ.update({str(k): str(v) for k, v in env.items()})
        argv = request["argv"]
        assert isinstance(argv, list)
        sys.argv = [str(a) for a in argv[1:]]
        sys.path[:] = _child_path(request, base)
        importlib.invalidate_caches()
        # Run as `python -m` runs it: afresh as __main__ (its imports stay warm).
        sys.modules.pop(module, None)
        if module == _PLANNER and _QUIET:
            sys.stdout = _WithoutPlannerLogs(sys.stdout)
        runpy.run_module(module, run_name="__main__", alter_sys=True)
    except SystemExit as exit_:
        code = exit_.code
    except BaseException:
        traceback.print_exc()
        code = 1
    finally:
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(Exception):
                stream.flush()
    if code is None:
        status = 0
    elif isinstance(code, int):
        status = code & 0xFF
    else:
        print(code, file=sys.stderr)
        status = 1
    os._exit(status)


def serve(path: str, parent: int) -> None:
    for name in PREIMPORTED:
        with contextlib.suppress(ImportError):  # a line without it: those start themselves
            importlib.import_module(name)
    base = _base_path()
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    staging = path + ".staging"
    listener.bind(staging)
    listener.listen(64)
    os.rename(staging, path)  # ready: the launchers find it only now
    os.write(1, b"ready\n")  # and so does whoever waits for it (wait_until_ready)
    # fd 1 then points nowhere; sys.stdin/stdout/stderr keep wrapping fds 0-2, which
    # each child points at its launcher's streams.
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 1)
    os.close(devnull)
    wake_r, wake_w = os.pipe()
    os.set_blocking(wake_w, False)
    signal.set_wakeup_fd(wake_w)
    signal.signal(signal.SIGCHLD, lambda *_: None)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    waiting: dict[int, socket.socket] = {}
    started = 0
    while os.getppid() == parent:
        readable, _, _ = select.select([listener.fileno(), wake_r], [], [], 1.0)
        if wake_r in readable:
            os.read(wake_r, 512)
        while waiting:
            pid, status = os.waitpid(-1, os.WNOHANG)
            if pid == 0:
                break
            conn = waiting.pop(pid, None)
            if conn is not None:
                code = os.waitstatus_to_exitcode(status)
                with contextlib.suppress(OSError):  # a killed launcher: nobody to tell
                    conn.sendall(_INT.pack(code if code >= 0 else 128 - code))
                conn.close()
        if listener.fileno() not in readable:
            continue
        conn, _ = listener.accept()
        fds: list[int] = []
        try:
            request, fds = _read_request(conn)
            if request.get("stats"):
                conn.sendall(json.dumps({"started": started}).encode())
                conn.close()
                continue
            served = _servable(request, base) if len(fds) == 3 else None
            if served is None:
                conn.sendall(_INT.pack(-1))
                conn.close()
                continue
            for stream in (sys.stdout, sys.stderr):
                stream.flush()
            pid = os.fork()
            if pid == 0:
                listener.close()
                conn.close()
                for other in waiting.values():
                    other.close()
                os.close(wake_r)
                os.close(wake_w)
                _run_child(served, request, fds, base)
            started += 1
            waiting[pid] = conn
            conn.sendall(_INT.pack(pid))
        except (OSError, ValueError):  # ConnectionError is an OSError
            conn.close()
        finally:
            for fd in fds:
                with contextlib.suppress(OSError):
                    os.close(fd)


_QUIET = True

if __name__ == "__main__":
    _QUIET = sys.argv[3] == "quiet"
    serve(sys.argv[1], int(sys.argv[2]))
    # The process that started it is gone without stopping it (killed): nobody else
    # removes its folder (the socket, the launcher, the log).
    shutil.rmtree(os.path.dirname(sys.argv[1]), ignore_errors=True)
