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
from weakref import WeakKeyDictionary

from ...errors import hide_our_frames
from ..jvm import JavaObject, Jvm

__tracebackhide__ = hide_our_frames

_SERVICE = "org.apache.spark.sql.connect.service.SparkConnectService"
USE_CLONED_SESSION = "spark.sql.connect.streaming.foreachBatch.useClonedSession"


class BatchSessions:
    """The Connect session each batch of a ``foreachBatch`` output is handed in."""

    def __init__(self, jvm: Jvm, client: Any, holder_of: Callable[[Any], JavaObject]) -> None:
        self._jvm = jvm
        self._client = client
        self._holder_of = holder_of
        self._seen: list[tuple[JavaObject, Any, JavaObject | None]] = []
        """(a query run's classic session, the Connect session its batches are handed in,
        that session's holder, None for the client's own)."""
        self._clone_ids: list[str] = []
        self._lock = threading.Lock()

    def session_of(self, frame: Any) -> tuple[Any, JavaObject | None]:
        """The Connect session to hand ``frame``'s batch in, and its holder (None: the
        client's own session). Decided once per query run (its session): whether to
        clone is the setting's value then, as Connect reads it when a query starts."""
        if not _registers_clones(self._jvm):  # 4.0-4.2: always the client's own
            return self._client, None
        query_session = frame._jdf.sparkSession()
        with self._lock:
            for known, session, holder in self._seen:
                if known.equals(query_session):
                    return session, holder
            session, holder = self._client, None
            if str(self._jvm.spark.conf.get(USE_CLONED_SESSION, "true")).lower() == "true":
                session_id = str(uuid.uuid4())
                _manager(self._jvm).registerExistingSession(
                    self._client.client._user_id or "", session_id, query_session)
                session = _connect_to(self._client, session_id)
                holder = self._holder_of(session)
                self._clone_ids.append(session_id)
            self._seen.append((query_session, session, holder))
            return session, holder

    def close(self) -> None:
        """Close the clones' Connect sessions (their queries have stopped)."""
        with self._lock:
            seen, self._seen = self._seen, []
            clone_ids, self._clone_ids = self._clone_ids, []
        for _, session, holder in seen:
            if holder is not None:
                session.client.close()
        keys = self._jvm.jvm.org.apache.spark.sql.connect.service.SessionKey
        for session_id in clone_ids:
            _manager(self._jvm).closeSession(
                keys(self._client.client._user_id or "", session_id), False)


_REGISTERS: WeakKeyDictionary[object, bool] = WeakKeyDictionary()


def _manager(jvm: Jvm) -> JavaObject:
    return jvm.scala_object(_SERVICE).sessionManager()


def _registers_clones(jvm: Jvm) -> bool:
    """Whether the server registers a query's cloned session for its foreachBatch
    batches (4.3's ``registerExistingSession``); looked up once per JVM."""
    found = _REGISTERS.get(jvm.gateway)
    if found is None:
        found = bool(jvm.method_param_types(_manager(jvm).getClass(),
                                            "registerExistingSession"))
        _REGISTERS[jvm.gateway] = found
    return found


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
