"""Which drivers are open: the plugin fails a test that leaves one open.

Drivers register here when created and leave when closed (or collected). Each gets a
serial number, so the plugin can tell which ones a test made. Drivers made while a
fixture wider than one test is set up are *shared* (closed by that fixture, not by
the test). Imports nothing heavy: the plugin loads it without PySpark.
"""

from __future__ import annotations

import itertools
import threading
import weakref
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Protocol

from ..errors import hide_our_frames

__tracebackhide__ = hide_our_frames


class OpenDriver(Protocol):
    @property
    def closed(self) -> bool: ...

    def close(self) -> None: ...


_lock = threading.Lock()
_serials = itertools.count(1)
_open: weakref.WeakKeyDictionary[OpenDriver, tuple[int, bool]] = weakref.WeakKeyDictionary()
_shared_depth = 0


def register(driver: OpenDriver) -> None:
    """Note a new driver (called by the driver when it is created)."""
    with _lock:
        _open[driver] = (next(_serials), _shared_depth > 0)


def unregister(driver: OpenDriver) -> None:
    """Forget a driver (called when it closes)."""
    with _lock:
        _open.pop(driver, None)


def next_serial() -> int:
    """The serial number the next driver will get (without using it up)."""
    with _lock:
        global _serials
        serial = next(_serials)
        _serials = itertools.count(serial)
        return serial


@contextmanager
def shared() -> Iterator[None]:
    """Drivers made inside are shared (a wide fixture's), not any one test's."""
    global _shared_depth
    with _lock:
        _shared_depth += 1
    try:
        yield
    finally:
        with _lock:
            _shared_depth -= 1


def open_since(serial: int) -> list[OpenDriver]:
    """The open, unshared drivers made since ``serial``, oldest first."""
    with _lock:
        found = [(s, d) for d, (s, is_shared) in _open.items()
                 if s >= serial and not is_shared and not d.closed]
    return [d for _, d in sorted(found, key=lambda pair: pair[0])]
