"""Spark Declarative Pipelines run by Spark's own engine in this process's JVM.

``spark-pipelines run`` starts a JVM with a local Spark Connect server, registers the
pipeline's definitions through a Connect client (PySpark's ``register_definitions``:
the Python files imported with ``spark`` injected, the SQL files sent as text) and asks
the server to run one update (``StartRun``), printing the engine's events. Here the
server is the one in the test's own JVM (started on first use, on a free port, and kept
for the session; or the one ``--streamtest-connect`` already runs), and the client is a
Connect session of it made for one pipeline. Nothing of the engine is replaced: the
same registration, the same ``StartRun``, the same flows and checkpoints.

What the driver adds, all through public server classes:

- the client's server-side ``SessionHolder`` lets one graph run update after update:
  the engine keeps a finished update's execution until its client goes, and refuses a
  second ``StartRun`` of the graph (``EXECUTION_STATE_EXECUTE_HOLDER_ALREADY_EXISTS``)
  until ``removeAllPipelineExecutions()``;
- a small JVM listener (compiled with Janino, as the query clock is) on that session's
  streaming queries records each flow's progress: the flows' queries are named by the
  flows' full names, and their batch ids go on across updates;
- the engine's restart delay between attempts of a failed flow
  (``spark.sql.pipelines.execution.watchdog.minRetryTime``, 5 s, doubling) is 1 s: the
  number of attempts (``spark.sql.pipelines.maxFlowRetryAttempts``) is the engine's.

PySpark's Connect functions act only while the process is in Connect mode
(``SPARK_CONNECT_MODE_ENABLED``); a classic test process is put in it while the client is
made and the definitions are imported, and back after (see :func:`connect_mode`).

PySpark 4.1+ (``pyspark.pipelines``).
"""

from __future__ import annotations

import contextlib
import os
import re
import threading
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ...errors import hide_our_frames
from ..jvm import JavaObject, Jvm, compiled_class
from ..versions import capabilities
from .session import new_token, server_session, session_holder

__tracebackhide__ = hide_our_frames

__all__ = [
    "PipelineRun",
    "RunOutcome",
    "classic_jvm",
    "connect_mode",
    "pipelines_available",
]

_SERVICE = "org.apache.spark.sql.connect.service.SparkConnectService"
_LISTENER = "PysparkStreamtestFlowListener"
_LISTENER_SOURCE = """
import org.apache.spark.sql.streaming.StreamingQueryListener;
public class PysparkStreamtestFlowListener extends StreamingQueryListener {
    private final java.util.ArrayList events = new java.util.ArrayList();
    public synchronized void onQueryStarted(StreamingQueryListener.QueryStartedEvent e) {
        events.add("S\\t" + e.id() + "\\t" + e.name());
    }
    public synchronized void onQueryProgress(StreamingQueryListener.QueryProgressEvent e) {
        events.add("P\\t" + e.progress().id() + "\\t" + e.progress().json());
    }
    public synchronized void onQueryTerminated(StreamingQueryListener.QueryTerminatedEvent e) {
        events.add("T\\t" + e.id() + "\\t"
                   + (e.exception().isDefined() ? (String) e.exception().get() : ""));
    }
    public synchronized String[] drain() {
        String[] out = (String[]) events.toArray(new String[0]);
        events.clear();
        return out;
    }
}
"""

_RETRY_CONF = {
    "spark.sql.pipelines.execution.watchdog.minRetryTime": "1s",
    "spark.sql.pipelines.execution.watchdog.maxRetryTime": "1s",
}
"""The engine waits 5 s (doubling up to an hour) of real time before it restarts a
failed flow. A test's time is not the wall clock's, so the driver restarts after the
least the engine allows (1 s); how many attempts a flow gets is still
``spark.sql.pipelines.maxFlowRetryAttempts``. A pipeline's configuration may set
either."""


def pipelines_available() -> bool:
    """Whether this PySpark has Spark Declarative Pipelines (4.1+) and its Connect
    client's packages."""
    try:
        import pyspark.pipelines.cli
        import pyspark.sql.connect.session  # noqa: F401
    except ImportError:
        return False
    return True


@contextlib.contextmanager
def connect_mode(session: Any = None) -> Iterator[None]:
    """The process in PySpark's Connect mode for a while (a classic test process goes
    back to classic after; one in Connect mode already stays so), with ``session`` (a
    Connect session) the default and active one meanwhile, as the ``spark-pipelines``
    command's own session is in its process. The process's default and active Connect
    sessions are restored after."""
    from pyspark.sql.connect.session import SparkSession as ConnectSession

    before = os.environ.get("SPARK_CONNECT_MODE_ENABLED")
    default = ConnectSession._default_session
    active = getattr(ConnectSession._active_session, "session", None)
    os.environ["SPARK_CONNECT_MODE_ENABLED"] = "1"
    if session is not None:
        with ConnectSession._lock:
            ConnectSession._default_session = session
        ConnectSession._active_session.session = session
    try:
        yield
    finally:
        if before is None:
            os.environ.pop("SPARK_CONNECT_MODE_ENABLED", None)
        else:
            os.environ["SPARK_CONNECT_MODE_ENABLED"] = before
        with ConnectSession._lock:
            ConnectSession._default_session = default
        ConnectSession._active_session.session = active


def _server(jvm: Jvm) -> tuple[int, str]:
    """The port and token of the Connect server in ``jvm``, started on a free port with
    a new token if none serves this SparkContext (about 0.6 s, once per context).

    The service is one per JVM, and a warm JVM outlives its SparkContexts: a server an
    earlier context started (in an earlier run) still listens, for that context's
    sessions, and this context's conf has no token for it. Such a server is stopped and
    started anew for this context."""
    service = jvm.scala_object(_SERVICE)
    context = jvm.jvm.org.apache.spark.SparkContext.getOrCreate()
    conf = context.conf()
    token = str(conf.get("spark.connect.authenticate.token", "") or os.environ.get(
        "SPARK_CONNECT_AUTHENTICATE_TOKEN", ""))
    running = bool(service.started()) and not bool(service.stopped())
    if running and token:
        return int(service.localPort()), token
    if running:
        service.stop(jvm.none(), jvm.none())
    getattr(service, "started_$eq")(False)
    getattr(service, "stopped_$eq")(False)
    token = new_token()
    conf.set("spark.connect.grpc.binding.port", "0")
    conf.set("spark.connect.authenticate.token", token)
    conf.set("spark.connect.session.manager.defaultSessionTimeout", "24h")
    service.start(context)
    return int(service.localPort()), token


def _listener(jvm: Jvm) -> JavaObject:
    return compiled_class(jvm, _LISTENER_SOURCE, _LISTENER,
                          "org.apache.spark.sql.streaming.StreamingQueryListener").newInstance()


@dataclass(frozen=True)
class RunOutcome:
    """What one ``StartRun`` left: the engine's event messages in order, the flows'
    query events (``("S"|"P"|"T", query id, text)``: started with its name, a progress
    as JSON, terminated with its error text), and the error that ended the run."""

    messages: tuple[str, ...]
    query_events: tuple[tuple[str, str, str], ...]
    error: BaseException | None
    timed_out: bool = False


class PipelineRun:
    """One pipeline's graph in the server of ``spark``'s JVM: a client, its graph, a
    private database, and the updates run on it."""

    def __init__(self, jvm: Jvm, *, database: str) -> None:
        self._jvm = jvm
        self.database = database
        port, token = _server(jvm)
        from pyspark.sql.connect.session import SparkSession as ConnectSession

        with connect_mode():
            self.client: Any = ConnectSession.builder.remote(
                f"sc://localhost:{port}/;token={token}").create()
        self._holder = session_holder(jvm, self.client)
        self.server = server_session(jvm, self._holder)
        """A classic session over the client's server-side session (its catalog is
        the JVM's, shared with the test's session)."""
        self._listener = _listener(jvm)
        self._holder.session().streams().addListener(self._listener)
        self.graph_id: str | None = None
        self._lock = threading.Lock()

    def register(self, spec_path: Path, configuration: Mapping[str, str]) -> None:
        """The spec's definitions registered as ``spark-pipelines run`` registers them,
        in a new graph whose default database is the private one. ``configuration``'s
        keys replace the spec's; the whole is set on the client's session before the
        files are imported (the command sets it on its session builder), and given to
        the graph."""
        import yaml  # PySpark's pipelines read their spec with it
        from pyspark.pipelines.cli import register_definitions, unpack_pipeline_spec
        from pyspark.pipelines.spark_connect_graph_element_registry import (
            SparkConnectGraphElementRegistry,
        )
        from pyspark.pipelines.spark_connect_pipeline import create_dataflow_graph

        with open(spec_path, encoding="utf-8") as file:
            data = yaml.safe_load(file)
        if isinstance(data, dict):
            data = {**data, "configuration": {**(data.get("configuration") or {}),
                                              **configuration}}
        spec = unpack_pipeline_spec(data)
        conf = {**_RETRY_CONF, **spec.configuration}
        # The client is the active session while the files are imported: a file that
        # asks for it (SparkSession.active(), as PySpark 4.1's files must, 4.2+ also
        # give them `spark`) gets the pipeline's, as under the command.
        with connect_mode(self.client):
            self.client.sql(f"CREATE DATABASE IF NOT EXISTS `{self.database}`")
            for key, value in conf.items():
                self.client.conf.set(key, value)
            self.graph_id = create_dataflow_graph(
                self.client, default_catalog=spec.catalog, default_database=self.database,
                sql_conf=conf)
            registry = SparkConnectGraphElementRegistry(self.client, self.graph_id)
            register_definitions(spec_path, registry, spec, self.client, self.graph_id)

    def run(self, *, storage: str, full_refresh_all: bool,
            full_refresh: Sequence[str], refresh: Sequence[str],
            timeout_s: float) -> RunOutcome:
        """One update, to its end or ``timeout_s`` (then the engine is told to stop the
        update, and the outcome says it timed out)."""
        from pyspark.pipelines.spark_connect_pipeline import start_run

        messages: list[str] = []
        failure: list[BaseException] = []

        def read() -> None:
            try:
                for result in start_run(
                        self.client, self.graph_id or "", full_refresh=list(full_refresh),
                        full_refresh_all=full_refresh_all, refresh=list(refresh),
                        dry=False, storage=storage):
                    event = result.get("pipeline_event_result")
                    if event is not None:
                        messages.append(str(event.event.message))
            except BaseException as error:  # handed to the caller
                failure.append(error)

        with self._lock:
            reader = threading.Thread(target=read, name="pyspark-streamtest-pipeline-run",
                                      daemon=True)
            reader.start()
            reader.join(timeout_s)
            timed_out = reader.is_alive()
            # Ends a run that is still going (timed out) and lets the graph run again.
            self._holder.removeAllPipelineExecutions()
            if timed_out:
                reader.join(30.0)
            self._holder.session().sparkContext().listenerBus().waitUntilEmpty(30_000)
            events = tuple(tuple(str(line).split("\t", 2)) for line in self._listener.drain())
        return RunOutcome(messages=tuple(messages),
                          query_events=tuple((e[0], e[1], e[2] if len(e) > 2 else "")
                                             for e in events),
                          error=failure[0] if failure else None, timed_out=timed_out)

    def describe(self) -> dict[str, Any]:
        """The graph as Spark's engine resolves it before an update, as plain values:
        ``tables`` (name, streaming or not, format, comment), ``views`` (name) and
        ``sinks`` (name, format, options), and ``flows``: name, target, whether it runs
        once, whether it streams, the pipeline datasets it reads, the sources outside
        the pipeline its plan reads (files by folder, tables by name), its watermarks
        (column, delay), its stateful operators (plan node names) and its output schema
        (JSON), or the error that failed its resolution."""
        assert self.graph_id is not None
        context = self._holder.dataflowGraphRegistry().getDataflowGraphOrThrow(self.graph_id)
        unresolved = context.toDataflowGraph()
        # 4.3's resolve takes a flag (false: the graph as declared, not for a dry run)
        graph = (unresolved.resolve(False) if capabilities(self._jvm).pipeline_resolve_takes_flag
                 else unresolved.resolve())
        convert = self._jvm.jvm.scala.jdk.javaapi.CollectionConverters
        tables = [{"name": _name(t.identifier()), "streaming": bool(t.isStreamingTable()),
                   "format": _option(t.format()), "comment": _option(t.comment())}
                  for t in convert.asJava(graph.tables())]
        views = [{"name": _name(v.identifier())} for v in convert.asJava(graph.views())]
        sinks = [{"name": _name(k.identifier()), "format": str(k.format()),
                  "options": {str(o): str(v) for o, v in convert.asJava(k.options()).items()}}
                 for k in convert.asJava(graph.sinks())]
        resolved = {_name(f.identifier()): f for f in convert.asJava(graph.resolvedFlows())}
        failed = {_name(f.identifier()): f for f in convert.asJava(graph.resolutionFailedFlows())}
        flows = []
        for flow in convert.asJava(graph.flows()):
            name = _name(flow.identifier())
            entry: dict[str, Any] = {"name": name, "target": _name(flow.destinationIdentifier()),
                                     "once": bool(flow.once()), "kind": str(
                                         flow.getClass().getSimpleName())}
            if name in resolved:
                found = resolved[name]
                entry["inputs"] = sorted(_name(i) for i in convert.asJava(found.inputs()))
                entry["external_tables"] = sorted(
                    _name(i) for i in convert.asJava(found.funcResult().usedExternalInputs()))
                entry.update(_plan_facts(convert, found.df().queryExecution().analyzed()))
                entry["schema"] = str(found.df().schema().json())
            elif name in failed:
                errors = convert.asJava(failed[name].funcResult().failure())
                entry["error"] = "; ".join(str(e.getMessage()) for e in errors)
            flows.append(entry)
        return {"tables": tables, "views": views, "sinks": sinks, "flows": flows}

    def table_location(self, name: str) -> str:
        """Where table ``name`` (fully qualified) keeps its files, as a local path."""
        identifier = self._jvm.jvm.org.apache.spark.sql.catalyst.TableIdentifier
        parts = [p.strip("`") for p in name.split(".")]
        table = self._holder.session().sessionState().catalog().getTableMetadata(
            identifier.apply(parts[-1], self._jvm.some(parts[-2])))
        return str(self._jvm.jvm.java.nio.file.Paths.get(table.location()))

    def close(self) -> None:
        """The graph, its executions, the private database (its tables' files with it),
        the listener and the client's server-side session, let go of."""
        holder = self._holder
        try:
            holder.removeAllPipelineExecutions()
            if self.graph_id is not None:
                holder.dataflowGraphRegistry().dropDataflowGraph(self.graph_id)
            self._holder.session().streams().removeListener(self._listener)
            self.server.sql(f"DROP DATABASE IF EXISTS `{self.database}` CASCADE")
        finally:
            # PySpark's Connect stop() also stops the process's classic session while
            # SPARK_LOCAL_REMOTE is set (--streamtest-connect sets it): the test
            # session's JVM would go with this client.
            local_remote = os.environ.pop("SPARK_LOCAL_REMOTE", None)
            try:
                with connect_mode():
                    self.client.stop()
            finally:
                if local_remote is not None:
                    os.environ["SPARK_LOCAL_REMOTE"] = local_remote


_STATEFUL = frozenset({
    "Aggregate", "Deduplicate", "DeduplicateWithinWatermark", "FlatMapGroupsWithState",
    "FlatMapGroupsInPandasWithState", "TransformWithState", "TransformWithStateInPySpark",
    "Join",
})
_FILE_SOURCE = re.compile(r"FileSource\[(?P<path>[^\]]*)\]")


def _name(identifier: Any) -> str:
    """A TableIdentifier as ``catalog.database.name``, without quotes."""
    return str(identifier.unquotedString())


def _option(value: Any) -> str | None:
    return str(value.get()) if value.isDefined() else None


def _plan_facts(convert: Any, plan: Any) -> dict[str, Any]:
    """What a flow's analyzed plan reads and keeps: whether it streams, the folders
    of its file sources, its watermarks and its stateful operators (a join is
    stateful when both of its sides stream)."""
    sources: list[str] = []
    watermarks: list[tuple[str, str]] = []
    stateful: list[str] = []
    pending = [plan]
    while pending:
        node = pending.pop()
        children = list(convert.asJava(node.children()))
        kind = str(node.nodeName())
        if kind == "EventTimeWatermark":
            watermarks.append((str(node.eventTime().name()), str(node.delay())))
        elif kind in _STATEFUL and node.isStreaming() and (
                kind != "Join" or all(c.isStreaming() for c in children)):
            stateful.append(kind)
        if not children:
            found = _FILE_SOURCE.search(str(node.simpleString(5)))
            if found:
                sources.append(found["path"])
        pending.extend(reversed(children))
    return {"streaming": bool(plan.isStreaming()), "file_sources": sorted(set(sources)),
            "watermarks": watermarks, "stateful": stateful}


def classic_jvm(spark: Any) -> Jvm:
    """The JVM handle of the process's classic session (``spark`` may be a Connect
    session of the local server, whose JVM is the same)."""
    from .session import is_connect_session, process_jvm

    return process_jvm() if is_connect_session(spark) else Jvm(spark)
