"""Reading a query's state through Spark's state data source (PySpark 4.0 and later).

``format("state-metadata")`` lists a checkpoint's stateful operators and their stores;
``format("statestore")`` reads one store (or, for a stream-stream join, one side; for
transformWithState, one state variable) as of a committed batch. Both read the
checkpoint's files in a batch job of their own: the running query is not touched.
"""

from __future__ import annotations

from dataclasses import dataclass

from pyspark.sql import SparkSession
from pyspark.sql.types import StructType

from ...errors import hide_our_frames

__tracebackhide__ = hide_our_frames


@dataclass(frozen=True)
class StoreMetadata:
    """One row of ``format("state-metadata")``: a store of a stateful operator.
    ``operator_properties`` is Spark's ``operatorProperties`` JSON (what the operator
    recorded about itself: for transformWithState its time mode and state variables),
    or None where the source gives none."""

    operator_id: int
    operator_name: str
    store_name: str
    num_partitions: int
    operator_properties: str | None = None


def read_metadata(spark: SparkSession, checkpoint: str) -> list[StoreMetadata]:
    frame = spark.read.format("state-metadata").load(checkpoint)
    has_properties = "operatorProperties" in frame.columns
    rows = frame.collect()
    return sorted(
        (
            StoreMetadata(
                int(r["operatorId"]), str(r["operatorName"]), str(r["stateStoreName"]),
                int(r["numPartitions"]),
                r["operatorProperties"] if has_properties else None,
            )
            for r in rows
        ),
        key=lambda m: (m.operator_id, m.store_name),
    )


def state_reader_options(
    batch_id: int,
    operator_id: int,
    store_name: str | None,
    join_side: str | None,
    state_var: str | None,
) -> dict[str, str]:
    options = {"batchId": str(batch_id), "operatorId": str(operator_id)}
    if join_side is not None:
        options["joinSide"] = join_side
    elif store_name is not None:
        options["storeName"] = store_name
    if state_var is not None:
        options["stateVarName"] = state_var
    return options


def read_state_schema(spark: SparkSession, checkpoint: str, options: dict[str, str]) -> StructType:
    return spark.read.format("statestore").options(**options).load(checkpoint).schema
