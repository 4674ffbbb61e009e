"""``PipelineTestDriver``: a Spark Declarative Pipeline run update by update in the
test's own JVM, by Spark's own pipeline engine."""

from __future__ import annotations

import atexit
import contextlib
import dataclasses
import itertools
import json
import os
import shutil
import tempfile
import uuid
import weakref
from collections.abc import Iterable, Mapping, Sequence
from datetime import timedelta
from pathlib import Path
from types import TracebackType
from typing import Any

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.types import StructType

from .._spark.connect.pipelines import PipelineRun, classic_jvm, pipelines_available
from .._spark.jvm import java_error_text
from .._spark.runtime.session import build_test_session
from ..core import open_drivers
from ..core.decoding import row_decoder
from ..errors import (
    DriverClosedError,
    InvalidArgumentError,
    InvalidArgumentTypeError,
    PipelineDefinitionError,
    PipelineHazardError,
    PipelineUpdateError,
    UnknownDatasetError,
    UnsupportedSparkVersionError,
    hide_our_frames,
)
from ..state.reader import read_view
from ..state.views import StateStoreView
from ._graph import PipelineGraph, graph_from
from ._inputs import FileInputs
from ._registration import definition_problem, spec_path
from ._tables import TableWatch
from ._topics import PipelineOutputTopic
from ._updates import PipelineUpdate, format_updates, read_update

__tracebackhide__ = hide_our_frames

__all__ = ["PipelineTestDriver"]

_databases = itertools.count(1)
_open: weakref.WeakSet[PipelineTestDriver] = weakref.WeakSet()


@atexit.register
def _close_at_exit() -> None:
    """A script that never closes its driver still exits: the Connect client the
    driver holds would keep the interpreter waiting."""
    for driver in list(_open):
        # Spark's own exit hook may have stopped the JVM first: nothing is left to undo.
        with contextlib.suppress(Exception):
            driver.close()


class PipelineTestDriver:
    """Runs a Spark Declarative Pipeline (``pyspark.pipelines``) one triggered update at a
    time, as ``spark-pipelines run`` runs it, in the test's own JVM.

    **What runs.** The spec's definitions are loaded unchanged, by PySpark's own
    ``register_definitions`` (the Python files imported with ``spark`` injected, the SQL
    files sent as text, the spec's globs), over a Spark Connect server in the test's JVM
    (started on first use, kept for the session). Each :meth:`run_update` is one
    ``StartRun`` of Spark's pipeline engine: the same flows, checkpoints and table
    writes as in production, one update after another on one graph.

    **Time.** The unit of time is the update: a streaming flow reads what arrived since
    its last update in the micro-batches the engine makes (its read limits apply) and
    ends with the no-data batch that moves the watermark, closes windows and evicts
    state; a materialized view is recomputed. The engine's batches run on the JVM's own
    clock, so ``current_timestamp()`` in a flow is the wall clock's.

    **What it owns** (the class's parts): the inputs (:meth:`land_file`), the updates
    (:meth:`run_update`, :attr:`updates`), what the datasets hold (:meth:`read_table`,
    :meth:`create_output_topic`, :meth:`get_state_store`) and the graph
    (:meth:`describe`).

    **Differences from a production run**, all for isolation and speed:

    - the tables live in a database of their own per driver (the graph's default
      database; a dataset named with another database keeps it), in the session's
      catalog, dropped with their files at :meth:`close`; the spec's ``catalog`` and
      ``database`` are not used for datasets named without one. The catalog keeps the
      tables between updates (``spark-pipelines run`` with the default in-memory
      catalog cannot run a second update: ``LOCATION_ALREADY_EXISTS``);
    - ``storage`` (the flows' checkpoints) is a temporary folder per driver;
    - ``configuration``'s keys replace the spec's ``configuration``'s;
    - a failed flow is restarted after 1 s (the engine waits 5 s and more); how many
      attempts it gets is the engine's (``spark.sql.pipelines.maxFlowRetryAttempts``).

    **Hazards.** A graph whose shape loses rows whatever the data is refused when the
    driver is made (:class:`~pyspark_streamtest.errors.PipelineHazardError`, each
    hazard with its fix), not left to a race: two streaming flows into one
    file-format streaming table share its commit log, and one of them loses its
    batches. ``allow_hazards=True`` runs it as Spark would; an update that then loses
    rows raises :class:`~pyspark_streamtest.errors.LostRowsError` with the rows.

    **Inputs.** ``file_inputs`` maps an input name to the configuration key the pipeline
    reads its folder from (``{"orders": "orders.path"}``): the driver makes the folder,
    sets the key to its path, and the test lands files in it (:meth:`land_file`,
    :meth:`land_lines`) before the update that should read them. Files are landed
    atomically (Spark's file source never sees half a file).
    """

    def __init__(
        self,
        spec: str | os.PathLike[str],
        *,
        configuration: Mapping[str, str] | None = None,
        file_inputs: Mapping[str, str] | None = None,
        allow_hazards: bool = False,
        spark: SparkSession | None = None,
        timeout: timedelta = timedelta(minutes=5),
    ) -> None:
        """See the class. ``spec`` is a ``spark-pipeline.yml`` or its folder;
        ``timeout`` bounds each update (then :class:`PipelineUpdateError`)."""
        __tracebackhide__ = True
        if not pipelines_available():
            import pyspark

            raise UnsupportedSparkVersionError(
                f"PySpark {pyspark.__version__} has no declarative pipelines "
                "(pyspark.pipelines, PySpark 4.1+) or lacks the Connect client's packages "
                "(pip install 'pyspark[connect]'); use PySpark 4.1+ for pipeline tests")
        if not isinstance(timeout, timedelta) or timeout <= timedelta(0):
            raise InvalidArgumentError(f"timeout must be a positive timedelta, got {timeout!r}")
        if not isinstance(allow_hazards, bool):
            raise InvalidArgumentTypeError(
                f"allow_hazards is True or False, got {allow_hazards!r}")
        self._closed = True  # until made whole: close() then undoes what was made
        self._folder = Path(tempfile.mkdtemp(prefix="streamtest-pipeline-"))
        self._run: PipelineRun | None = None
        try:
            self._spec = spec_path(spec)
            self._configuration = _checked_configuration(configuration)
            self._timeout_s = timeout.total_seconds()
            self._spark = spark if spark is not None else build_test_session()
            self._inputs = FileInputs(self._folder / "inputs", file_inputs)
            self._configuration.update(self._inputs.configuration)
            self._updates: list[PipelineUpdate] = []
            database = f"streamtest_pipeline_{next(_databases)}_{uuid.uuid4().hex[:8]}"
            self._run = PipelineRun(classic_jvm(self._spark), database=database)
            self._closed = False
            self._register()
            self._graph = graph_from(self._describe(), self._short_name)
            run = self._run
            self._tables = TableWatch(
                self._name, self._graph, rows=self._rows,
                location=lambda table: run.table_location(self._qualified(table)))
            refused = [h for h in self._graph.hazards if h.kind == "auto_cdc_without_merge"]
            if refused:  # no update could run: not a hazard to allow
                raise PipelineHazardError(
                    f"pipeline {self._name!r} cannot run an update in Spark's engine:\n"
                    + "\n".join(f"- {h.text}" for h in refused), tuple(refused))
            if self._graph.hazards and not allow_hazards:
                raise PipelineHazardError(
                    f"pipeline {self._name!r} has a shape that loses rows in Spark's "
                    "engine, whatever the data:\n"
                    + "\n".join(f"- {h.text}" for h in self._graph.hazards)
                    + "\n(from_pipeline(..., allow_hazards=True) runs it anyway, as Spark "
                    "would; an update that loses rows then raises LostRowsError)",
                    self._graph.hazards)
        except BaseException:
            self._closed = False
            self.close()
            raise
        open_drivers.register(self)
        _open.add(self)

    @property
    def _name(self) -> str:
        return self._spec.parent.name

    def _register(self) -> None:
        __tracebackhide__ = True
        assert self._run is not None
        try:
            self._run.register(self._spec, self._configuration)
        except Exception as error:
            raise PipelineDefinitionError(definition_problem(self._spec, error)) from None

    def _describe(self) -> dict[str, Any]:
        """The graph as the engine resolves it; a graph it cannot resolve (a source
        folder that does not exist, a table no one defines) is refused by name."""
        __tracebackhide__ = True
        assert self._run is not None
        try:
            return self._run.describe()
        except Exception as error:
            text = java_error_text(error).strip().splitlines()
            raise PipelineDefinitionError(
                f"pipeline {self._spec} was registered, but Spark's engine cannot resolve "
                f"its graph: {text[0] if text else type(error).__name__} (a file input's "
                "folder is made by the driver: name it in file_inputs=)") from None

    # --- inputs -----------------------------------------------------------------------
    def input_path(self, name: str) -> str:
        """The folder of file input ``name`` (what its configuration key is set to)."""
        self._check_open()
        return str(self._inputs.path(name))

    def land_file(self, input_name: str, name: str, contents: str | bytes) -> str:
        """Land file ``name`` with ``contents`` (str as UTF-8) in the folder of
        ``input_name``, atomically; the next update's flows that read the folder read
        it. Returns its path. A name is landed once (Spark's file source reads a path
        once)."""
        self._check_open()
        return self._inputs.land_file(input_name, name, contents)

    def land_lines(self, input_name: str, lines: Iterable[str], *,
                   name: str | None = None) -> str:
        """Land ``lines`` (a JSON or CSV line each) as one file; ``name`` defaults to the
        next ``part-NNNNN``. Returns its path."""
        self._check_open()
        return self._inputs.land_lines(input_name, lines, name)

    # --- updates ----------------------------------------------------------------------
    def run_update(
        self,
        *,
        full_refresh: bool | Sequence[str] = False,
        refresh: Sequence[str] | None = None,
    ) -> PipelineUpdate:
        """Run one triggered update, as ``spark-pipelines run`` does, and return what it
        did: each flow's states and micro-batches (the no-data batch that closes windows
        included). ``full_refresh=True`` resets every dataset and recomputes it
        (``--full-refresh-all``); a list of dataset names resets those
        (``--full-refresh``); ``refresh`` updates only the datasets named (``--refresh``).

        Raises :class:`PipelineUpdateError` naming the flow and the update when a flow
        failed after the engine's attempts, or the update did not end in the driver's
        ``timeout``; :class:`LostRowsError` when a table several flows write lost
        rows (files its commit log does not name, or a batch skipped as committed).
        Either carries the update (``.update``) as far as it went, and the driver can
        run the next one."""
        __tracebackhide__ = True
        self._check_open()
        assert self._run is not None
        if isinstance(full_refresh, str) or not isinstance(full_refresh, (bool, Sequence)):
            raise InvalidArgumentTypeError(
                "full_refresh is True, False or a list of dataset names, got "
                f"{full_refresh!r}")
        if isinstance(refresh, str):
            raise InvalidArgumentTypeError(
                f"refresh is a list of dataset names, got one str {refresh!r}; wrap it in "
                "a list")
        selected = [] if isinstance(full_refresh, bool) else list(full_refresh)
        for name in [*selected, *(refresh or ())]:
            self._dataset(name)
        outcome = self._run.run(
            storage=(self._folder / "storage").as_uri(),
            full_refresh_all=full_refresh is True, full_refresh=selected,
            refresh=list(refresh or ()), timeout_s=self._timeout_s)
        number = len(self._updates) + 1
        update = read_update(number, outcome.messages, outcome.query_events, self._short_name)
        if outcome.error is not None and update.state == "UNKNOWN":
            update = dataclasses.replace(update, state="FAILED")
        self._updates.append(update)
        self._tables.reset(set(self._graph.datasets) if full_refresh is True else set(selected))
        if outcome.timed_out:
            raise PipelineUpdateError(
                f"update {number} of pipeline {self._name!r} did not end within "
                f"{self._timeout_s:g} s; the driver stopped it (running flows: "
                f"{[f for f, r in update.flows.items() if r.state == 'RUNNING'] or 'none'})",
                update)
        if outcome.error is not None or update.failed_flows:
            raise PipelineUpdateError(self._failure_text(update, outcome.error), update)
        self._tables.follow(update)
        return update

    def _failure_text(self, update: PipelineUpdate, error: BaseException | None) -> str:
        lines = [f"update {update.number} of pipeline {self._name!r} failed"]
        for name in update.failed_flows:
            run = update.flows[name]
            reason = _reason(run.errors[-1]) if run.errors else "(no error text)"
            lines.append(f"  flow {name!r}: FAILED after {run.attempts} attempt"
                         f"{'s' * (run.attempts != 1)}: {reason}")
        if not update.failed_flows and error is not None:
            text = java_error_text(error).strip().splitlines()
            lines.append(f"  {text[0] if text else type(error).__name__}")
        return "\n".join(lines)

    def _rows(self, table: str, files: Sequence[str]) -> list[dict[str, Any]]:
        """The rows of some of ``table``'s data files, read in the table's format (a
        sink's in its flow's schema: a sink is no table to ask)."""
        dataset = self._graph.datasets[table]
        flow_schema = self._graph.flows[dataset.flows[0]].schema if dataset.flows else None
        schema = (StructType.fromJson(json.loads(flow_schema))
                  if dataset.kind == "sink" and flow_schema is not None
                  else self._spark.read.table(self._qualified(table)).schema)
        decode = row_decoder(schema)
        fmt = dataset.format or "parquet"
        frame = self._spark.read.format(fmt).schema(schema).load(list(files))
        return [decode(row) for row in frame.collect()]

    @property
    def updates(self) -> tuple[PipelineUpdate, ...]:
        """Every update run so far, oldest first (failed ones included)."""
        return tuple(self._updates)

    def timeline(self) -> str:
        """The updates so far as text, flow by flow and batch by batch (what a failing
        test's report shows)."""
        return format_updates(self._updates)

    # --- datasets ---------------------------------------------------------------------
    @property
    def database(self) -> str:
        """The driver's private database: the graph's default one."""
        assert self._run is not None
        return self._run.database

    def describe(self) -> PipelineGraph:
        """The pipeline's datasets and flows as Spark's engine resolved them when the
        driver was made: what each flow reads (datasets of the pipeline, folders,
        other tables), its watermarks and stateful operators, and the graph's
        hazards. ``str()`` of it is a readable outline."""
        self._check_open()
        return self._graph

    def table_names(self) -> list[str]:
        """The tables and materialized views in the driver's database, sorted (a
        dataset is made by its first update). The session's temporary views, which
        ``SHOW TABLES`` lists in every database, are not the pipeline's."""
        self._check_open()
        rows = self._spark.sql(f"SHOW TABLES IN `{self.database}`").collect()
        return sorted(str(row["tableName"]) for row in rows if not row["isTemporary"])

    def read_table(self, name: str) -> DataFrame:
        """Dataset ``name`` (a streaming table or materialized view) as of the last
        update, as a DataFrame of the test's session. A name without a database is the
        driver's database's."""
        self._check_open()
        if not isinstance(name, str) or not name:
            raise InvalidArgumentTypeError(f"a dataset name is a non-empty str, got {name!r}")
        if "." not in name and name not in self.table_names():
            raise UnknownDatasetError(
                f"pipeline {self._name!r} has no table {name!r} (yet: a dataset is made by "
                f"its first update); its tables: {self.table_names() or 'none'}")
        qualified = self._qualified(name)
        # An update rewrites a materialized view's files: the session's cached listing
        # of the table would name files that are gone.
        self._spark.catalog.refreshTable(qualified)
        return self._spark.read.table(qualified)

    def create_output_topic(self, name: str) -> PipelineOutputTopic:
        """A handle reading what each update from now on appends to streaming table
        ``name``, or to sink ``name`` of a file format with a ``path`` (as Spark's file
        sink commits it), batch by batch (see :class:`PipelineOutputTopic`). The
        handles of one table share one queue."""
        self._check_open()
        dataset = self._dataset(name)
        if dataset.kind == "sink" and not dataset.file_written:
            raise InvalidArgumentError(
                f"sink {name!r} writes format {dataset.format!r}"
                f"{'' if dataset.path else ' with no path option'}: an output topic reads "
                "what a sink appended from the files and commit log of Spark's file sink, "
                "so only a sink of a file format (parquet, json, csv, orc, text) with a "
                "path can have one")
        if not dataset.file_written:
            raise InvalidArgumentError(
                f"{name!r} is a {dataset.kind.replace('_', ' ')}, which an update rewrites "
                "rather than appends to; read it with read_table()")
        queue = self._tables.queue(name, updated=bool(self._updates))
        return PipelineOutputTopic._create(queue, self._check_open)

    def get_state_store(self, flow: str, *, operator_id: int = 0,
                        batch_id: int | None = None) -> StateStoreView:
        """A read-only view of the state of ``flow``'s stateful operator ``operator_id``
        as of the end of its batch ``batch_id`` (default: its last committed batch), as
        :meth:`TopologyTestDriver.get_state_store
        <pyspark_streamtest.TopologyTestDriver.get_state_store>` reads a query's. A
        full refresh starts the flow's checkpoint again: the view reads the newest."""
        self._check_open()
        if flow not in self._graph.flows:
            raise UnknownDatasetError(
                f"pipeline {self._name!r} has no flow {flow!r}; its flows: "
                f"{sorted(self._graph.flows)}")
        info = self._graph.flows[flow]
        if not info.stateful:
            raise InvalidArgumentError(
                f"flow {flow!r} keeps no state (no stateful operator in its plan)")
        checkpoint = self._checkpoint(flow)
        commits = sorted(int(p.name) for p in (checkpoint / "commits").glob("*")
                         if p.name.isdigit()) if checkpoint else []
        if checkpoint is None or not commits:
            raise InvalidArgumentError(
                f"flow {flow!r} has committed no batch yet; run an update first")
        batch = commits[-1] if batch_id is None else batch_id
        if batch not in commits:
            raise InvalidArgumentError(
                f"flow {flow!r} committed batches {commits[0]}..{commits[-1]}, not "
                f"{batch_id!r}")
        return read_view(self._spark, str(checkpoint), output=flow, operator_id=operator_id,
                         store_name=None, state_var=None, join_side=None, batch_id=batch,
                         shape="generic")

    def _checkpoint(self, flow: str) -> Path | None:
        """The flow's newest checkpoint: ``storage/_checkpoints/<catalog>/<database>/
        <table>/<flow>/<generation>`` (a full refresh makes a new generation)."""
        info = self._graph.flows[flow]
        table = self._qualified(info.target).replace("`", "").split(".")
        folder = self._folder / "storage" / "_checkpoints"
        folder = folder.joinpath(*(["spark_catalog"] if len(table) == 2 else []), *table,
                                 flow.split(".")[-1])
        generations = sorted(int(p.name) for p in folder.glob("*") if p.name.isdigit())
        return folder / str(generations[-1]) if generations else None

    def _dataset(self, name: str) -> Any:
        if not isinstance(name, str) or name not in self._graph.datasets:
            raise UnknownDatasetError(
                f"pipeline {self._name!r} has no dataset {name!r}; its datasets: "
                f"{sorted(self._graph.datasets)}")
        return self._graph.datasets[name]

    def _qualified(self, name: str) -> str:
        return name if "." in name else f"`{self.database}`.`{name}`"

    def _short_name(self, full: str) -> str:
        parts = [p.strip("`") for p in full.split(".")]
        if len(parts) == 3 and self._run is not None and parts[1] == self._run.database:
            return parts[2]
        return ".".join(parts)

    # --- life -------------------------------------------------------------------------
    @property
    def closed(self) -> bool:
        return self._closed

    def _check_open(self) -> None:
        if self._closed:
            raise DriverClosedError("this pipeline driver is closed; make a new one")

    def close(self) -> None:
        """Drop the driver's database (its tables and files), its graph and its storage,
        and let the Connect session go. Idempotent."""
        if self._closed:
            return
        self._closed = True
        try:
            if self._run is not None:
                self._run.close()
        finally:
            shutil.rmtree(self._folder, ignore_errors=True)
            open_drivers.unregister(self)
            _open.discard(self)

    def __enter__(self) -> PipelineTestDriver:
        return self

    def __exit__(self, kind: type[BaseException] | None, value: BaseException | None,
                 trace: TracebackType | None) -> None:
        self.close()

    def __repr__(self) -> str:
        state = "closed" if self._closed else f"{len(self._updates)} updates"
        return f"PipelineTestDriver({str(self._spec)!r}, {state})"


def _reason(error: str) -> str:
    """An error's first line, and the error classes of the causes it reports after."""
    lines = [line.strip() for line in error.splitlines() if line.strip()]
    first = lines[0] if lines else error
    causes = [line for line in lines[1:] if line.startswith("[") and line not in first][:2]
    return " | ".join([first, *causes])


def _checked_configuration(configuration: Mapping[str, str] | None) -> dict[str, str]:
    if configuration is None:
        return {}
    if not isinstance(configuration, Mapping) or not all(
            isinstance(k, str) and isinstance(v, str) for k, v in configuration.items()):
        raise InvalidArgumentTypeError(
            "configuration maps str keys to str values, as a spec's configuration does")
    return dict(configuration)
