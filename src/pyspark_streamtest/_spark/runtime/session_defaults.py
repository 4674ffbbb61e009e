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

from ...errors import hide_our_frames

__tracebackhide__ = hide_our_frames


CONNECT_MODE = "SPARK_CONNECT_MODE_ENABLED"
"""PySpark's switch of a process into Spark Connect mode (``pyspark.sql.utils.is_remote``)."""
LOCAL_REMOTE = "SPARK_LOCAL_REMOTE"
"""PySpark's mark of a process whose Connect server is local (its JVM is this process's)."""


def enter_connect_mode() -> Callable[[], None]:
    """Put this process in Spark Connect mode now, as ``SparkSession.builder.remote(...)``
    does, so that code imported from now on (a test module's ``F.udf`` at its top) makes
    Connect objects, as it does where a job runs on Connect; returns the undo."""
    import os

    before = {name: os.environ.get(name) for name in (CONNECT_MODE, LOCAL_REMOTE)}
    os.environ[CONNECT_MODE] = "1"
    os.environ[LOCAL_REMOTE] = "1"

    def undo() -> None:
        for name, value in before.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value

    return undo


@dataclass(frozen=True)
class SessionDefaults:
    """What a created session gets for each argument its caller left out."""

    master: str = "local[2]"
    conf: Mapping[str, str] = field(default_factory=dict)
    jvm_logs: bool = False
    jvm_options: str = ""
    warm_jvm: bool = False
    """Whether a local session attaches to a warm JVM (see :mod:`.warm_jvm`)."""
    connect: bool = False
    """Whether the session is a Spark Connect one (see :mod:`.connect`)."""


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
