"""The driver's ``from_app``: a driver for a production job as it is (the job's
``readStream`` / ``writeStream`` turned towards the driver by :mod:`..app`)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from datetime import timedelta
from typing import Any, TypeVar

from pyspark.sql.types import StructType

from ..app import App, AppSettings, app_topology, checked_argv, selected_outputs
from ..app.landing import LandingSettings, checked_land_files
from ..errors import InvalidArgumentError, hide_our_frames
from .topology import InputSpec

__tracebackhide__ = hide_our_frames

__all__ = ["AppVerbs"]

_Driver = TypeVar("_Driver", bound="AppVerbs")


class AppVerbs:
    """``TopologyTestDriver.from_app``."""

    _app_settings: AppSettings | None
    """The ``from_app`` settings of a driver made by it (for ``restart(app=...)``)."""
    _inputs: dict[str, InputSpec]

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
        argv: Sequence[str] = (),
        partitions: Mapping[str, int] | None = None,
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
        one; ``ignore_options`` lets a file source's rate limits (``maxFilesPerTrigger``,
        ``maxBytesPerTrigger``) on piped rows through, unhonoured (a Kafka source's
        ``maxOffsetsPerTrigger`` and its kin are honoured as Spark honours them, or
        left out when named here). ``trigger_interval=None`` steps the queries on the job's
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
        one of the job's file sources is an ``InvalidArgumentError``. ``argv`` is the job's
        command line: while it runs, ``sys.argv`` is ``[<the job's module file>, *argv]``
        (an ``argparse`` ``main(argv=None)`` parses ``argv``, never pytest's own command
        line), restored after each call. The rest are the constructor's options
        (``spark``, ``start_time``, ``sql_conf``...). ``partitions`` gives a Kafka
        topic's partition count by its input name (``{"events": 3}``; 1 for a topic not
        named): records are
        placed over them by key as Kafka's default partitioner does, and read limits are
        shared over them; a topic the job does not read is an ``InvalidArgumentError``.

        **Read limits and backfills.** A Kafka source's ``maxOffsetsPerTrigger``,
        ``minOffsetsPerTrigger`` and ``maxTriggerDelay`` are honoured at every trigger as
        Spark's Kafka source honours them (the topics of one ``subscribe`` share them).
        A query with ``trigger(availableNow=True)`` reads the backlog it finds when it
        starts, in the batches those limits make and the no-data batches the watermark
        asks for, and ends; ``trigger(once=True)`` reads all of it in one batch and
        ends. The job's queries start when the driver is made, so a backfill finds what
        was piped by then (nothing, on a new driver): :meth:`restart` is the job's next
        scheduled run, on the same checkpoints, reading what was piped since.

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
                                   dict(partitions or {}), checked_argv(argv),
                                   land_files=lands)
        make: Any = cls  # the driver class, whose constructor takes these
        driver: _Driver = make(app_topology(app, settings), trigger_interval=trigger_interval,
                               **driver_options)
        driver._app_settings = settings
        unknown = set(settings.partitions) - {
            name for name, spec in driver._inputs.items() if spec.kafka is not None}
        if unknown:
            driver.close()
            raise InvalidArgumentError(
                f"from_app(partitions=...) names {sorted(unknown)}, but the job reads no "
                "Kafka topic of that input name; its Kafka topics are "
                f"{sorted(n for n, spec in driver._inputs.items() if spec.kafka is not None)}")
        if isinstance(lands, frozenset):
            landing = {n for n, spec in driver._inputs.items() if spec.files is not None}
            if lands - landing:
                driver.close()
                raise InvalidArgumentError(
                    f"from_app(land_files=...) names {sorted(lands - landing)}, but the job "
                    "reads no file source (json, csv, text, parquet...) of that input name; "
                    f"its inputs are {sorted(driver._inputs)}")
        return driver
