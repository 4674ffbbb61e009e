"""The session a ``foreachBatch`` function's batch belongs to over Spark Connect.

PySpark 4.0-4.2's Connect hands the function its batch as a DataFrame of the session that
started the query (the client's own). PySpark 4.3 binds it to the query's own session, a
clone of that one (``spark.sql.connect.streaming.foreachBatch.useClonedSession``, true by
default), as classic ``foreachBatch`` does: the server registers the clone under a new
session id (``SparkConnectSessionManager.registerExistingSession``) and its worker opens a
Connect session on it, which is also the active and default session while the function
runs. :class:`BatchSessions` does the same in the test process: one Connect session per
query run's clone, closed with the driver.
"""

from __future__ import annotations

import threading
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from ..errors import hide_our_frames
from .jvm import JavaObject, Jvm

__tracebackhide__ = hide_our_frames

_SERVICE = "org.apache.spark.sql.connect.service.SparkConnectService"
USE_CLONED_SESSION = "spark.sql.connect.streaming.foreachBatch.useClonedSession"


class BatchSessions:
    """The Connect session each batch of a ``foreachBatch`` output is handed in."""

    def __init__(self, jvm: Jvm, client: Any, holder_of: Callable[[Any], JavaObject]) -> None:
        self._jvm = jvm
        self._client = client
        self._holder_of = holder_of
        manager = jvm.scala_object(_SERVICE).sessionManager()
        self._manager = manager
        self._supported = any(
            m.getName() == "registerExistingSession" for m in manager.getClass().getMethods())
        self._clones: list[tuple[JavaObject, str, Any, JavaObject]] = []
        """(the query's classic session, its Connect session id, client, holder)."""
        self._lock = threading.Lock()

    def session_of(self, frame: Any) -> tuple[Any, JavaObject | None]:
        """The Connect session to hand ``frame``'s batch in, and its holder (None: the
        client's own session)."""
        if not self._supported or str(self._jvm.spark.conf.get(
                USE_CLONED_SESSION, "true")).lower() != "true":
            return self._client, None
        query_session = frame._jdf.sparkSession()
        with self._lock:
            for known, _, clone, holder in self._clones:
                if known.equals(query_session):
                    return clone, holder
            session_id = str(uuid.uuid4())
            user_id = self._client.client._user_id or ""
            self._manager.registerExistingSession(user_id, session_id, query_session)
            clone = _connect_to(self._client, session_id)
            holder = self._holder_of(clone)
            self._clones.append((query_session, session_id, clone, holder))
            return clone, holder

    def close(self) -> None:
        """Close the clones' Connect sessions (their queries have stopped)."""
        with self._lock:
            clones, self._clones = self._clones, []
        keys = self._jvm.jvm.org.apache.spark.sql.connect.service.SessionKey
        for _, session_id, clone, _ in clones:
            clone.client.close()
            self._manager.closeSession(keys(self._client.client._user_id or "", session_id),
                                       False)


def _connect_to(client: Any, session_id: str) -> Any:
    """A Connect session of ``client``'s server on the server-side session ``session_id``."""
    from pyspark.sql.connect.session import SparkSession as ConnectSession

    builder = client.client._builder
    user = client.client._user_id
    url = (f"sc://{builder.endpoint}/;token={builder.token};session_id={session_id}"
           + (f";user_id={user}" if user else ""))
    return ConnectSession.builder.remote(url).create()


@contextmanager
def active(session: Any) -> Iterator[None]:
    """``session`` as the active and default Connect session while the function runs, as
    in Connect's foreachBatch worker process (whose one session is the batch's: 4.3's
    worker makes its clone so); put back after."""
    from pyspark.sql.connect.session import SparkSession as ConnectSession

    with ConnectSession._lock:
        default = ConnectSession._default_session
        ConnectSession._default_session = session
    local = ConnectSession._active_session
    before = getattr(local, "session", None)
    local.session = session
    try:
        yield
    finally:
        local.session = before
        with ConnectSession._lock:
            ConnectSession._default_session = default
