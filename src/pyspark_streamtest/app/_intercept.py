"""Runs a job with ``readStream`` / ``writeStream`` and the calls that would block or
end the session turned towards the driver, and puts PySpark back afterwards."""

from __future__ import annotations

import inspect
import sys
from collections.abc import Callable, Iterable, Iterator
from contextlib import ExitStack, contextmanager
from typing import Any

from pyspark.sql import DataFrame, SparkSession

from .._spark.query.plan import plan_facts
from ..core.attributes import replaced_attribute
from ..errors import InvalidArgumentError, InvalidArgumentTypeError, hide_our_frames
from ._context import AppRun, AppSettings, Declarer
from ._sinks import AppStreamWriter
from ._sources import AppStreamReader

__tracebackhide__ = hide_our_frames

App = Callable[..., object]
"""A job: ``main(spark)``, ``start(spark)``, or ``main()`` that gets its session with
``SparkSession.builder.getOrCreate()``."""


def app_topology(app: App, settings: AppSettings) -> Callable[[Declarer], None]:
    """The topology function that runs ``app`` with its streaming calls intercepted."""
    if not callable(app):
        raise InvalidArgumentTypeError(
            f"from_app needs the job's main function (a callable taking a SparkSession), "
            f"got {type(app).__name__}"
        )
    takes_session = _takes_session(app)

    def topology(t: Declarer) -> None:
        run = AppRun(t, settings)
        with intercepted(t.spark, run), command_line(app, settings.argv):
            if takes_session:
                app(t.spark)
            else:
                app()
        if settings.outputs is not None:
            _leave_out(run, settings.outputs)

    topology.__qualname__ = topology.__name__ = f"from_app({getattr(app, '__name__', app)})"
    topology._streamtest_app = app  # type: ignore[attr-defined]  # the job, for build hooks
    return topology


@contextmanager
def command_line(app: App, argv: tuple[str, ...]) -> Iterator[None]:
    """``sys.argv`` as the job sees it when run as ``python job.py *argv``: its module's
    file (or name) and ``argv``, never pytest's own command line. Always restored."""
    module = sys.modules.get(getattr(app, "__module__", "") or "")
    program = getattr(module, "__file__", None) or getattr(app, "__module__", None) or "job"
    saved = sys.argv
    sys.argv = [str(program), *argv]
    try:
        yield
    finally:
        sys.argv = saved


def checked_argv(argv: object) -> tuple[str, ...]:
    """``from_app(argv=...)`` checked: a list of strings, as a shell gives them."""
    if isinstance(argv, (str, bytes)) or not isinstance(argv, Iterable):
        raise InvalidArgumentTypeError(
            f"from_app(argv=...) takes a list of strings, as a shell splits a command "
            f"line (['--trigger', 'availableNow']), got {argv!r}")
    listed = tuple(argv)
    bad = [a for a in listed if not isinstance(a, str)]
    if bad:
        raise InvalidArgumentTypeError(
            f"from_app(argv=...) takes strings only, as a shell gives them; got {bad[0]!r} "
            f"({type(bad[0]).__name__}): pass str({bad[0]!r})")
    return listed


def _leave_out(run: AppRun, wanted: tuple[str, ...]) -> None:
    """Check ``from_app(outputs=...)`` against the queries the job started, and mark the
    inputs only the left-out queries read (piping into one would feed nothing)."""
    missing = [name for name in wanted if name not in run.outputs]
    if missing:
        raise InvalidArgumentError(
            f"from_app(outputs=...) names {', '.join(map(repr, missing))}, but the job starts "
            f"no query of that name; its queries are "
            f"{', '.join(map(repr, run.outputs)) or 'none'}")
    run.declarer._leave_out_outputs(tuple(name for name, _ in run.left_out))
    def leaves(df: DataFrame) -> set[int]:
        return set(plan_facts(run.declarer._classic(df)).streaming_leaf_expr_ids)

    read = set().union(*map(leaves, run.selected))
    readers = [(name, leaves(df)) for name, df in run.left_out]
    for name, (_, df) in run.sources.items():
        source = leaves(df)
        by = [query for query, reads in readers if reads & source]
        if by and not read & source:
            run.declarer._leave_out_input(name, (
                f"input {name!r} is read only by queries from_app(outputs=...) leaves out "
                f"({', '.join(map(repr, by))}); add the one you test to outputs="))


def _takes_session(app: App) -> bool:
    try:
        signature = inspect.signature(app)
    except (TypeError, ValueError):
        return True
    required = [
        p for p in signature.parameters.values()
        if p.default is p.empty and p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)
    ]
    return bool(required) or any(
        p.kind == p.VAR_POSITIONAL for p in signature.parameters.values()
    )


@contextmanager
def intercepted(spark: SparkSession, run: AppRun) -> Iterator[None]:
    """While open: ``spark.readStream`` and ``df.writeStream`` (for every session and
    DataFrame of these classes) declare the run's inputs and outputs;
    ``spark.streams.awaitAnyTermination()`` returns at once; ``spark.read.format("kafka")``
    reads the driver's topics; ``spark.stop()`` does
    nothing (the test's session outlives the job); ``SparkSession.builder...
    getOrCreate()`` returns the test's session without applying the builder's settings
    to it (they would outlive the test). Always restored."""
    frame_class = type(spark.range(0))

    def read_stream(_: SparkSession) -> AppStreamReader:
        return AppStreamReader(run)

    def write_stream(df: DataFrame) -> AppStreamWriter:
        return AppStreamWriter(run, df)

    def await_any(_: Any, timeout: float | None = None) -> bool | None:
        return None if timeout is None else True

    def stop(_: SparkSession) -> None:
        return None

    def get_or_create(_: Any) -> SparkSession:
        return spark

    with ExitStack() as restore:
        for owner, name, value in (
            (type(spark), "readStream", property(read_stream)),
            (frame_class, "writeStream", property(write_stream)),
            (type(spark.streams), "awaitAnyTermination", await_any),
            (type(spark), "stop", stop),
            (type(spark).Builder, "getOrCreate", get_or_create),
        ):
            restore.enter_context(replaced_attribute(owner, name, value))
        restore.enter_context(run.declarer._job_io())  # spark.read / df.write of Kafka
        yield
