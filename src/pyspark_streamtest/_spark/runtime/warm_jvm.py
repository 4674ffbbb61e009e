"""Warm JVMs: a Spark JVM that outlives one pytest run, for the next runs to attach to.

Starting a JVM and a SparkContext is most of what one short pytest run costs (7 s of
a 10 s run of one small test on a quiet 2-core machine), and the first batches of every
run pay the JIT's warm-up again. With a warm JVM, a run of the plugin whose session is
local attaches to a JVM a previous run left (PySpark's own way: its ``launch_gateway``
connects to a running gateway given its port and secret), and creates its SparkContext
there; when the run ends, it stops its context and the JVM waits for the next run.

As if the JVM were new: each run has a SparkContext of its own (the previous one is
stopped: its sessions, temp views, SQL settings, cached tables, listeners, active
queries, Python workers and Spark's ``SparkEnv`` go with it), the state store cache is
emptied, and the logging configuration reloaded; checkpoints and the warehouse are
folders of the run. Python workers are new processes of the new context, so edited user
code (UDFs, state functions, ``foreachBatch`` functions) is the code that runs.

Which JVM a run may take: one whose **fingerprint** is the run's (this Python and
PySpark, the Java, the working folder, the JVM's Spark settings and environment
variables, see :func:`fingerprint`) and that **no other run holds** (a lock each run
holds for as long as its process lives; a concurrent run starts its own JVM). A JVM that
does not answer within :data:`ANSWER_TIMEOUT_S`, or whose keeper or process is gone, is
ended and replaced, never waited on longer. The gateway listens on 127.0.0.1 only, and
takes PySpark's secret; the folders are the user's only (0700, files 0600).

A keeper process per JVM (``_jvm_keeper.py``) holds the JVM's stdin (PySpark's JVM ends
when it closes), cleans the JVM after each run, and ends it after
:data:`DEFAULT_IDLE_S` without a run (``$STREAMTEST_WARM_JVM_IDLE``, seconds).
"""

from __future__ import annotations

import contextlib
import fcntl
import glob
import hashlib
import json
import os
import select
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ...errors import InvalidArgumentError, WarmJvmError, hide_our_frames
from ..query.callbacks import number_proxies_from
from . import _jvm_keeper

__tracebackhide__ = hide_our_frames

ENV_SWITCH = "STREAMTEST_WARM_JVM"
"""``auto`` (the default: on, unless ``$CI`` says this is a CI run), ``on`` or ``off``."""
ENV_IDLE = "STREAMTEST_WARM_JVM_IDLE"
"""Seconds a warm JVM waits for a run before it ends."""
ENV_MAX = "STREAMTEST_WARM_JVM_MAX"
"""How many warm JVMs may wait for runs at once (default :data:`MAX_WAITING`)."""
ENV_DIR = "STREAMTEST_WARM_JVM_DIR"
"""Where the warm JVMs' folders are (default: ``$XDG_RUNTIME_DIR/pyspark-streamtest``,
else ``~/.cache/pyspark-streamtest``, a ``jvms`` folder in it)."""
ENV_PROJECT = "STREAMTEST_WARM_JVM_PROJECT"
"""The project a run's JVMs belong to (default: :func:`project_of` the working folder;
the plugin sets it for the processes a run starts, so a test's own pytest runs share
their project's JVMs). A run ends only its own project's JVMs to keep the number
waiting, and ``warm-jvm stop`` only the current project's unless asked for all."""
PROJECT_MARKERS = ("pyproject.toml", "setup.cfg", "setup.py", "tox.ini", "pytest.ini", ".git")

DEFAULT_IDLE_S = 900.0
START_TIMEOUT_S = 180.0
"""How long a run waits for a new JVM to answer (a JVM start under heavy load)."""
ANSWER_TIMEOUT_S = 10.0
"""How long a warm JVM has to answer and be cleaned before it is given up as wedged."""

PER_RUN_SETTINGS = frozenset({
    "spark.sql.warehouse.dir", "spark.pyspark.python", "spark.executorEnv.PYTHONPATH",
})
"""Settings that are the run's own (a folder, a launcher of this process): given to the
run's SparkContext, not to the JVM, and no part of the fingerprint."""

_VOLATILE_ENV = frozenset({
    "_", "OLDPWD", "PWD", "SHLVL", "TERM", "COLUMNS", "LINES", "PS1", "PS2", "PROMPT",
    "SSH_TTY", "WINDOWID", "TMUX_PANE", "PYSPARK_GATEWAY_PORT", "PYSPARK_GATEWAY_SECRET",
    ENV_SWITCH, ENV_IDLE, ENV_DIR, ENV_MAX, ENV_PROJECT,
})
"""Environment variables that say where a shell or a pytest run is, not what the JVM
and its Python workers see (with every name starting with ``PYTEST_``)."""

_SWITCH_VALUES = {"auto": None, "on": True, "1": True, "true": True, "yes": True,
                  "off": False, "0": False, "false": False, "no": False}


def wanted(value: str | None) -> bool:
    """Whether runs use warm JVMs, for the option's value (``--streamtest-warm-jvm``, else
    ``$STREAMTEST_WARM_JVM``): ``on``, ``off``, or ``auto``/None: on, except in CI (a
    ``$CI`` of anything but ``false`` or ``0``, as CI services set), where each run is the
    only one and a process left running past the job would be in the way."""
    given = (value or os.environ.get(ENV_SWITCH) or "auto").strip().lower()
    if given not in _SWITCH_VALUES:
        raise InvalidArgumentError(
            f"the warm JVM setting {given!r} is not one of auto, on, off; set "
            f"--streamtest-warm-jvm / ${ENV_SWITCH} to one of them")
    choice = _SWITCH_VALUES[given]
    if choice is not None:
        return choice
    return os.environ.get("CI", "").strip().lower() in ("", "0", "false", "no")


def available() -> bool:
    """Whether this platform can keep one (POSIX file locks and sessions)."""
    return os.name == "posix" and hasattr(os, "setsid")


@dataclass
class _Held:
    folder: str
    lock: int
    jvm_pid: int
    keeper_pid: int
    started_now: bool


_held: _Held | None = None
"""The warm JVM this process holds (one: a process has one JVM)."""


def held() -> _Held | None:
    """The warm JVM this process attached to, if any."""
    return _held


def attach(settings: Mapping[str, str], env: Mapping[str, str]) -> Any | None:
    """A Py4J gateway to a warm JVM for a context with ``settings`` whose JVM gets
    ``env`` (this process's environment, as a JVM it starts would inherit it): a free one
    with the same fingerprint, cleaned, or a new one. None where none could be started
    (the caller then starts a JVM of its own, which reports why a JVM cannot start)."""
    global _held
    if _held is not None:
        raise WarmJvmError("this process already holds a warm JVM; a process has one JVM")
    root = _root()
    jvm_settings = {k: v for k, v in settings.items() if k not in PER_RUN_SETTINGS}
    key = fingerprint(jvm_settings, env)
    for folder in sorted(glob.glob(os.path.join(root, f"{key}-*"))):
        gateway = _take(folder, started_now=False)
        if gateway is not None:
            return gateway
    return _start(root, key, jvm_settings, env)


def fingerprint(settings: Mapping[str, str], env: Mapping[str, str]) -> str:
    """What a JVM must share with a run that attaches to it, hashed: this interpreter,
    the PySpark installation (version, folder, when it was installed), the Java
    (``$JAVA_HOME``, else the ``java`` on the ``PATH``, and when it was installed), the
    working folder, the JVM's Spark settings (JVM options, class path, memory, master and
    the rest), and the environment variables but the ones that only say where a shell or
    a pytest run is (:data:`_VOLATILE_ENV`, ``PYTEST_*``)."""
    import pyspark

    java = shutil.which("java", path=env.get("PATH")) if not env.get("JAVA_HOME") else (
        os.path.join(env["JAVA_HOME"], "bin", "java"))
    facts = {
        "python": os.path.realpath(sys.executable),
        "pyspark": [pyspark.__version__, os.path.realpath(pyspark.__file__),
                    _modified(pyspark.__file__)],
        "java": [os.path.realpath(java) if java else None, _modified(java)],
        "cwd": os.getcwd(),
        "settings": sorted(settings.items()),
        "env": sorted((k, v) for k, v in env.items()
                      if k not in _VOLATILE_ENV and not k.startswith("PYTEST_")),
    }
    return hashlib.sha256(json.dumps(facts).encode()).hexdigest()[:20]


def project_of(folder: str) -> str:
    """The project ``folder`` belongs to: the nearest folder at or above it that holds a
    :data:`PROJECT_MARKERS` file (``pyproject.toml``, ``.git``, ...), else ``folder``."""
    here = Path(folder).resolve()
    for candidate in (here, *here.parents):
        if any((candidate / marker).exists() for marker in PROJECT_MARKERS):
            return str(candidate)
    return str(here)


def current_project() -> str:
    """This process's project: ``$STREAMTEST_WARM_JVM_PROJECT``, else the working
    folder's (:func:`project_of`)."""
    return os.environ.get(ENV_PROJECT) or project_of(os.getcwd())


def project_of_jvm(folder: str) -> str | None:
    """The project a warm JVM's folder was started for; None for one started before
    JVMs recorded it."""
    try:
        return Path(folder, "project").read_text()
    except OSError:
        return None


def _modified(path: str | None) -> int | None:
    try:
        return os.stat(path).st_mtime_ns if path else None
    except OSError:
        return None


def _root() -> str:
    """The folder of the warm JVMs' folders: made private if new; refused if another
    user owns it or others may write to it."""
    given = os.environ.get(ENV_DIR)
    if given:
        root = Path(given)
    elif os.environ.get("XDG_RUNTIME_DIR"):
        root = Path(os.environ["XDG_RUNTIME_DIR"], "pyspark-streamtest", "jvms")
    else:
        root = Path.home() / ".cache" / "pyspark-streamtest" / "jvms"
    root.mkdir(mode=0o700, parents=True, exist_ok=True)
    facts = root.stat()
    if facts.st_uid != os.getuid():
        raise WarmJvmError(
            f"the warm JVM folder {root} belongs to another user; set ${ENV_DIR} to a "
            f"folder of yours, or turn warm JVMs off (--streamtest-warm-jvm=off)")
    if stat.S_IMODE(facts.st_mode) & 0o077:
        os.chmod(root, 0o700)  # ours: made private before anything secret goes in
    return str(root)


def _take(folder: str, *, started_now: bool, lock: int | None = None) -> Any | None:
    """Lock ``folder``'s JVM (unless ``lock`` is its lock, taken), reach it and clean it;
    None (and the lock let go of) if another run holds it, or it is gone, ending or does
    not answer (then it is ended)."""
    global _held
    if lock is None:
        lock = _lock(folder)
        if lock is None:
            return None
    info = _read_info(folder)
    if info is None or not (_alive(info["jvm_pid"]) and _alive(info["keeper_pid"])):
        os.close(lock)
        if info is not None:
            _give_up(folder, info)
        return None
    gateway = _connect(info, _count_run(folder))
    if gateway is None:
        _give_up(folder, info)
        os.close(lock)
        return None
    _held = _Held(folder, lock, info["jvm_pid"], info["keeper_pid"], started_now)
    with contextlib.suppress(OSError):
        Path(folder, "used").touch(mode=0o600)  # for the choice of which waiting JVMs to end
    return gateway


def _lock(folder: str, patience_s: float = 0.5) -> int | None:
    """The folder's lock, taken; None if a run holds it. The keeper takes it for a moment
    every quarter second, so a held lock is tried for ``patience_s`` before it counts as
    another run's; while the keeper cleans the JVM after a run (it says so with a file),
    for as long as the cleaning may take."""
    started = time.monotonic()
    while True:
        try:
            descriptor = os.open(os.path.join(folder, "lock"), os.O_RDWR | os.O_CREAT, 0o600)
        except OSError:
            return None  # the folder went away
        try:
            fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(descriptor)
            waited = time.monotonic() - started
            cleaning = os.path.exists(os.path.join(folder, "cleaning"))
            if waited > (_jvm_keeper.CLEAN_TIMEOUT_S + 5 if cleaning else patience_s):
                return None
            time.sleep(0.02)
            continue
        return descriptor


def _count_run(folder: str) -> int:
    """How many runs attached to ``folder``'s JVM before this one (counted in its
    ``runs`` file, with the folder's lock held): the run's proxy range (see
    :func:`.callbacks.number_proxies_from`)."""
    path = os.path.join(folder, "runs")
    try:
        run = int(Path(path).read_text())
    except (OSError, ValueError):
        run = 0  # the JVM's first run
    _jvm_keeper._write_private(path, str(run + 1))
    return run


def _read_info(folder: str) -> dict[str, Any] | None:
    try:
        with open(os.path.join(folder, "gateway.json")) as file:
            info: dict[str, Any] = json.load(file)
    except (OSError, ValueError):
        return None
    return info


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    # A zombie (ended, its parent not told yet) is not alive.
    with contextlib.suppress(OSError), open(f"/proc/{pid}/stat") as file:
        return file.read().rsplit(")", 1)[-1].split()[0] != "Z"
    return True


def wait_gone(pids: Iterable[int], timeout_s: float) -> bool:
    """Wait until every process of ``pids`` has ended, for at most ``timeout_s``; True if
    they have. Where the kernel has process file descriptors (Linux 5.3+), each end is
    waited for on one; elsewhere a bounded poll stands in (no other process's end has a
    notification)."""
    deadline = time.monotonic() + timeout_s
    for pid in pids:
        while _alive(pid):
            left = deadline - time.monotonic()
            if left <= 0:
                return False
            try:
                descriptor = os.pidfd_open(pid)
            except (AttributeError, OSError):  # no pidfd here, or it has just ended
                time.sleep(min(0.05, left))
                continue
            try:
                select.select([descriptor], [], [], left)
            finally:
                os.close(descriptor)
    return True


def _connect(info: Mapping[str, Any], run: int) -> Any | None:
    """PySpark's gateway to the JVM of ``info``, the JVM cleaned for this run, the
    ``run``-th on it, whose Python proxies get ids of their own; None if it does not
    answer within :data:`ANSWER_TIMEOUT_S`."""
    from pyspark.java_gateway import launch_gateway

    found: list[Any] = []

    def connect() -> None:
        saved = {k: os.environ.get(k) for k in ("PYSPARK_GATEWAY_PORT", "PYSPARK_GATEWAY_SECRET")}
        os.environ["PYSPARK_GATEWAY_PORT"] = str(info["port"])
        os.environ["PYSPARK_GATEWAY_SECRET"] = str(info["secret"])
        try:
            gateway = launch_gateway()  # type: ignore[no-untyped-call]
        finally:  # never left for the processes this one starts
            for name, value in saved.items():
                if value is None:
                    os.environ.pop(name, None)
                else:
                    os.environ[name] = value
        number_proxies_from(gateway, run)
        found.append(gateway)
        _jvm_keeper.clean(gateway.jvm)
        # The keeper does this after each run, unless this run took the lock first.
        _jvm_keeper.forget_runs_objects(gateway)

    if not _jvm_keeper._bounded(connect, ANSWER_TIMEOUT_S) or not found:
        return None
    return found[0]


def _give_up(folder: str, info: Mapping[str, Any]) -> None:
    """End a JVM that cannot serve (wedged, half gone): both processes killed, the folder
    removed. Never waits on the JVM."""
    for pid in (info.get("keeper_pid"), info.get("jvm_pid")):
        if isinstance(pid, int):
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
    shutil.rmtree(folder, ignore_errors=True)


def _start(root: str, key: str, settings: Mapping[str, str],
           env: Mapping[str, str]) -> Any | None:
    """Start a keeper and its JVM with ``settings`` and ``env``, in this working folder,
    and take it; None if it could not start (its log says why)."""
    keep = _max_waiting() - 1  # the others that may wait with this one once its run ends
    folder = tempfile.mkdtemp(prefix=f"{key}-", dir=root)  # 0700
    _jvm_keeper._write_private(os.path.join(folder, "launch.json"), json.dumps(dict(settings)))
    _jvm_keeper._write_private(os.path.join(folder, "project"), current_project())
    lock = _lock(folder)
    assert lock is not None  # a new folder: nobody else knows of it
    idle = os.environ.get(ENV_IDLE) or str(DEFAULT_IDLE_S)
    try:
        idle_s = float(idle)
    except ValueError:
        os.close(lock)
        shutil.rmtree(folder, ignore_errors=True)
        raise InvalidArgumentError(
            f"${ENV_IDLE}={idle!r} is not a number of seconds; set it to one, e.g. 900"
        ) from None
    log = os.open(os.path.join(folder, "keeper.log"), os.O_WRONLY | os.O_CREAT, 0o600)
    try:
        # The keeper forks and its first process ends at once (waited for here): the
        # keeper is nobody's child, so it outlives this process without being its zombie
        # or its unfinished subprocess.
        subprocess.run(
            [sys.executable, _jvm_keeper.__file__, folder, str(idle_s)],
            env=dict(env), cwd=os.getcwd(), stdin=subprocess.DEVNULL, stdout=log,
            stderr=subprocess.STDOUT, start_new_session=True, check=False, timeout=60,
        )
    except subprocess.TimeoutExpired:  # its first process did not even fork: give up
        os.close(lock)
        _give_up(folder, {"keeper_pid": _keeper_pid(folder)})
        return None
    finally:
        os.close(log)
    deadline = time.monotonic() + START_TIMEOUT_S
    while _read_info(folder) is None:
        keeper = _keeper_pid(folder)
        if (keeper is not None and not _alive(keeper)) or time.monotonic() > deadline:
            os.close(lock)
            _give_up(folder, {"keeper_pid": keeper})
            return None
        time.sleep(0.02)
    gateway = _take(folder, started_now=True, lock=lock)
    _end_least_used(root, keep=keep)
    return gateway


MAX_WAITING = 4
"""How many warm JVMs may wait for runs at once (per user; ``$STREAMTEST_WARM_JVM_MAX``
sets another number); a run that starts one more ends the ones used least recently
beyond that. Runs in a new working folder each time (a project's own tests of its
plugin, say) would otherwise leave a JVM each."""


def _max_waiting() -> int:
    given = os.environ.get(ENV_MAX)
    if not given:
        return MAX_WAITING
    try:
        value = int(given)
    except ValueError:
        value = 0
    if value < 1:
        raise InvalidArgumentError(
            f"${ENV_MAX}={given!r} is not a whole number of JVMs of 1 or more; set it to "
            f"one, e.g. {MAX_WAITING}")
    return value


def _end_least_used(root: str, keep: int) -> None:
    """End this project's waiting JVMs beyond the ``keep`` used most recently (another
    project's are its own runs' to end, or their idle time's): each is taken from the
    runs (its gateway file removed while its lock is held: no run attaches to it
    afterwards), and its keeper, seeing the file gone, ends it. Does not wait for that."""
    waiting = []
    project = current_project()
    for folder in glob.glob(os.path.join(root, "*")):
        if folder == (_held.folder if _held else None) or project_of_jvm(folder) != project:
            continue
        lock = _lock(folder, patience_s=0)
        if lock is None:
            continue
        if _read_info(folder) is None:
            os.close(lock)
            continue
        waiting.append((_modified(os.path.join(folder, "used")) or 0, folder, lock))
    waiting.sort(reverse=True)
    for _used, folder, _taken in waiting[keep:]:
        with contextlib.suppress(OSError):
            os.unlink(os.path.join(folder, "gateway.json"))
    for _, _, lock in waiting:
        os.close(lock)


def _keeper_pid(folder: str) -> int | None:
    try:
        return int(Path(folder, "keeper.pid").read_text())
    except (OSError, ValueError):
        return None
