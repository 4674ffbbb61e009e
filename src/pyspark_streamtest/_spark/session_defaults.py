"""The settings a session the library creates takes when the caller gives none.

Outside pytest: ``local[2]``, no extra settings, quiet JVM logs. Under the pytest plugin:
the run's ``--streamtest-master`` / ``$STREAMTEST_MASTER`` / ``streamtest_master``,
``--streamtest-conf``, ``--streamtest-jvm-logs`` and JVM options, so that a driver made
without ``spark=`` (or ``test_spark_session()``) runs where the report header says, and
the plugin adopts the session (stops it when pytest ends, watches its JVM).

Imports nothing heavy: the plugin installs its defaults without importing PySpark.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from ..errors import hide_our_frames

__tracebackhide__ = hide_our_frames


@dataclass(frozen=True)
class SessionDefaults:
    """What a created session gets for each argument its caller left out."""

    master: str = "local[2]"
    conf: Mapping[str, str] = field(default_factory=dict)
    jvm_logs: bool = False
    jvm_options: str = ""
    warm_jvm: bool = False
    """Whether a local session attaches to a warm JVM (see :mod:`.warm_jvm`)."""


@dataclass(frozen=True)
class _Installed:
    defaults: Callable[[], SessionDefaults]
    created: Callable[[Any], None]


_installed: list[_Installed] = []


def install(
    defaults: Callable[[], SessionDefaults], created: Callable[[Any], None]
) -> Callable[[], None]:
    """Make ``defaults()`` the defaults of every session created from now on, and call
    ``created(session)`` with each session created with them; returns the undo (a
    nested pytest run installs its own and undoes it when it ends)."""
    entry = _Installed(defaults, created)
    _installed.append(entry)

    def undo() -> None:
        if entry in _installed:
            _installed.remove(entry)

    return undo


def current() -> tuple[SessionDefaults, Callable[[Any], None] | None]:
    """The defaults in force and whom to tell of a session created with them."""
    if not _installed:
        return SessionDefaults(), None
    entry = _installed[-1]
    return entry.defaults(), entry.created
