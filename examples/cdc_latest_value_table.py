"""Example 2: a CDC changelog topic materialized into a latest-value table.

``customers-cdc`` carries upserts (key = customer id, value = the row as JSON) and
tombstones (key = customer id, value null = the customer was deleted). The pipeline
keeps the latest row per customer in Spark state (``applyInPandasWithState``), drops
the state on a tombstone, and emits its own changelog to ``customers-table``: the new
row per changed key, or a tombstone when the key was deleted. Read as a table
(``read_key_values_to_map(tombstones="delete")``) the output topic is the current
table.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql.streaming.state import GroupStateTimeout

from pyspark_streamtest import Topology


def _latest_value(key: tuple[Any, ...], frames: Iterator[Any], state: Any) -> Iterator[Any]:
    import pandas as pd

    current = state.get[0] if state.exists else None
    for frame in frames:
        # One key lives in one Kafka partition, so offset order is the order of changes.
        for value in frame.sort_values("offset")["value"]:
            current = None if value is None else value
    if current is None:
        state.remove()
    else:
        state.update((current,))
    yield pd.DataFrame({"key": [key[0]], "value": [current]})


def materialize(changes: DataFrame) -> DataFrame:
    """Kafka source rows in; one Kafka sink row per key changed in the batch out."""
    rows = changes.select(
        F.col("key").cast("string").alias("key"),
        F.col("value").cast("string").alias("value"),
        "offset",
    )
    return rows.groupBy("key").applyInPandasWithState(
        _latest_value,
        "key STRING, value STRING",
        "value STRING",
        "Update",
        GroupStateTimeout.NoTimeout,
    )


def topology(t: Topology) -> None:
    changes = t.kafka_input("customers-cdc", partitions=2)
    t.kafka_output("table", materialize(changes), topic="customers-table",
                   output_mode="update", partitions=2)
