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

from ..errors import hide_our_frames

__tracebackhide__ = hide_our_frames

_JOIN_TIMEOUT_S = 5.0
"""How long closing waits for a connection's Python thread to end (it ends at once)."""


_forgotten: set[str] = set()
_forgotten_lock = threading.Lock()


class _ForgottenProxyFilter(logging.Filter):
    """Py4J warns when the JVM garbage-collects a proxy no longer in the pool; for the
    proxies we removed ourselves that is expected, so the warning is dropped."""

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        if not message.startswith("Tried to garbage collect non existing python proxy"):
            return True
        proxy_id = message.rsplit(" ", 1)[-1]
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
