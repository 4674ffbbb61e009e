"""The micro-batches of a driver step, run by Spark alone.

A driver step's real floor is not ``spark.range(1).count()`` but the micro-batches the
step must run. :class:`BareQuery` runs the same ones with no driver: the same plan over
the same sources (one JVM ``MemoryStream`` of JSON lines per input, parsed with
``from_json`` as the driver's inputs are), started through the same
``StreamingQueryManager.startQuery`` with the same per-query settings (the checkpoint
manager, no polling delay after an idle trigger), but with Spark's
own JVM ``ManualClock`` as the trigger clock and Spark's ``MemorySink``, so no Python
runs during a trigger. A step adds each input's rows as one offset, advances the clock
one trigger interval and waits until that batch's progress is out and the trigger is
over; where the watermark moved it advances once more, for the no-data batch Spark then
runs (the driver runs that one at the same processing time instead).

The wait polls the query from Python (two or three Py4J calls, then 1 ms of sleep), so a
step's figure holds up to about two milliseconds per batch of waiting that is not Spark's.
Making the rows' JSON lines (tens of microseconds for ten rows) is the only other Python
in a step.
"""

from __future__ import annotations

import shutil
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.types import StructType, _parse_datatype_string

from pyspark_streamtest._spark.alone import progress_time
from pyspark_streamtest._spark.jvm import Jvm
from pyspark_streamtest._spark.query.checkpoints.settings import local_checkpoint_conf
from pyspark_streamtest._spark.query.clock import IDLE_TRIGGER_CONF
from pyspark_streamtest._spark.query.conf import scoped_sql_conf
from pyspark_streamtest._spark.query.memory_stream import JsonMemoryStream
from pyspark_streamtest._spark.query.start import start_query
from pyspark_streamtest.core.values import StructEncoder

_INTERVAL_MS = 1000
_TIMEOUT_S = 60.0


def _struct(ddl: str) -> StructType:
    parsed = _parse_datatype_string(ddl)
    assert isinstance(parsed, StructType)
    return parsed


class BareQuery:
    """One streaming query over JSON memory streams, driven by Spark's ``ManualClock``."""

    def __init__(self, spark: SparkSession, schemas: Mapping[str, str],
                 plan: Callable[..., DataFrame], *, batches: int,
                 output_mode: str = "append") -> None:
        """``plan`` gets one DataFrame per input, in the order of ``schemas``; a step runs
        ``batches`` micro-batches (2 for the no-data batch of a moved watermark)."""
        jvm = Jvm(spark)
        structs = {name: _struct(ddl) for name, ddl in schemas.items()}
        self._streams = {name: JsonMemoryStream(jvm, struct) for name, struct in structs.items()}
        self._encoders = {name: StructEncoder(struct) for name, struct in structs.items()}
        self._batches = batches
        self._folder = tempfile.mkdtemp(prefix="pyspark-streamtest-bare-")
        self._clock: Any = jvm.jvm.org.apache.spark.util.ManualClock(0)
        sink = jvm.jvm.org.apache.spark.sql.execution.streaming.sources.MemorySink()
        frame = plan(*(stream.dataframe for stream in self._streams.values()))
        # The driver's per-query settings (see the module doc).
        with scoped_sql_conf(spark, {**local_checkpoint_conf(jvm), **IDLE_TRIGGER_CONF}):
            self._query: Any = start_query(
                jvm, frame, name=f"bare-{id(self)}", checkpoint=self._folder,
                output_mode=output_mode, trigger_interval_ms=_INTERVAL_MS, clock=self._clock,
                sink=sink)
        self._now_ms = 0
        # The first trigger runs at once and finds no data: wait for it to end, so the
        # first step's rows are not read by it.
        def first_trigger_over() -> bool:
            status = self._query.status()
            return str(status.message()).startswith("Waiting") and not status.isTriggerActive()

        self._wait(first_trigger_over)

    def lines(self, rows: Mapping[str, Sequence[Any]]) -> dict[str, list[str]]:
        """Each input's rows as the JSON lines the driver would hand to Spark."""
        return {name: [self._encoders[name].json_line(
            self._encoders[name].as_mapping(row, "value")) for row in batch]
            for name, batch in rows.items()}

    def step(self, lines: Mapping[str, list[str]]) -> None:
        """Add the lines (one offset per input) and run the step's batches."""
        for name, batch in lines.items():
            self._streams[name].add_json_lines(batch)
        for _ in range(self._batches):
            self._run_one_trigger()

    def _run_one_trigger(self) -> None:
        self._clock.advance(_INTERVAL_MS)
        self._now_ms += _INTERVAL_MS
        # A batch's progress carries its trigger's time; an idle trigger's may carry the
        # next batch id, so the id alone would not do.
        wanted = progress_time(self._now_ms)

        def done() -> bool:
            progress = self._query.lastProgress()
            return (progress is not None and progress.timestamp() == wanted
                    and not self._query.status().isTriggerActive())

        self._wait(done)

    def _wait(self, condition: Callable[[], bool]) -> None:
        deadline = time.monotonic() + _TIMEOUT_S
        while not condition():
            if self._query.exception().isDefined():
                raise RuntimeError(str(self._query.exception().get()))
            if time.monotonic() > deadline:
                raise TimeoutError(f"the bare query ran no batch at {self._now_ms} ms "
                                   f"in {_TIMEOUT_S:.0f} s")
            time.sleep(0.001)

    def close(self) -> None:
        try:
            self._query.stop()
        finally:
            shutil.rmtree(self._folder, ignore_errors=True)
