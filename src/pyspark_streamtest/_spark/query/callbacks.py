"""The Py4J callback connections that serve one query's stream thread.

In PySpark's pinned-thread mode (the default), each JVM thread that calls into Python
gets its own connection to the callback server, served by its own Python thread. A
query's stream thread calls our clock and sink, so every query start opens one; the
JVM never closes it when the stream thread ends (neither does plain PySpark), so a
thread and a socket would stay behind per start. We note the connection on each
callback and close it once the stream thread has ended.
"""

from __future__ import annotations

import contextlib
import logging
import socket
import threading
from typing import Any

from ...errors import WarmJvmError, hide_our_frames

__tracebackhide__ = hide_our_frames

_JOIN_TIMEOUT_S = 5.0
"""How long closing waits for a connection's Python thread to end (it ends at once)."""


_forgotten: set[str] = set()
_forgotten_lock = threading.Lock()

PROXY_RANGE = 10**12
"""How many proxy ids each run attached to a warm JVM has: run ``n`` of a JVM numbers
its Python proxies from ``n * PROXY_RANGE`` (see :func:`number_proxies_from`)."""

_first_own_proxy = 0
"""The first proxy number of this process's range; lower ones are earlier runs'."""


def number_proxies_from(gateway: Any, run: int) -> None:
    """Give this process's Python proxies ids no earlier run in the same JVM had: the
    ``run``-th run attached to a JVM numbers them from ``run * PROXY_RANGE``.

    Py4J numbers the Python objects it hands to the JVM ``p0``, ``p1``, ... from zero in
    every process, and a JVM-side proxy, when the JVM's garbage collector finalizes it,
    sends "forget proxy pN" to whichever Python process is the gateway's callback peer
    *then*. A warm JVM outlives its runs, so a proxy of an earlier run (a sink, a clock,
    a ``foreachBatch`` function, a listener) finalized after the next run attached made
    that run forget its own ``pN``: the JVM's next call to it failed with "Object ID
    unknown" and the batch with it. With ranges that cannot overlap, such a late
    "forget" names no object of this run (Py4J then only warns, and the warning is
    dropped here). Call before the first object is handed to the JVM."""
    global _first_own_proxy
    pool = getattr(getattr(gateway, "gateway_property", None), "pool", None)
    if pool is None:
        return
    first = run * PROXY_RANGE
    with pool.lock:
        if pool.dict:
            raise WarmJvmError("Python objects were handed to the JVM before their proxy "
                               "ids were given a range of their own; this is a bug of "
                               "pyspark-streamtest: turn warm JVMs off "
                               "(--streamtest-warm-jvm=off) and report it")
        pool.next_id = first
    _first_own_proxy = first


def _earlier_runs(proxy_id: str) -> bool:
    """Whether ``proxy_id`` (``p123``) is of an earlier run's range."""
    number = proxy_id[1:]
    return number.isdigit() and int(number) < _first_own_proxy


class _ForgottenProxyFilter(logging.Filter):
    """Py4J warns when the JVM garbage-collects a proxy no longer in the pool; for the
    proxies we removed ourselves, and for an earlier run's proxies on a warm JVM (see
    :func:`number_proxies_from`), that is expected, so the warning is dropped."""

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        if not message.startswith("Tried to garbage collect non existing python proxy"):
            return True
        proxy_id = message.rsplit(" ", 1)[-1]
        if _earlier_runs(proxy_id):
            return False
        with _forgotten_lock:
            if proxy_id in _forgotten:
                _forgotten.discard(proxy_id)
                return False
        return True


logging.getLogger("py4j.java_gateway").addFilter(_ForgottenProxyFilter())

_REPORTED = "_streamtest_reported"


def mark_reported(error: BaseException) -> None:
    """Note that the driver reports ``error`` (raised in one of our callbacks) itself, as
    a typed error: Py4J's log record of it, with the same traceback, is dropped."""
    with contextlib.suppress(AttributeError, TypeError):  # no attributes: logged
        setattr(error, _REPORTED, True)


class _ReportedErrorFilter(logging.Filter):
    """Py4J logs, with its traceback, every exception a Python callback raises to the
    JVM; for the ones the driver reports itself that would say it all twice."""

    def filter(self, record: logging.LogRecord) -> bool:
        error = record.exc_info[1] if record.exc_info else None
        return not getattr(error, _REPORTED, False)


for _logger in ("py4j.java_gateway", "py4j.clientserver"):
    logging.getLogger(_logger).addFilter(_ReportedErrorFilter())


def forget_proxies(gateway: Any, *objects: object) -> None:
    """Take ``objects`` (Python objects the JVM called, e.g. a stopped query's clock and
    sink) out of Py4J's proxy pool, so they are freed now rather than whenever the JVM
    collects its proxies of them. Only for objects the JVM will never call again."""
    pool = getattr(getattr(gateway, "gateway_property", None), "pool", None)
    if pool is None:
        return
    with pool.lock:
        ids = [key for key, value in pool.dict.items() if any(value is o for o in objects)]
        for key in ids:
            del pool.dict[key]
    with _forgotten_lock:
        _forgotten.update(ids)


def reset_session_thread_connection(spark: Any) -> None:
    """:func:`reset_thread_connection` of the gateway of ``spark`` (a classic session)."""
    reset_thread_connection(spark.sparkContext._gateway)


def reset_thread_connection(gateway: Any) -> None:
    """Close this thread's Py4J connection to the JVM, so its next call opens a fresh one.

    An interrupt (``KeyboardInterrupt``) that lands while this thread waits for the
    JVM's answer leaves that answer unread on the connection: the next call would read
    it as its own. Py4J opens a new connection for a thread whose connection is closed.
    """
    client = getattr(gateway, "_gateway_client", None)
    get = getattr(client, "get_thread_connection", None)
    connection = get() if get is not None else None
    if connection is not None:
        with contextlib.suppress(Exception):
            connection.close(True)


class CallbackConnections:
    """The Python ends of the callback connections one stream thread used."""

    def __init__(self, gateway: Any) -> None:
        client = getattr(gateway, "_gateway_client", None)
        # Only ClientServer (pinned-thread mode) binds a connection to a thread.
        self._thread_connection = getattr(client, "get_thread_connection", None)
        self._lock = threading.Lock()
        self._connections: dict[int, tuple[Any, threading.Thread]] = {}

    def note(self) -> None:
        """Remember the connection serving the calling callback thread."""
        if self._thread_connection is None:
            return
        connection = self._thread_connection()
        if connection is not None:
            with self._lock:
                self._connections.setdefault(
                    id(connection), (connection, threading.current_thread())
                )

    def close(self) -> None:
        """Shut the remembered connections down and wait (bounded) for their Python
        threads to end. Call only once the JVM thread they served has ended.

        Shutting the socket down (rather than closing it) wakes the serving thread,
        which is blocked reading it; that thread then closes the connection itself.
        """
        with self._lock:
            noted, self._connections = list(self._connections.values()), {}
        for connection, _ in noted:
            sock = getattr(connection, "socket", None)
            if sock is not None:
                with contextlib.suppress(OSError):
                    sock.shutdown(socket.SHUT_RDWR)
        for _, thread in noted:
            if thread is not threading.current_thread():
                thread.join(_JOIN_TIMEOUT_S)
