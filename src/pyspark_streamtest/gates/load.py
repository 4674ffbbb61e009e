"""Busy processes that compete for the CPU, to shake out timing dependence."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager

from ..errors import hide_our_frames

__tracebackhide__ = hide_our_frames


@contextmanager
def busy_processes(count: int) -> Iterator[list[subprocess.Popen[bytes]]]:
    """Keep ``count`` Python processes spinning while the block runs; always killed."""
    started: list[subprocess.Popen[bytes]] = []
    try:
        for _ in range(max(0, count)):
            started.append(subprocess.Popen([sys.executable, "-c", "while True: pass"]))
        yield started
    finally:
        for process in started:
            process.kill()
            process.wait()
