"""Failures of Spark's machinery, not of the batch's data: which of Spark's errors mean
that the machine could not start or reach a Python worker in time.

Spark starts Python workers two ways. UDFs, pandas functions and the state functions
run in workers forked by a daemon (``pyspark.daemon``), which the JVM waits for 60 s.
The ``transformWithState`` planner (one per query start) and a few others run in a
worker started afresh, which must connect back to the JVM within 10 s, a limit Spark
hard-codes; its socket to the JVM waits ``SPARK_AUTH_SOCKET_TIMEOUT`` (15 s by
default). On a loaded machine those waits can run out although nothing is wrong with
the query or its data. Each sign below is Spark's own text for one of those cases.

The other machinery is Py4J's channel between the JVM and this Python process, over which
the JVM calls the driver's clock and sink, ``foreachBatch`` functions and listeners: its
failures (:func:`channel_failure`) are the harness's, never the batch's data.
"""

from __future__ import annotations

import os

from ...errors import hide_our_frames

__tracebackhide__ = hide_our_frames

_SIGNS: tuple[tuple[str, str], ...] = (
    ("Timed out while waiting for the Python worker to connect back",
     "a Python worker Spark started did not connect back to the JVM within Spark's "
     "fixed 10 s"),
    ("Python worker failed to connect back",
     "a Python worker Spark started did not connect back to the JVM"),
    ("CANNOT_OPEN_SOCKET",
     "a Python worker could not open its socket to the JVM in time"),
    ("Python daemon failed to launch worker",
     "Spark's Python daemon could not start a worker"),
    ("Failed to open socket to Python daemon",
     "the JVM could not reach Spark's Python daemon"),
    ("while reading the port number from",
     "Spark's Python daemon did not start"),
)


_CHANNEL_SIGNS: tuple[tuple[str, str], ...] = (
    ("Object ID unknown",
     "the JVM called a Python object this process no longer knows (Py4J: Object ID "
     "unknown)"),
    ("Unknown command",
     "the JVM and this Python process lost step on a Py4J connection (Unknown command)"),
    ("new communication channel",
     "the JVM could not open a Py4J callback connection to this Python process"),
    ("Error while sending a command",
     "a Py4J callback connection between the JVM and this Python process broke"),
)
"""Py4J's own texts (its Java side, 0.10.9.x) for a failed call from the JVM into this
Python process: the channel, not what the call was to do."""


def channel_failure(cause: str) -> str | None:
    """What went wrong with Py4J's channel between the JVM and this process, in a few
    words, for Spark's error text ``cause``; None when the channel did not fail (a
    ``foreachBatch`` function's own exception comes back over a working channel, with
    its Python traceback)."""
    for sign, meaning in _CHANNEL_SIGNS:
        if sign in cause:
            return meaning
    return None


def infrastructure_failure(cause: str) -> str | None:
    """What Spark's error text ``cause`` says went wrong with its machinery, in a few
    words, or None when it is not one of those failures (a UDF's exception, bad data)."""
    for sign, meaning in _SIGNS:
        if sign in cause:
            return meaning
    return None


def machine_load() -> str:
    """The load averages, for the message (``load 13.2 / 9.8 / 6.1 on 2 cores``)."""
    try:
        one, five, fifteen = os.getloadavg()
    except OSError:  # not available on this platform
        return "load unknown"
    return f"load {one:.1f} / {five:.1f} / {fifteen:.1f} on {os.cpu_count()} cores"
