"""The driver's ``from_app``: a driver for a production job as it is (the job's
``readStream`` / ``writeStream`` turned towards the driver by :mod:`..app`)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from datetime import timedelta
from typing import Any, TypeVar

from pyspark.sql.types import StructType

from ..app import App, AppSettings, app_topology, selected_outputs
from ..app._landing import LandingSettings, checked_land_files
from ..errors import InvalidArgumentError, hide_our_frames
from ._specs import _InputSpec

__tracebackhide__ = hide_our_frames

__all__ = ["AppVerbs"]

_Driver = TypeVar("_Driver", bound="AppVerbs")


class AppVerbs:
    """``TopologyTestDriver.from_app``."""

    _app_settings: AppSettings | None
    """The ``from_app`` settings of a driver made by it (for ``restart(app=...)``)."""
    _inputs: dict[str, _InputSpec]

    def close(self) -> None:  # the driver's
        raise NotImplementedError

    @classmethod
    def from_app(
        cls: type[_Driver],
        app: App,
        *,
        inputs: Mapping[str, str] | None = None,
        topics: Sequence[str] = (),
        schemas: Mapping[str, str | StructType] | None = None,
        ignore_options: Iterable[str] = (),
        trigger_interval: timedelta | None = None,
        outputs: Iterable[str] | None = None,
        land_files: bool | Iterable[str] = False,
        **driver_options: Any,
    ) -> _Driver:
        """A driver for a production job as it is: ``app`` is its ``main(spark)`` (or a
        ``main()`` that calls ``SparkSession.builder.getOrCreate()``, which returns the
        test's session). The job runs with ``spark.readStream`` and ``df.writeStream``
        intercepted (restored afterwards, also on errors): each streaming source becomes
        an input, each started query an output. See the guide "Test your job as it is"
        for the sources and sinks and how each is named.

        ``inputs`` renames sources (topic, path, table, ``"rate"``, ``"socket"`` ->
        input name); ``topics`` lists the topics a ``subscribePattern`` may match;
        ``schemas`` gives the schema of a table or path the job reads without stating
        one; ``ignore_options`` lets the job's rate limits (``maxOffsetsPerTrigger``...)
        through, unhonoured. ``trigger_interval=None`` steps the queries on the job's
        own ``trigger(processingTime=...)`` (1 s without one). ``outputs`` runs only
        the queries with those output names: the others are not started, an input only
        they read refuses a handle (``UnknownTopicError`` naming them), and a name the
        job does not start is an ``InvalidArgumentError``. ``land_files`` makes file
        sources (``json``, ``csv``, ``text``, ``parquet``...) read files the test lands
        instead of rows it pipes: ``True`` for every file source, or a list of input
        names. Such a source is Spark's own file source over a temporary directory, read
        with the job's format, schema and options (``maxFilesPerTrigger`` and its kin
        included); the test lands files with the input handle's ``land_file`` and
        ``land_lines`` (see the guide "Land files as they arrive"). A name that is not
        one of the job's file sources is an ``InvalidArgumentError``. The rest are the
        constructor's options (``spark``, ``start_time``, ``sql_conf``...).

        The job's ``checkpointLocation`` is never created or read (the driver's own
        temporary checkpoint is used); ``awaitTermination()`` and
        ``spark.streams.awaitAnyTermination()`` return at once; ``query.stop()`` and
        ``spark.stop()`` do nothing while the job runs. The job is called once more for
        each query that reads a source another query reads, so it must start the same
        queries every time.
        """
        lands = checked_land_files(land_files)
        settings = LandingSettings(dict(inputs or {}), tuple(topics), dict(schemas or {}),
                                   frozenset(ignore_options), selected_outputs(outputs),
                                   land_files=lands)
        make: Any = cls  # the driver class, whose constructor takes these
        driver: _Driver = make(app_topology(app, settings), trigger_interval=trigger_interval,
                               **driver_options)
        driver._app_settings = settings
        if isinstance(lands, frozenset):
            landing = {n for n, spec in driver._inputs.items() if spec.files is not None}
            if lands - landing:
                driver.close()
                raise InvalidArgumentError(
                    f"from_app(land_files=...) names {sorted(lands - landing)}, but the job "
                    "reads no file source (json, csv, text, parquet...) of that input name; "
                    f"its inputs are {sorted(driver._inputs)}")
        return driver
