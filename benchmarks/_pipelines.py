"""The pipelines the benchmark measures: each as a plan on DataFrames, as a topology for
the driver and (``BARE``) as the same plan for Spark alone (``benchmarks/_bare.py``)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from datetime import datetime, timezone
from typing import Any

import pandas as pd
from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql.streaming.state import GroupStateTimeout

from pyspark_streamtest import Topology

T0 = datetime(2024, 1, 1, tzinfo=timezone.utc)
SCHEMA = "k STRING, v INT, ts TIMESTAMP"


def stateless_plan(events: DataFrame) -> DataFrame:
    return events.where(F.col("v") % 2 == 0).select("k", "v")


def windowed_plan(events: DataFrame) -> DataFrame:
    return events.withWatermark("ts", "5 seconds").groupBy(F.window("ts", "10 seconds"),
                                                           "k").count()


def stateless(t: Topology) -> None:
    t.output("out", stateless_plan(t.input("events", schema=SCHEMA, timestamp_column="ts")))


def windowed(t: Topology) -> None:
    t.output("out", windowed_plan(t.input("events", schema=SCHEMA, timestamp_column="ts")))


RIGHT_SCHEMA = "rk STRING, rts TIMESTAMP"


def join_plan(left: DataFrame, right: DataFrame) -> DataFrame:
    return left.withWatermark("ts", "5 seconds").join(right.withWatermark("rts", "5 seconds"),
                                                      F.expr("rk = k AND rts >= ts AND rts <= "
                                                             "ts + interval 5 seconds"))


def joined(t: Topology) -> None:
    t.output("out", join_plan(t.input("left", schema=SCHEMA, timestamp_column="ts"),
                              t.input("right", schema=RIGHT_SCHEMA, timestamp_column="rts")))


def _running_count(key: tuple[Any, ...], frames: Iterator[Any], state: Any) -> Iterator[Any]:
    total = (state.get[0] if state.exists else 0) + sum(len(f) for f in frames)
    state.update((total,))
    yield pd.DataFrame({"k": [key[0]], "n": [total]})


def grouped_state_plan(events: DataFrame) -> DataFrame:
    return events.groupBy("k").applyInPandasWithState(
        _running_count, "k STRING, n LONG", "n LONG", "Update", GroupStateTimeout.NoTimeout)


def grouped_state(t: Topology) -> None:
    t.output("out", grouped_state_plan(t.input("events", schema=SCHEMA, timestamp_column="ts")),
             output_mode="update")


def key_counts(t: Topology) -> None:
    events = t.input("events", schema=SCHEMA, timestamp_column="ts")
    t.output("out", events.groupBy("k").count(), output_mode="update")


def total_plan(events: DataFrame) -> DataFrame:
    return events.groupBy().count()


def total_count(t: Topology) -> None:
    t.output("out", total_plan(t.input("events", schema=SCHEMA, timestamp_column="ts")),
             output_mode="complete")


PROFILED: dict[str, tuple[Callable[[Topology], None], tuple[str, ...]]] = {
    "stateless": (stateless, ("events",)),
    "windowed": (windowed, ("events",)),
    "join": (joined, ("left", "right")),
    "grouped-state": (grouped_state, ("events",)),
}

# The same steps' plans for Spark alone (benchmarks/_bare.py): inputs, plan, micro-batches
# per step (the data batch, and the no-data batch where the watermark moves), output mode.
BARE: dict[str, tuple[dict[str, str], Callable[..., DataFrame], int, str]] = {
    "stateless": ({"events": SCHEMA}, stateless_plan, 1, "append"),
    "windowed": ({"events": SCHEMA}, windowed_plan, 2, "append"),
    "join": ({"left": SCHEMA, "right": RIGHT_SCHEMA}, join_plan, 2, "append"),
    "grouped-state": ({"events": SCHEMA}, grouped_state_plan, 1, "update"),
}
