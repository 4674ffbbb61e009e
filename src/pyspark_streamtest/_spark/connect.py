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
import uuid
from typing import Any

from pyspark.sql import DataFrame, SparkSession

from ..errors import SparkConnectNotSupportedError, hide_our_frames
from .jvm import JavaObject, Jvm
from .memory_stream import wrap_dataframe

__tracebackhide__ = hide_our_frames

_PLUGIN = "org.apache.spark.sql.connect.SparkConnectPlugin"
_SERVICE = "org.apache.spark.sql.connect.service.SparkConnectService"
_SESSION_KEY = "org.apache.spark.sql.connect.service.SessionKey"


def server_settings(token: str) -> dict[str, str]:
    """The settings that make a classic session's JVM a Connect server: the plugin, a
    free port (the client is told which one: never Spark's fixed 15002, which two pytest
    workers would share) and the token clients must give; added to the session's."""
    return {
        "spark.plugins": _PLUGIN,
        "spark.connect.grpc.binding.port": "0",
        "spark.connect.authenticate.token": token,
        # A test session may sit idle between tests longer than Connect's hour.
        "spark.connect.session.manager.defaultSessionTimeout": "24h",
    }


def new_token() -> str:
    return str(uuid.uuid4())


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


def connect_client(port: int, token: str) -> Any:
    """A Connect session of the local server on ``port``, as PySpark's own
    ``remote("local[...]")`` makes one: this process goes into Connect mode (PySpark's
    ``SPARK_CONNECT_MODE_ENABLED``, and ``SPARK_LOCAL_REMOTE`` so that a job's
    ``SparkSession.builder.getOrCreate()`` gets this session too). The host is
    ``localhost``: with a token, PySpark's client uses a plain channel only for it."""
    os.environ["SPARK_CONNECT_MODE_ENABLED"] = "1"
    os.environ["SPARK_LOCAL_REMOTE"] = "1"
    from pyspark.sql.connect.session import SparkSession as ConnectSession

    return ConnectSession.builder.remote(f"sc://localhost:{port}/;token={token}").getOrCreate()


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
    id (for :func:`forget`) and the Connect DataFrame."""
    relation_id = str(uuid.uuid4())
    holder.cacheDataFrameById(relation_id, frame._jdf)
    return relation_id, client._create_remote_dataframe(relation_id)


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
