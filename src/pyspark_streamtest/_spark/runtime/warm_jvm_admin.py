"""The warm JVMs a user has (see :mod:`.warm_jvm`): listed, or ended, for the
``pyspark-streamtest warm-jvm`` command."""

from __future__ import annotations

import contextlib
import glob
import os
import signal
from dataclasses import dataclass

from ...errors import hide_our_frames
from .warm_jvm import (
    _alive,
    _give_up,
    _lock,
    _read_info,
    _root,
    current_project,
    project_of_jvm,
    wait_gone,
)

__tracebackhide__ = hide_our_frames


@dataclass(frozen=True)
class WarmJvm:
    """A warm JVM waiting for runs, or serving one (``in_use``)."""

    folder: str
    jvm_pid: int
    keeper_pid: int
    in_use: bool
    project: str | None = None
    """The project it was started for (None: started before JVMs recorded it)."""


def running(*, all_projects: bool = False) -> list[WarmJvm]:
    """The warm JVMs of this user (of ``$STREAMTEST_WARM_JVM_DIR``'s folder, if set) that
    belong to the current project (see :func:`.warm_jvm.current_project`), or to any
    project with ``all_projects``."""
    found = []
    project = current_project()
    for folder in sorted(glob.glob(os.path.join(_root(), "*"))):
        info = _read_info(folder)
        if info is None or not _alive(info["jvm_pid"]):
            continue
        owner = project_of_jvm(folder)
        if not all_projects and owner != project:
            continue
        lock = _lock(folder)  # patient: the keeper takes it for a moment now and then
        if lock is not None:
            os.close(lock)
        found.append(WarmJvm(folder, info["jvm_pid"], info["keeper_pid"], lock is None, owner))
    return found


def stop(*, in_use: bool = False, all_projects: bool = False,
         timeout_s: float = 30.0) -> tuple[int, int]:
    """End the current project's warm JVMs (every project's with ``all_projects``) no
    run is using (and, with ``in_use``, those too: their runs lose their JVM). Returns
    how many were ended, and how many were left for their runs. Bounded: a JVM that does
    not end when its keeper ends it is killed."""
    ended = left = 0
    for jvm in running(all_projects=all_projects):
        lock = _lock(jvm.folder)  # held while it ends: no run takes it meanwhile
        if lock is None and not in_use:
            left += 1
            continue
        with contextlib.suppress(OSError):
            os.kill(jvm.keeper_pid, signal.SIGTERM)  # it ends its JVM as PySpark would
        wait_gone([jvm.jvm_pid, jvm.keeper_pid], timeout_s)
        _give_up(jvm.folder, {"keeper_pid": jvm.keeper_pid, "jvm_pid": jvm.jvm_pid})
        if lock is not None:
            os.close(lock)
        ended += 1
    return ended, left
