"""Where a process's time goes: the Spark work the drivers wait for, by kind.

The driver adds the wall time of each piece of Spark work as it happens: ``batches``
(from letting a trigger run until the query is idle again: planning, jobs, state and
sink of its micro-batches), ``queries`` (starting and stopping queries) and ``state
reads`` (``format("statestore")`` reads and the late-record replays). Counters only
grow; a reader takes the difference around what it measures (the plugin's
``--streamtest-durations`` does so around each test). Measured pieces never nest.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Literal

from ..errors import hide_our_frames

__tracebackhide__ = hide_our_frames

Kind = Literal["batches", "queries", "state reads"]
KINDS: tuple[Kind, ...] = ("batches", "queries", "state reads")

_lock = threading.Lock()
_seconds: dict[str, float] = dict.fromkeys(KINDS, 0.0)
_batches = 0


@contextmanager
def spending(kind: Kind) -> Iterator[None]:
    """Add the wall time of the ``with`` body (also when it raises) to ``kind``."""
    started = time.perf_counter()
    try:
        yield
    finally:
        elapsed = time.perf_counter() - started
        with _lock:
            _seconds[kind] += elapsed


def count_batches(count: int) -> None:
    """Note ``count`` more micro-batches recorded."""
    global _batches
    with _lock:
        _batches += count


def spent() -> dict[str, float]:
    """Seconds per kind so far in this process, and ``batches`` (a count)."""
    with _lock:
        return {**_seconds, "batch count": float(_batches)}
