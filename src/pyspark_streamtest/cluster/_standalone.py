"""A Spark standalone cluster on this machine: Spark's own Master and Workers, started
from the installed PySpark with ``spark-class``, bound to 127.0.0.1, their work and log
folders under a private state folder, stopped by the process ids recorded there."""

from __future__ import annotations

import contextlib
import json
import os
import select
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from dataclasses import asdict, dataclass
from pathlib import Path

from .._spark.runtime.home import spark_class, spark_home
from ..errors import ClusterError, ClusterRunningError, hide_our_frames

__tracebackhide__ = hide_our_frames

_STATE_FILE = "cluster.json"
_MASTER = "org.apache.spark.deploy.master.Master"
_WORKER = "org.apache.spark.deploy.worker.Worker"


@dataclass(frozen=True)
class Cluster:
    """A running cluster, as recorded in its state folder."""

    url: str
    """The master's URL, ``spark://127.0.0.1:PORT``: give it to ``--streamtest-master``."""
    web_ui: str
    master_pid: int
    worker_pids: tuple[int, ...]
    cores: int
    """Cores each worker offers."""
    memory: str
    """Memory each worker offers to executors."""
    state_dir: str

    @property
    def workers(self) -> int:
        return len(self.worker_pids)


def default_state_dir() -> Path:
    """``$STREAMTEST_CLUSTER_DIR``, else ``$XDG_STATE_HOME/pyspark-streamtest/cluster``
    (``~/.local/state/...`` without it): never inside the installed packages."""
    given = os.environ.get("STREAMTEST_CLUSTER_DIR")
    if given:
        return Path(given)
    base = os.environ.get("XDG_STATE_HOME") or os.path.join(Path.home(), ".local", "state")
    return Path(base, "pyspark-streamtest", "cluster")


def start_cluster(
    *, workers: int = 2, cores: int = 2, memory: str = "2g", port: int | None = None,
    state_dir: str | os.PathLike[str] | None = None, timeout: float = 120.0,
) -> Cluster:
    """Start a Master and ``workers`` Workers on 127.0.0.1 and wait until every worker
    has registered with the master (at most ``timeout`` seconds)."""
    if workers < 1 or cores < 1:
        raise ClusterError(f"a cluster needs at least 1 worker and 1 core each, got "
                           f"workers={workers}, cores={cores}")
    folder = Path(state_dir) if state_dir is not None else default_state_dir()
    running = cluster_status(folder)
    if running is not None:
        raise ClusterRunningError(
            f"a cluster started by pyspark-streamtest is already running at {running.url} "
            f"(state folder {folder}); stop it first with `pyspark-streamtest cluster stop`"
        )
    java = _java()
    master_port = _free_port(port)
    web_port = _free_port(None)
    shutil.rmtree(folder, ignore_errors=True)
    (folder / "logs").mkdir(parents=True)
    env = {**os.environ, "SPARK_HOME": spark_home(), "SPARK_LOCAL_IP": "127.0.0.1",
           "SPARK_LOG_DIR": str(folder / "logs"), "PYSPARK_PYTHON": sys.executable,
           "SPARK_NO_DAEMONIZE": "1",
           # no REST submission server: it would take the fixed port 6066
           "SPARK_MASTER_OPTS": "-Dspark.master.rest.enabled=false"}
    if java is not None:
        env["JAVA_HOME"] = java
    processes: list[subprocess.Popen[bytes]] = []
    try:
        processes.append(_launch(folder, "master", env, [
            _MASTER, "--host", "127.0.0.1", "--port", str(master_port),
            "--webui-port", str(web_port)]))
        url = f"spark://127.0.0.1:{master_port}"
        for index in range(workers):
            work = folder / f"worker-{index + 1}"
            work.mkdir()
            processes.append(_launch(folder, f"worker-{index + 1}", env, [
                _WORKER, "--host", "127.0.0.1", "--port", str(_free_port(None)),
                "--webui-port", str(_free_port(None)), "--cores", str(cores),
                "--memory", memory, "--work-dir", str(work), url]))
        web_ui = f"http://127.0.0.1:{web_port}"
        _await_workers(web_ui, workers, processes, folder, timeout)
    except BaseException:
        _stop_pids([p.pid for p in reversed(processes)], timeout=30.0)
        raise
    cluster = Cluster(url, web_ui, processes[0].pid, tuple(p.pid for p in processes[1:]),
                      cores, memory, str(folder))
    (folder / _STATE_FILE).write_text(json.dumps(asdict(cluster), indent=2))
    return cluster


def cluster_status(state_dir: str | os.PathLike[str] | None = None) -> Cluster | None:
    """The cluster recorded in the state folder if its master still runs, else None."""
    cluster = _recorded(state_dir)
    return cluster if cluster is not None and _is_ours(cluster.master_pid) else None


def stop_cluster(
    state_dir: str | os.PathLike[str] | None = None, *, timeout: float = 30.0
) -> Cluster | None:
    """Stop exactly the processes the state folder records (workers, their executors,
    then the master) and delete the folder. Returns what was stopped, None if nothing
    was recorded."""
    cluster = _recorded(state_dir)
    if cluster is None:
        return None
    _stop_pids([*cluster.worker_pids, cluster.master_pid], timeout=timeout)
    shutil.rmtree(cluster.state_dir, ignore_errors=True)
    return cluster


def _recorded(state_dir: str | os.PathLike[str] | None) -> Cluster | None:
    """The cluster the state folder's file records (running or not), or None."""
    folder = Path(state_dir) if state_dir is not None else default_state_dir()
    try:
        recorded = json.loads((folder / _STATE_FILE).read_text())
        return Cluster(**{**recorded, "worker_pids": tuple(recorded["worker_pids"]),
                          "state_dir": str(folder)})
    except (OSError, ValueError, TypeError, KeyError):
        return None


# --- processes ---------------------------------------------------------------------------
def _java() -> str | None:
    """JAVA_HOME if it holds a java, else None when ``java`` is on PATH."""
    home = os.environ.get("JAVA_HOME")
    if home and os.access(os.path.join(home, "bin", "java"), os.X_OK):
        return home
    if shutil.which("java") is None:
        raise ClusterError(
            "no Java found: Spark's master and workers need Java 17 or later on PATH, or "
            "JAVA_HOME set to its folder"
        )
    return None


def _free_port(wanted: int | None) -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        try:
            probe.bind(("127.0.0.1", wanted or 0))
        except OSError:
            raise ClusterError(
                f"port {wanted} on 127.0.0.1 is busy; choose another with --port, or leave "
                "--port out to take a free one"
            ) from None
        port: int = probe.getsockname()[1]
        return port


def _launch(folder: Path, name: str, env: dict[str, str],
            args: list[str]) -> subprocess.Popen[bytes]:
    with open(folder / "logs" / f"{name}.log", "wb") as log:
        return subprocess.Popen(  # its own session: stopped as a group, with executors
            [spark_class(), *args], env=env, stdout=log, stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL, start_new_session=True, cwd=folder,
        )


def _await_workers(web_ui: str, workers: int, processes: list[subprocess.Popen[bytes]],
                   folder: Path, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    alive = 0
    fds = _pidfds([p.pid for p in processes])
    try:
        while time.monotonic() < deadline:
            alive = _registered(web_ui, processes, folder)
            if alive >= workers:
                return
            # The master tells no one when a worker registers: ask it again after at
            # most 0.2 s, at once if one of the processes exits meanwhile.
            _exits_within(fds, min(0.2, max(0.0, deadline - time.monotonic())))
    finally:
        for fd in fds.values():
            os.close(fd)
    raise ClusterError(
        f"only {alive} of {workers} workers registered with the master within {timeout:.0f} "
        f"s; see the logs in {folder / 'logs'} (a busy machine may need a longer --timeout)"
    )


def _registered(web_ui: str, processes: list[subprocess.Popen[bytes]], folder: Path) -> int:
    """How many workers the master lists as ALIVE; ClusterError if a process exited."""
    for process, name in zip(processes, _names(len(processes)), strict=True):
        if process.poll() is not None:
            raise ClusterError(
                f"the {name} exited with status {process.returncode} while starting; "
                f"its log ({folder / 'logs' / (name + '.log')}) ends with:\n"
                f"{_tail(folder / 'logs' / (name + '.log'))}"
            )
    try:
        with urllib.request.urlopen(f"{web_ui}/json/", timeout=2) as response:
            state = json.load(response)
    except (OSError, ValueError):
        return 0  # the master's web UI is not up yet
    return sum(w.get("state") == "ALIVE" for w in state.get("workers", ()))


def _names(count: int) -> list[str]:
    return ["master", *(f"worker-{i}" for i in range(1, count))]


def _tail(path: Path, lines: int = 8) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return "(no log)"


def _is_ours(pid: int) -> bool:
    """The pid is alive and is a Spark master or worker (not a reused pid)."""
    if _reaped(pid):
        return False
    try:
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return False
    return b"org.apache.spark.deploy" in cmdline


def _reaped(pid: int) -> bool:
    """Collect ``pid`` if it is our exited child (else it stays a zombie); True if so."""
    try:
        done, _ = os.waitpid(pid, os.WNOHANG)
    except ChildProcessError:
        return False
    return done == pid


def _stop_pids(pids: list[int], *, timeout: float) -> None:
    """SIGTERM each process group, wait (bounded), then SIGKILL what remains."""
    ours = [pid for pid in pids if _is_ours(pid)]
    fds = _pidfds(ours)
    try:
        for pid in ours:
            _signal_group(pid, signal.SIGTERM)
    except BaseException:
        _await_exits(fds, 0.0)  # only closes them
        raise
    _await_exits(fds, timeout)
    for pid in ours:  # what is left of each group (an executor, a stuck JVM)
        _signal_group(pid, signal.SIGKILL)
        _reaped(pid)
    # A killed JVM takes a moment to end (its threads); the group's other processes (the
    # launcher JVM spark-class runs first, an executor) are not our children, so wait
    # for them too: once this returns, nothing of the groups runs.
    _await_exits(_pidfds([member for pid in ours for member in _group_members(pid)]),
                 _KILLED_EXIT_S)


def _await_exits(fds: dict[int, int], timeout: float) -> None:
    """Wait at most ``timeout`` seconds until the processes of ``fds`` (pid: pidfd) have
    exited; every pidfd is closed on return."""
    try:
        deadline = time.monotonic() + timeout
        while fds and (left := deadline - time.monotonic()) > 0:
            for pid in _exits_within(fds, left):
                os.close(fds.pop(pid))
    finally:
        for fd in fds.values():
            os.close(fd)


_KILLED_EXIT_S = 10.0
"""How long processes sent SIGKILL may take to end (bounded: a process the kernel cannot
end, in uninterruptible sleep, is not waited on longer)."""


def _group_members(pgid: int) -> list[int]:
    """The processes of process group ``pgid`` that have not ended (zombies left out),
    from ``/proc``."""
    members = []
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            with open(f"/proc/{entry.name}/stat", "rb") as stat:
                text = stat.read()
        except OSError:  # it ended meanwhile
            continue
        # after the command name's closing parenthesis: state, parent, process group
        fields = text[text.rfind(b")") + 2:].split()
        if len(fields) > 2 and fields[0] != b"Z" and int(fields[2]) == pgid:
            members.append(int(entry.name))
    return members


def _pidfds(pids: list[int]) -> dict[int, int]:
    """A pidfd per live process (readable once it has exited, child or not)."""
    fds = {}
    for pid in pids:
        with contextlib.suppress(ProcessLookupError):
            fds[pid] = os.pidfd_open(pid)
    return fds


def _exits_within(fds: dict[int, int], seconds: float) -> set[int]:
    """Wait at most ``seconds`` for any of the processes to exit; the pids that have."""
    poller = select.poll()
    for fd in fds.values():
        poller.register(fd, select.POLLIN)
    ready = {fd for fd, _ in poller.poll(seconds * 1000)}
    return {pid for pid, fd in fds.items() if fd in ready}


def _signal_group(pid: int, sig: signal.Signals) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, sig)
