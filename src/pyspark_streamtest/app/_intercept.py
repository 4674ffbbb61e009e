"""Runs a job with ``readStream`` / ``writeStream`` and the calls that would block or
end the session turned towards the driver, and puts PySpark back afterwards."""

from __future__ import annotations

import inspect
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from typing import Any

from pyspark.sql import DataFrame, SparkSession

from ..errors import InvalidArgumentTypeError, hide_our_frames
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
        with intercepted(t.spark, run):
            if takes_session:
                app(t.spark)
            else:
                app()

    topology.__qualname__ = topology.__name__ = f"from_app({getattr(app, '__name__', app)})"
    return topology


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
    ``spark.streams.awaitAnyTermination()`` returns at once; ``spark.stop()`` does
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
            restore.enter_context(_replaced(owner, name, value))
        yield


@contextmanager
def _replaced(owner: type, name: str, value: object) -> Iterator[None]:
    had_own = name in owner.__dict__
    old = owner.__dict__.get(name)
    setattr(owner, name, value)
    try:
        yield
    finally:
        if had_own:
            setattr(owner, name, old)
        else:
            delattr(owner, name)
