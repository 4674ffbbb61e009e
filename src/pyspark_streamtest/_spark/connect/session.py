"""Spark Connect: the pieces that let the driver run Connect code (issue 40).

A Spark Connect server runs as a plugin of a classic Spark JVM; a local one is a plugin of
this process's own JVM (what ``SparkSession.builder.remote("local[2]")`` starts), which the
driver also reaches through Py4J. So the driver keeps its memory streams, clock and sink
there, as for classic sessions, and meets the Connect client in the middle:

- each input's streaming DataFrame, built in the *server-side session* of the client
  (its ``SessionHolder``), is handed to the client as a Connect DataFrame over a cached
  relation (what Connect's own ``foreachBatch`` does with each batch): nothing enters
  the user's catalog, and the plan keeps the expression ids the driver follows;
- the Connect DataFrame a topology builds is planned by the server's own planner for
  that session (``SparkConnectPlanner.transformRelation`` of the client's ``Relation``)
  into a classic Dataset, which the driver starts with its own clock and sink.

PySpark 4.0+ (the wheel ships the server jar from 4.0; the server's session classes are
the same in 4.0-4.3). The client needs the ``connect`` extra's packages (grpcio,
grpcio-status, googleapis-common-protos, zstandard).

Connect mode is the whole process's: once ``SPARK_CONNECT_MODE_ENABLED`` is set, PySpark
gives Connect objects for ``pyspark.sql.functions`` and ``SparkSession.builder``
everywhere in it, so a process runs Connect tests or classic ones.
"""

from __future__ import annotations

import os
import threading
import uuid
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

from pyspark.sql import DataFrame, SparkSession

from ...errors import SparkConnectNotSupportedError, hide_our_frames
from ..jvm import JavaObject, Jvm
from ..query.memory_stream import wrap_dataframe
from .batches import BatchSessions, active

__tracebackhide__ = hide_our_frames

_PLUGIN = "org.apache.spark.sql.connect.SparkConnectPlugin"
_SERVICE = "org.apache.spark.sql.connect.service.SparkConnectService"
_SESSION_KEY = "org.apache.spark.sql.connect.service.SessionKey"


def server_settings(token: str, conf: dict[str, str] | None = None) -> dict[str, str]:
    """``conf`` with the settings that make a classic session's JVM a Connect server:
    the plugin (after any in ``conf``), a free port (the client is told which one: never
    Spark's fixed 15002, which two pytest workers would share) and the token clients
    must give."""
    settings = dict(conf or {})
    plugins = [p for p in settings.get("spark.plugins", "").split(",") if p.strip()]
    return {
        **settings,
        "spark.plugins": ",".join([*plugins, _PLUGIN] if _PLUGIN not in plugins else plugins),
        "spark.connect.grpc.binding.port": "0",
        "spark.connect.authenticate.token": token,
        # A test session may sit idle between tests longer than Connect's hour.
        "spark.connect.session.manager.defaultSessionTimeout": "24h",
    }


def new_token() -> str:
    return str(uuid.uuid4())


def require_server_jar() -> None:
    """Raise :class:`SparkConnectNotSupportedError` before a JVM starts where this
    PySpark's wheel has no Connect server jar (3.5): a context asked to load the server's
    plugin would fail to start with a class-not-found error."""
    import pyspark

    jars = Path(pyspark.__file__).parent / "jars"
    if jars.is_dir() and not any(jars.glob("spark-connect_*.jar")):
        raise SparkConnectNotSupportedError(
            f"PySpark {pyspark.__version__} ships no Spark Connect server (its Connect "
            "needs a jar downloaded with --packages, which these tests cannot fetch); use "
            "PySpark 4.0+ for Connect tests, or run without --streamtest-connect")


def require_connect_server(jvm: Jvm) -> None:
    """Raise :class:`SparkConnectNotSupportedError` where this Spark has no Connect server
    in its JVM (PySpark 3.5: the wheel ships no server jar)."""
    if not jvm.class_exists(_SESSION_KEY):
        raise SparkConnectNotSupportedError(
            "this PySpark has no Spark Connect server in its JVM (PySpark 3.5's wheel ships "
            "none; its Connect needs a jar downloaded with --packages); use PySpark 4.0+ "
            "for Connect tests, or a classic session")


def server_port(jvm: Jvm) -> int:
    """The port the JVM's Connect server listens on."""
    require_connect_server(jvm)
    return int(jvm.scala_object(_SERVICE).localPort())


_made: list[Any] = []


def made_session() -> Any | None:
    """The Connect session :func:`connect_client` made in this process, while it runs."""
    if _made and not _is_stopped(_made[-1]):
        return _made[-1]
    return None


def _is_stopped(client: Any) -> bool:
    return bool(getattr(client, "is_stopped", False))


def connect_client(port: int, token: str) -> Any:
    """A Connect session of the local server on ``port``, as PySpark's own
    ``remote("local[...]")`` makes one: this process goes into Connect mode (PySpark's
    ``SPARK_CONNECT_MODE_ENABLED``, and ``SPARK_LOCAL_REMOTE`` so that a job's
    ``SparkSession.builder.getOrCreate()`` gets this session too). The host is
    ``localhost``: with a token, PySpark's client uses a plain channel only for it."""
    os.environ["SPARK_CONNECT_MODE_ENABLED"] = "1"
    os.environ["SPARK_LOCAL_REMOTE"] = "1"
    from pyspark.sql.connect.session import SparkSession as ConnectSession

    # create(), not getOrCreate(): that would return any Connect session made before
    # (of another server, say), whatever the URL. This one is the process's default and
    # active session from now on, as the plugin's session must be.
    client = ConnectSession.builder.remote(f"sc://localhost:{port}/;token={token}").create()
    with ConnectSession._lock:
        ConnectSession._default_session = client
    ConnectSession._active_session.session = client
    _made.append(client)
    return client


def session_holder(jvm: Jvm, client: Any) -> JavaObject:
    """The server's ``SessionHolder`` of the Connect session ``client``: its classic
    session is where the driver builds inputs and starts queries. The server makes it on
    the client's first request, so one is made first (a setting read)."""
    client.conf.get("spark.sql.session.timeZone")
    key = jvm.jvm.org.apache.spark.sql.connect.service.SessionKey(
        client.client._user_id or "", client.session_id)
    found = jvm.scala_object(_SERVICE).sessionManager().getIsolatedSessionIfPresent(key)
    if found.isEmpty():
        raise SparkConnectNotSupportedError(
            "this Spark Connect session is not served by this process's JVM (a remote "
            "sc://host server?); the driver needs the local server it can reach: use the "
            "plugin's Connect mode, or SparkSession.builder.remote('local[2]')")
    return found.get()


def server_session(jvm: Jvm, holder: JavaObject) -> SparkSession:
    """A classic PySpark session over the holder's server-side session (PySpark keeps its
    own first session as the process's)."""
    from pyspark import SparkContext

    context = SparkContext._active_spark_context
    if context is None:
        raise SparkConnectNotSupportedError(
            "no SparkContext in this process: the driver reaches a Connect server through "
            "the JVM of a local one only")
    return SparkSession(context, jsparkSession=holder.session())


def to_connect(holder: JavaObject, client: Any, frame: DataFrame) -> tuple[str, Any]:
    """``frame`` (a classic DataFrame of the holder's session) as a Connect DataFrame of
    ``client``: a cached relation the server plans as ``frame``'s own plan. Returns its
    id (for :func:`forget`, which the caller must call: the relation is never removed
    by the garbage collector, see :func:`_relation_class`) and the Connect DataFrame."""
    from pyspark.sql.connect.dataframe import DataFrame as ConnectDataFrame

    relation_id = str(uuid.uuid4())
    holder.cacheDataFrameById(relation_id, frame._jdf)
    return relation_id, ConnectDataFrame(_relation_class()(relation_id, client), client)


_RELATION: list[type] = []


def _relation_class() -> type:
    """PySpark's ``CachedRemoteRelation`` (what ``_create_remote_dataframe`` makes), but
    removed by the driver (:func:`forget`, through Py4J) and never by its ``__del__``.
    PySpark's ``__del__`` sends a blocking gRPC request from whatever thread the garbage
    collector happens to run on; seen here: one such request, started while a thread
    began, waited forever for a lock held while the main thread's own request (a schema
    parse) waited for its answer, and the test run hung."""
    if not _RELATION:
        from pyspark.sql.connect.plan import CachedRemoteRelation

        class DriverRelation(CachedRemoteRelation):
            def __del__(self) -> None:
                return None

        _RELATION.append(DriverRelation)
    return _RELATION[0]


def forget(holder: JavaObject, relation_ids: list[str]) -> None:
    for relation_id in relation_ids:
        holder.removeCachedDataFrame(relation_id)


def to_classic(jvm: Jvm, holder: JavaObject, frame: Any) -> DataFrame:
    """The Connect DataFrame ``frame`` planned by the server's planner for its session
    (as an ``ExecutePlan`` request would be) into a classic DataFrame of ``jvm``'s
    session (the holder's). The client's ``Relation``, not ``to_proto``'s ``Plan``,
    which PySpark 4.1+ may compress."""
    relation_bytes = frame._plan.plan(frame._session.client).SerializeToString()
    relation = jvm.jvm.org.apache.spark.connect.proto.Relation.parseFrom(
        bytearray(relation_bytes))
    sessions = jvm.jvm.org.apache.spark.sql.classic.SparkSession
    previous = sessions.getActiveSession()
    sessions.setActiveSession(holder.session())  # the parser and settings of its session
    try:
        planner = jvm.jvm.org.apache.spark.sql.connect.planner.SparkConnectPlanner(
            holder, jvm.none())
        plan = planner.transformRelation(relation)
        dataset = jvm.jvm.org.apache.spark.sql.classic.Dataset.ofRows(holder.session(), plan)
    finally:
        if previous.isDefined():
            sessions.setActiveSession(previous.get())
        else:
            sessions.clearActiveSession()
    return wrap_dataframe(jvm, dataset)


def is_connect_session(spark: object) -> bool:
    """Whether ``spark`` is a Spark Connect session (PySpark's client classes)."""
    return type(spark).__module__.startswith("pyspark.sql.connect")


def connect_client_has(feature: str) -> bool:
    """Whether this PySpark's Connect client offers ``feature`` (a ``Feature`` value):
    4.0's ``GroupedData`` has no ``transformWithState(InPandas)``."""
    methods = {"transform_with_state_in_pandas": "transformWithStateInPandas",
               "transform_with_state": "transformWithState"}
    if feature not in methods:
        return True
    from pyspark.sql.connect.group import GroupedData

    return hasattr(GroupedData, methods[feature])


def process_jvm(endpoint: str = "") -> Jvm:
    """The JVM of this process's own SparkContext (the one a local Connect server runs
    in); ``endpoint`` names the Connect session's server in the error without one."""
    from pyspark import SparkContext

    first = SparkSession._instantiatedSession  # the classic one: in Connect mode,
    # getActiveSession() answers with the Connect session
    if SparkContext._active_spark_context is None or first is None:
        raise SparkConnectNotSupportedError(
            f"this Spark Connect session{f' ({endpoint})' if endpoint else ''} is not "
            "served by a JVM of this process (a remote sc://host server?); the driver "
            "needs the local server it can reach: use the "
            "plugin's Connect mode (--streamtest-connect), or "
            "SparkSession.builder.remote('local[2]')")
    return Jvm(first)


def _endpoint(client: Any) -> str:
    """``host:port`` of the Connect session ``client``'s server."""
    return str(getattr(getattr(client.client, "_builder", None), "endpoint", ""))


def _check_served_here(jvm: Jvm, client: Any) -> None:
    """Refuse, before any request, a Connect session whose server is not the one in this
    process's JVM (a remote ``sc://host``: its requests would wait for a server the
    driver cannot reach into)."""
    endpoint = _endpoint(client)
    host, _, port = endpoint.rpartition(":")
    try:
        here = server_port(jvm)
    except SparkConnectNotSupportedError:  # no Connect server in this Spark at all (3.5)
        raise
    except Exception:  # the JVM's context runs no Connect server
        here = None
    if host.strip("[]") not in ("localhost", "127.0.0.1", "::1") or port != str(here):
        raise SparkConnectNotSupportedError(
            f"this Spark Connect session's server ({endpoint or 'unknown'}) is not the one "
            "in this process's JVM"
            + (f" (localhost:{here})" if here is not None else " (which runs none)")
            + "; the driver runs its queries in that server's JVM, so it needs a session "
            "of it: use the plugin's Connect mode (--streamtest-connect), or "
            "SparkSession.builder.remote('local[2]')")


class ConnectLink:
    """The driver's side of one Connect session: the server's session it runs in, and
    the conversions between the client's DataFrames and the JVM's.

    Every Connect DataFrame it hands out is a cached relation of the session's holder,
    kept until :meth:`close` (the client may send its own removal when its Python object
    is collected; removing an id twice is harmless)."""

    def __init__(self, client: Any) -> None:
        base = process_jvm(_endpoint(client))
        _check_served_here(base, client)
        self.client = client
        self.holder = session_holder(base, client)
        self.server = server_session(base, self.holder)
        """A classic session over the client's own server-side session."""
        self.jvm = Jvm(self.server)
        self._ids: list[str] = []
        self._lock = threading.Lock()  # foreachBatch calls come on stream threads
        self._batches = BatchSessions(self.jvm, client, partial(session_holder, base))

    def to_connect(self, frame: DataFrame) -> Any:
        """``frame`` (of the server's session) as the client's DataFrame."""
        relation_id, connect_frame = to_connect(self.holder, self.client, frame)
        with self._lock:
            self._ids.append(relation_id)
        return connect_frame

    def to_classic(self, frame: DataFrame) -> DataFrame:
        """A Connect DataFrame of the client, planned by the server (a classic one is
        returned as it is)."""
        if not is_connect_session(frame.sparkSession):
            return frame
        self._refuse_artifacts()
        return to_classic(self.jvm, self.holder, frame)

    def _refuse_artifacts(self) -> None:
        """Raise where the session holds artifacts its queries' tasks would need: a
        query the driver starts does not carry the session's artifact state (Connect
        starts its own queries inside it), so its tasks would run without them."""
        manager = self.holder.artifactManager()
        # (Python files, like other files, are among the context-relative paths.)
        count = (manager.pythonIncludeList().size() + manager.jarsList().size()
                 + manager.sparkContextRelativePaths().size())
        if count:
            raise SparkConnectNotSupportedError(
                f"this Spark Connect session has {count} artifact{'s' * (count > 1)} added "
                "with spark.addArtifact(s); the driver's queries do not see a "
                "session's artifacts (not supported yet). Put the code on the test's "
                "PYTHONPATH (Python files) or in the session's spark.jars instead")

    def batch_function(
        self, function: Callable[[DataFrame, int], object],
    ) -> Callable[[DataFrame, int], object]:
        """``function`` called with each batch as a Connect DataFrame, as Connect's own
        ``foreachBatch`` calls it: a relation cached for the call and removed after, of
        the session this PySpark's Connect binds a batch to (see :mod:`.connect_batches`)."""

        def call(frame: DataFrame, batch_id: int) -> object:
            session, holder = self._batches.session_of(frame)
            holder = self.holder if holder is None else holder
            relation_id, connect_frame = to_connect(holder, session, frame)
            try:
                # the batch's session is the active one, as in Connect's worker process
                with active(session):
                    return function(connect_frame, batch_id)
            finally:
                forget(holder, [relation_id])

        return call

    def close(self) -> None:
        with self._lock:
            ids, self._ids = self._ids, []
        try:
            forget(self.holder, ids)
        finally:
            self._batches.close()
