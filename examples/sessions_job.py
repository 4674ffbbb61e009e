"""The sessionization half of issue 58's trial, as a team writes it, tested unchanged
through ``from_app`` in ``examples/test_sessions_job.py``.

App events from Kafka with a read limit, parsed, enriched by a stream-static join with
the ``users`` table, cut into sessions by user with ``applyInPandasWithState`` and an
event-time timeout (a session closes 30 minutes after its last event, once the
watermark passes that), and each closed session upserted into SQLite by a
``foreachBatch`` function, keyed by user and start so that Spark's retry of a batch
writes the same rows again, not new ones. ``--trigger availableNow`` runs it as the
nightly backfill, ``--trigger "1 minute"`` (the default) as a stream. It knows nothing
of the test library.
"""

from __future__ import annotations

import argparse
import sqlite3
from collections.abc import Iterator, Sequence
from typing import Any

import pandas as pd
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.streaming.state import GroupState, GroupStateTimeout

BROKERS = "kafka-1.prod:9092"
SCHEMA = "user STRING, page STRING, at TIMESTAMP"
GAP_MS = 30 * 60 * 1000
SESSION = "user STRING, plan STRING, start TIMESTAMP, end TIMESTAMP, events LONG"
STATE = "plan STRING, start TIMESTAMP, last TIMESTAMP, events LONG"


def cut_sessions(key: tuple[Any, ...], frames: Iterator[pd.DataFrame],
                 state: GroupState) -> Iterator[pd.DataFrame]:
    """One open session per user. A new event more than the gap after the session's
    last one closes it and opens the next; with no new event, the session closes when
    the watermark passes its last event plus the gap (Spark fires an event-time
    timeout only once the watermark is past the timeout timestamp). An event that Spark
    admits though the watermark is already past its session's end closes that session
    at once: Spark refuses a timeout earlier than the watermark (the property test of
    the job found that case: Spark drops late rows by the previous batch's watermark,
    while timeouts are checked against the current one)."""
    closed: list[tuple[Any, ...]] = []
    if state.hasTimedOut:
        closed.append(state.get)
        state.remove()
    else:
        session = state.get if state.exists else None
        rows = pd.concat(list(frames)).sort_values("at")
        for plan, at in zip(rows["plan"], rows["at"], strict=True):
            if session is None:
                session = (plan, at, at, 1)
            elif (at - session[2]).total_seconds() * 1000 > GAP_MS:
                closed.append(session)
                session = (plan, at, at, 1)
            elif (session[1] - at).total_seconds() * 1000 > GAP_MS:
                closed.append((plan, at, at, 1))  # a straggler from before the session
            else:  # within the gap (an out-of-order event may start it earlier)
                session = (session[0], min(session[1], at), max(session[2], at),
                           session[3] + 1)
        assert session is not None
        timeout = int(pd.Timestamp(session[2]).timestamp() * 1000) + GAP_MS
        if timeout < state.getCurrentWatermarkMs():  # already past (Spark refuses it)
            closed.append(session)
            state.remove()
        else:
            state.update(session)
            state.setTimeoutTimestamp(timeout)
    yield pd.DataFrame({"user": [key[0]] * len(closed), "plan": [c[0] for c in closed],
                        "start": [c[1] for c in closed], "end": [c[2] for c in closed],
                        "events": [int(c[3]) for c in closed]})


def upsert_into(database: str):
    """The ``foreachBatch`` function: closed sessions upserted into SQLite with the
    job's own client (the driver does not see this write), keyed by the batch id too,
    so that Spark's run of a batch again replaces its rows instead of adding to them;
    the ``sessions`` view adds up the parts of a session that closed in two batches (a
    straggler that arrived after its session closed)."""
    def upsert(batch: DataFrame, batch_id: int) -> None:
        rows = [(r.user, r.start.isoformat(), batch_id, r.plan, r.end.isoformat(), r.events)
                for r in batch.collect()]
        with sqlite3.connect(database) as db:
            db.execute("CREATE TABLE IF NOT EXISTS session_parts (user TEXT, start TEXT, "
                       "batch INTEGER, plan TEXT, end TEXT, events INTEGER, "
                       "PRIMARY KEY (user, start, batch))")
            db.execute("CREATE VIEW IF NOT EXISTS sessions AS SELECT user, min(plan) AS "
                       "plan, start, max(end) AS end, sum(events) AS events FROM "
                       "session_parts GROUP BY user, start")
            db.executemany("INSERT INTO session_parts VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT "
                           "(user, start, batch) DO UPDATE SET plan = excluded.plan, "
                           "end = excluded.end, events = excluded.events", rows)
    return upsert


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="sessions")
    parser.add_argument("--trigger", default="1 minute",
                        help='"availableNow" for a backfill, or a processing-time interval')
    parser.add_argument("--database", default="/var/lib/sessions/sessions.db")
    parser.add_argument("--max-offsets", type=int, default=500)
    args = parser.parse_args(argv)

    spark = SparkSession.builder.appName("sessions").getOrCreate()
    users = spark.table("users").select("user", "plan")
    events = (spark.readStream.format("kafka").option("kafka.bootstrap.servers", BROKERS)
              .option("subscribe", "app-events").option("startingOffsets", "earliest")
              .option("maxOffsetsPerTrigger", args.max_offsets).load()
              .select(F.from_json(F.col("value").cast("string"), SCHEMA).alias("e"))
              .select("e.*").where(F.col("user").isNotNull())
              .withWatermark("at", "10 minutes"))
    sessions = (events.join(users, "user", "left")
                .withColumn("plan", F.coalesce("plan", F.lit("free")))
                .groupBy("user").applyInPandasWithState(
                    cut_sessions, SESSION, STATE, "append",
                    GroupStateTimeout.EventTimeTimeout))
    writer = (sessions.writeStream.foreachBatch(upsert_into(args.database))
              .queryName("sessions")
              .option("checkpointLocation", "s3a://prod/checkpoints/sessions"))
    if args.trigger == "availableNow":
        writer = writer.trigger(availableNow=True)
    else:
        writer = writer.trigger(processingTime=args.trigger)
    writer.start()
    spark.streams.awaitAnyTermination()


if __name__ == "__main__":
    main()
