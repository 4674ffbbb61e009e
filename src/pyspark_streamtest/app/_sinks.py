"""``DataFrame.writeStream`` under ``from_app``: each query the job starts becomes one of
the driver's outputs; the job gets a handle whose waits return at once."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import Any, cast

from pyspark.sql import DataFrame

from .._spark.query.plan import plan_facts
from .._spark.versions import pyspark_version_tuple
from ..errors import UnsupportedAppCallError, hide_our_frames
from ._context import AppRun, Mode, last_segment
from ._foreach import ForeachWriterBatches
from ._sources import FILE_FORMATS

__tracebackhide__ = hide_our_frames

SINKS = ("kafka", "foreachBatch", "foreach", "memory", "console", "noop", *FILE_FORMATS, "delta",
         "toTable")


class AppStreamWriter:
    """Stands in for ``DataStreamWriter`` while the job runs (same verbs, same chaining)."""

    def __init__(self, run: AppRun, df: DataFrame) -> None:
        self._run = run
        self._df = df
        self._format: str | None = None
        self._options: dict[str, str] = {}
        self._mode: Mode = "append"
        self._query_name: str | None = None
        self._trigger_ms: int | None = None
        self._trigger_kind = "processingTime"
        self._batch_function: Any = None

    def format(self, source: str) -> AppStreamWriter:
        self._format = str(source)
        return self

    def option(self, key: str, value: Any) -> AppStreamWriter:
        if value is not None:
            self._options[str(key)] = (
                ("true" if value else "false") if isinstance(value, bool) else str(value)
            )
        return self

    def options(self, **options: Any) -> AppStreamWriter:
        for key, value in options.items():
            self.option(key, value)
        return self

    def outputMode(self, outputMode: str) -> AppStreamWriter:  # noqa: N802, N803 (PySpark's)
        mode = str(outputMode).lower()
        if mode not in ("append", "update", "complete"):
            raise UnsupportedAppCallError(
                f"outputMode({outputMode!r}): Spark accepts append, update or complete"
            )
        self._mode = cast(Mode, mode)
        return self

    def queryName(self, queryName: str) -> AppStreamWriter:  # noqa: N802, N803 (PySpark's)
        self._query_name = str(queryName)
        return self

    def partitionBy(self, *cols: Any) -> AppStreamWriter:  # noqa: N802 (PySpark's name)
        return self  # how files are laid out; the driver keeps rows, not files

    def trigger(
        self, *, processingTime: str | None = None, once: bool | None = None,  # noqa: N803
        continuous: str | None = None, availableNow: bool | None = None,  # noqa: N803
        **others: Any,
    ) -> AppStreamWriter:
        if "realTime" in others:
            raise UnsupportedAppCallError(
                f"trigger(realTime={others['realTime']!r}): Spark's real-time mode (PySpark 4.2+) "
                "runs long-lived batches that process each record as it arrives, and the "
                "driver steps micro-batches, so it cannot run it faithfully. Test the "
                "query's logic with a processingTime trigger (let the job take its trigger "
                "as an argument: from_app(main, argv=[...]))")
        if others:
            raise UnsupportedAppCallError(
                f"trigger({', '.join(f'{k}=...' for k in others)}): a trigger this driver "
                "does not know (a newer PySpark's?); supported: processingTime, once, "
                "availableNow")
        if continuous is not None:
            raise UnsupportedAppCallError(
                f"trigger(continuous={continuous!r}): continuous processing is not supported "
                "by the driver (it steps micro-batches); test the job with a processingTime "
                "trigger"
            )
        given = [name for name, value in (("processingTime", processingTime), ("once", once),
                                          ("availableNow", availableNow)) if value is not None]
        if len(given) > 1:
            raise UnsupportedAppCallError(
                f"trigger() takes one of processingTime, once, availableNow (PySpark's rule "
                f"too); the job gave {', '.join(given)}")
        self._trigger_kind = "processingTime"
        if processingTime is not None:
            try:
                interval = self._run.declarer._processing_time_ms(processingTime)
            except ValueError as error:
                raise UnsupportedAppCallError(
                    f"trigger(processingTime={processingTime!r}): {error}"
                ) from None
            self._trigger_ms = interval or None
        elif once or availableNow:  # read the backlog found at the start, then end
            self._trigger_ms = None
            self._trigger_kind = "once" if once else "availableNow"
        else:
            raise UnsupportedAppCallError(
                "trigger() needs processingTime, once=True or availableNow=True (PySpark "
                "refuses a trigger without one, or with once/availableNow not True)")
        return self

    def foreachBatch(self, func: Any) -> AppStreamWriter:  # noqa: N802 (PySpark's name)
        self._batch_function = func
        return self

    def foreach(self, f: Any) -> AppStreamWriter:
        self._batch_function = ForeachWriterBatches(f)
        return self

    def start(
        self, path: str | None = None, format: str | None = None,
        outputMode: str | None = None, partitionBy: Any = None,  # noqa: N803
        queryName: str | None = None, **options: Any,  # noqa: N803
    ) -> AppQuery:
        if format is not None:
            self.format(format)
        if outputMode is not None:
            self.outputMode(outputMode)
        if queryName is not None:
            self.queryName(queryName)
        self.options(**options)
        if path is not None:
            self._options["path"] = path
        return self._declare(None)

    def toTable(  # noqa: N802 (PySpark's name)
        self, tableName: str, format: str | None = None,  # noqa: N803
        outputMode: str | None = None, partitionBy: Any = None,  # noqa: N803
        queryName: str | None = None, **options: Any,  # noqa: N803
    ) -> AppQuery:
        if outputMode is not None:
            self.outputMode(outputMode)
        if queryName is not None:
            self.queryName(queryName)
        self.options(**options)
        return self._declare(str(tableName))

    def __getattr__(self, name: str) -> Any:
        raise UnsupportedAppCallError(
            f"writeStream.{name}(...) is not supported by from_app; supported sinks: "
            f"{', '.join(SINKS)}"
        )

    # --- turning the query into an output ---------------------------------------------------
    def _declare(self, table: str | None) -> AppQuery:
        # The job's checkpointLocation option is never used: the driver checkpoints into
        # its own temporary folder.
        run = self._run
        name, declare = self._output(table)
        if run.is_selected(name):
            declare(name)
            run.declarer._set_trigger(name, self._trigger_ms, self._available_now_as())
            run.selected.append(self._df)
        else:
            run.left_out.append((name, self._df))
        return AppQuery(name, self._query_name)

    def _available_now_as(self) -> str:
        """The trigger the query runs: from Spark 4.0 (SPARK-45178), an ``availableNow``
        query with a source that lacks ``Trigger.AvailableNow`` (``rate``, ``socket``)
        runs as ``once``, one batch of everything (3.5 wraps such sources instead)."""
        run = self._run
        if (self._trigger_kind != "availableNow" or not run.without_available_now
                or pyspark_version_tuple() < (4, 0)):
            return self._trigger_kind
        read = set(plan_facts(run.declarer._classic(self._df)).streaming_leaf_expr_ids)
        for name in run.without_available_now:
            known = run.sources.get(name)
            if known is not None and read & set(
                    plan_facts(run.declarer._classic(known[1])).streaming_leaf_expr_ids):
                return "once"
        return self._trigger_kind

    def _output(self, table: str | None) -> tuple[str, Callable[[str], None]]:
        """The output's name, and how to declare it (not called for an output that
        ``from_app(outputs=...)`` leaves out)."""
        run, declarer, mode, df = self._run, self._run.declarer, self._mode, self._df
        sink = (self._format or "").lower()
        if self._batch_function is not None:
            function = self._batch_function
            named = getattr(function, "__name__", "")
            name = run.output_name(self._query_name or (
                named if named and not named.startswith("<") else "foreachBatch"))
            return name, lambda n: declarer.foreach_batch(n, df, function, output_mode=mode)
        if table is not None:
            name = run.output_name(self._query_name or table)
        elif sink == "kafka":
            topic = self._options.get("topic")
            name = run.output_name(self._query_name or topic or "kafka")
            return name, lambda n: declarer.kafka_output(n, df, topic=topic, output_mode=mode)
        elif sink in ("memory", "console", "noop"):
            if sink == "memory" and self._query_name is None:
                raise UnsupportedAppCallError(
                    "writeStream.format('memory') needs a queryName (Spark's rule too)")
            name = run.output_name(self._query_name or sink)
        elif sink in (*FILE_FORMATS, "delta", ""):
            path = self._options.get("path")
            if path is None:
                raise UnsupportedAppCallError(
                    f"writeStream{f'.format({sink!r})' if sink else ''}.start() has no path "
                    "(Spark's rule too); give start(path) or option('path', ...)"
                )
            name = run.output_name(self._query_name or last_segment(path))
        else:
            raise UnsupportedAppCallError(
                f"streaming sink {sink!r} is not supported by from_app; supported: "
                f"{', '.join(SINKS)}; or wrap the job in a Topology"
            )
        return name, lambda n: declarer.output(n, df, output_mode=mode)


class AppQuery:
    """What ``start()`` returns to the job under ``from_app``: a stand-in for
    ``StreamingQuery`` whose waits return at once, so a ``main()`` that blocks on its
    queries returns. The driver runs the real query; the test steps it."""

    def __init__(self, output: str, query_name: str | None) -> None:
        self.output = output
        """The driver output this query became."""
        self.name = query_name
        self.id = str(uuid.uuid4())
        self.runId = str(uuid.uuid4())

    @property
    def isActive(self) -> bool:  # noqa: N802 (PySpark's name)
        return True

    def awaitTermination(self, timeout: float | None = None) -> bool | None:  # noqa: N802
        """Returns at once (``True`` with a timeout, so wait loops end)."""
        return None if timeout is None else True

    def processAllAvailable(self) -> None:  # noqa: N802 (PySpark's name)
        """Nothing to do while the job is being set up: the test steps the driver."""

    def stop(self) -> None:
        """Ignored: the driver owns its queries (``close()`` stops them)."""

    def exception(self) -> None:
        return None

    @property
    def lastProgress(self) -> None:  # noqa: N802 (PySpark's name)
        return None

    @property
    def recentProgress(self) -> list[Any]:  # noqa: N802 (PySpark's name)
        return []

    def __repr__(self) -> str:
        return f"AppQuery(output={self.output!r}, name={self.name!r})"
