"""What Spark runs as "the Python executable" when warm workers are on: a launcher that
asks the warm worker server (``_worker_server.py``) for a forked, ready worker, and
otherwise starts the real interpreter in its own place.

Run by path as ``python -I -S _worker_launcher.py REAL_PYTHON SOCKET ARGS...`` (a shell
wrapper supplies the first three), never imported: it imports nothing but the standard
library, so it starts in a few milliseconds on a loaded machine. It hands the server its
arguments, environment, working directory and fds 0-2, forwards the signals Spark sends
it (``Process.destroy()`` is SIGTERM) to the worker, and exits with the worker's status.
Anything the server does not serve (Spark's own daemon, other command lines, a server
that is not there) runs as ``REAL_PYTHON ARGS...`` by ``exec``, exactly as without it.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import struct
import sys

# Spark's daemon forks its workers itself: it starts as itself.
STARTS_ITSELF = ("pyspark.daemon",)

_INT = struct.Struct("!i")


def _exec_real(real: str, args: list[str]) -> None:
    os.execv(real, [real, *args])


def _read_int(conn: socket.socket) -> int | None:
    data = b""
    while len(data) < 4:
        try:
            more = conn.recv(4 - len(data))
        except InterruptedError:
            continue
        if not more:
            return None
        data += more
    return int(_INT.unpack(data)[0])


def main(real: str, path: str, args: list[str]) -> None:
    if len(args) < 2 or args[0] != "-m" or args[1] in STARTS_ITSELF:
        _exec_real(real, args)
    conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        conn.connect(path)
        body = json.dumps({"argv": args, "env": dict(os.environ), "cwd": os.getcwd()})
        payload = _INT.pack(len(body.encode())) + body.encode()
        sent = socket.send_fds(conn, [payload], [0, 1, 2])
        conn.sendall(payload[sent:])
        pid = _read_int(conn)
    except OSError:
        pid = None
    if pid is None or pid < 0:
        conn.close()
        _exec_real(real, args)
        return

    def forward(signum: int, _frame: object) -> None:
        try:  # noqa: SIM105 - importing contextlib would slow the launcher's start
            os.kill(pid, signum)
        except OSError:
            pass  # already gone

    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGQUIT):
        signal.signal(sig, forward)
    status = _read_int(conn)
    os._exit(1 if status is None else status)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], sys.argv[3:])
