"""Topologies that scenario tests name as ``tests.scenario_topologies:function``."""

from __future__ import annotations

from pyspark.sql import functions as F

from pyspark_streamtest import Topology


def random_scores(t: Topology) -> None:
    """Not deterministic: ``rand()`` without a seed draws a new seed for every build."""
    clicks = t.input("clicks", schema="user STRING, url STRING, ts TIMESTAMP",
                     timestamp_column="ts")
    t.output("scored", clicks.select("user", F.round(F.rand(), 6).alias("score")))


def hashed_scores(t: Topology) -> None:
    """A score from the user's hash: deterministic. (``rand(seed=7)`` is not: its values
    differ between two runs of the same streaming query.)"""
    clicks = t.input("clicks", schema="user STRING, url STRING, ts TIMESTAMP",
                     timestamp_column="ts")
    t.output("scored", clicks.select("user", (F.abs(F.hash("user")) % 1000).alias("score")))
