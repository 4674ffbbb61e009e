"""The names the driver gives its queries and their checkpoints, and those the oracle
gives the queries it runs beside them: every room that tells a driver's query from a
user's (the plugin's leak guard, the oracle, the runner) reads them here."""

from __future__ import annotations

from ..errors import hide_our_frames

__tracebackhide__ = hide_our_frames

__all__ = ["ALONE_SUFFIX", "ORACLE_PREFIX", "QUERY_PREFIX", "is_drivers_query"]

QUERY_PREFIX = "streamtest-"
"""A driver's queries are named ``streamtest-<output>-<serial>``."""
ORACLE_PREFIX = "spark-alone-"
"""The oracle's query run by Spark alone is named after its driver's query, with this
before it."""
ALONE_SUFFIX = ".alone"
"""The checkpoint of the oracle's query is the driver's query's plus this."""


def is_drivers_query(name: str | None) -> bool:
    """Whether a streaming query of this name is one a driver started: its own, or the
    one the differential oracle runs beside it."""
    return (name or "").startswith((QUERY_PREFIX, ORACLE_PREFIX + QUERY_PREFIX))
