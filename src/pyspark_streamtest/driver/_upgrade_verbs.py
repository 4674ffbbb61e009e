"""The driver's upgrade verbs: save a checkpoint, and run a new version of the topology
on an old version's checkpoint (in place, or in a new driver with ``checkpoint=``), as
a deploy of a changed job does. Spark decides what may change: see the guide
"Upgrade a job from its checkpoint"."""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

from pyspark.sql import SparkSession

from .._spark.connect.session import ConnectLink
from .._spark.query.conf import scoped_sql_conf
from ..app import App, AppSettings, app_topology
from ..errors import InvalidArgumentError, InvalidArgumentTypeError, hide_our_frames
from ..kafka.broker import Broker
from ._time_control import TimeControl
from .queries import History, Queries
from .topology import BuiltOutput, InputSpec, TopologyFunction, build_topology, kept_topics_of

__tracebackhide__ = hide_our_frames

__all__ = ["UpgradeVerbs"]


class UpgradeVerbs:
    """save_checkpoint and the upgrade in place behind ``restart(topology=...)``."""

    _spark: SparkSession
    _users_spark: SparkSession
    _link: ConnectLink | None
    _run: Any
    _queries: Queries
    _broker: Broker
    _history: History
    _time: TimeControl
    _inputs: dict[str, InputSpec]
    _outputs: dict[str, BuiltOutput]
    _release: Any
    _generation: int
    _track: Callable[..., None]
    _after_new_queries: Callable[[], None]
    _absorb_job_writes: Callable[[list[dict[str, Any]], int], None]
    _app_settings: AppSettings | None
    """The ``from_app`` settings of a driver made by it (for ``restart(app=...)``)."""

    def _check_open(self) -> None:  # the driver's
        raise NotImplementedError

    def save_checkpoint(self, path: str | os.PathLike[str]) -> None:
        """Copy the checkpoint of every query (offset and commit logs, state, metadata)
        to ``path``, a new or empty folder, as it stands after the last batch: queries
        are idle between the driver's steps, so the copy is at a batch boundary. The
        driver goes on unchanged.

        A new driver starts from the copy with ``TopologyTestDriver(topology,
        checkpoint=path)``, the same or a new version of the topology: batch ids, state,
        the watermark and Kafka topics' offsets go on (the copy is never changed: each
        driver works on its own copy of it). The copy also holds a manifest,
        ``pyspark-streamtest.json``, with what the driver adds to Spark's files.
        Records piped but not yet processed are not in a checkpoint (in production
        they wait in the topic): pipe them into the new driver.

        Raises :class:`~pyspark_streamtest.errors.DriverStoppedError` while a failed
        batch awaits its retry, and
        :class:`~pyspark_streamtest.errors.InvalidArgumentError` if ``path`` exists and
        is not an empty folder."""
        self._check_open()
        if not isinstance(path, (str, os.PathLike)):
            raise InvalidArgumentTypeError(
                f"save_checkpoint: path must be a str or path, got {type(path).__name__}"
            )
        self._queries.save(os.fspath(path), self._time.now_ms, self._broker.to_json())

    def _new_version(
        self, topology: TopologyFunction | None, app: App | None
    ) -> TopologyFunction | None:
        """The topology function of ``restart``'s new version, checked; None for none."""
        if topology is not None and app is not None:
            raise InvalidArgumentError(
                "restart: give the new version as topology= or as app=, not both"
            )
        if app is not None:
            if self._app_settings is None:
                raise InvalidArgumentError(
                    "restart(app=...) upgrades a driver made by from_app(); this driver runs "
                    "a topology function: pass the new version as topology="
                )
            return app_topology(app, self._app_settings)
        if topology is not None and not callable(topology):
            raise InvalidArgumentTypeError(
                f"topology must be a function taking a Topology, got {type(topology).__name__}"
            )
        return topology

    def _upgrade(self, topology: TopologyFunction) -> None:
        """Swap the (stopped) queries for the new version's, each output going on from
        its old query's checkpoint. Nothing changes if the new version fails to build
        (the queries stay stopped: start() runs the old version again)."""
        run = self._run
        with scoped_sql_conf(self._spark, run.sql_conf):
            inputs, built, job_rows = build_topology(
                topology, self._users_spark, run.jvm, self._link, kept_topics_of(self))
        old = self._queries
        queries = Queries(
            run.jvm, built, checkpoint_root=run.checkpoint_root, interval_ms=run.interval_ms,
            timeout_ms=run.timeout_ms, sql_conf=run.sql_conf, broker=self._broker,
            saved=old.as_saved(self._time.now_ms),
            carried={runner.name: runner for runner in old.runners},
        )
        self._release.detach()  # the old queries are closed here, not by the collector
        self._inputs = inputs
        self._outputs = {b.spec.name: b for b in built}
        self._queries = queries
        self._track(register=False)  # the new queries are released like the old ones were
        self._history.add_outputs(n for n, b in self._outputs.items() if b.spec.kafka is None)
        self._absorb_job_writes(job_rows, self._time.now_ms)  # the new version's main()
        self._time.use_queries(queries)
        self._generation += 1
        self._after_new_queries()
        old.close()  # stopped already: this deletes the old version's checkpoint folder
