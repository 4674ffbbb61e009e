"""``pyspark-streamtest cluster``: Spark's own standalone Master and Workers, started,
found and stopped by process id. (The suite's core runs on such a cluster in CI:
``.ci/run``.)"""

from __future__ import annotations

import contextlib
import os
import socket
from pathlib import Path

import pytest

from pyspark_streamtest import ClusterError, ClusterRunningError
from pyspark_streamtest.cluster import cluster_status, start_cluster, stop_cluster
from pyspark_streamtest.gates.cli import main


def _running(pid: int) -> bool:
    try:
        return b"org.apache.spark.deploy" in Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return False


def test_start_status_stop(tmp_path, capsys):
    state = tmp_path / "cluster"
    cluster = start_cluster(workers=1, cores=1, memory="1g", state_dir=state)
    try:
        assert cluster.url.startswith("spark://127.0.0.1:") and cluster.workers == 1
        assert cluster_status(state) == cluster
        assert main(["cluster", "status", "--state-dir", str(state)]) == 0
        assert cluster.url in capsys.readouterr().out
        with pytest.raises(ClusterRunningError, match=cluster.url):
            start_cluster(state_dir=state)
        assert os.path.isdir(state / "worker-1") and os.path.isfile(state / "logs/master.log")
    finally:
        assert stop_cluster(state) == cluster
    assert not any(_running(pid) for pid in (cluster.master_pid, *cluster.worker_pids))
    assert not state.exists()
    assert cluster_status(state) is None
    assert main(["cluster", "status", "--state-dir", str(state)]) == 1
    assert main(["cluster", "stop", "--state-dir", str(state)]) == 0
    assert "no cluster was running" in capsys.readouterr().out


def test_a_busy_port_is_refused_before_anything_starts(tmp_path):
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        port = busy.getsockname()[1]
        with pytest.raises(ClusterError, match=rf"port {port} on 127.0.0.1 is busy.*--port"):
            start_cluster(port=port, state_dir=tmp_path / "cluster")
    assert not (tmp_path / "cluster").exists()


def test_without_java_the_error_names_the_fix(tmp_path, monkeypatch):
    monkeypatch.delenv("JAVA_HOME", raising=False)
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(ClusterError, match=r"no Java found.*JAVA_HOME"):
        start_cluster(state_dir=tmp_path / "cluster")


def test_workers_that_do_not_register_in_time_are_stopped(tmp_path):
    state = tmp_path / "cluster"
    with pytest.raises(ClusterError, match=r"only 0 of 1 workers registered .* logs"):
        start_cluster(workers=1, state_dir=state, timeout=0.5)
    assert cluster_status(state) is None
    assert (state / "logs" / "master.log").exists()  # kept for reading
    pids = [int(p.name) for p in Path("/proc").iterdir() if p.name.isdigit()]
    left = [pid for pid in pids if _running(pid) and _cwd(pid).startswith(str(state))]
    assert not left, [_described(pid) for pid in left]  # what it is, if one is left


def _described(pid: int) -> str:
    """A process's state, parent and group (``/proc/PID/stat``) and its command line."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ")
    except OSError as gone:
        return f"{pid}: {gone}"
    return f"{pid}: {stat[stat.rfind(')') + 2:].split()[:4]} {cmdline.decode()[:300]}"


def _cwd(pid: int) -> str:
    try:
        return os.readlink(f"/proc/{pid}/cwd")
    except OSError:
        return ""


def test_stopping_waits_until_no_process_of_the_groups_runs():
    """What a stop kills (each master's and worker's process group: the launcher JVM
    ``spark-class`` runs first, executors) has ended when the stop returns, not only the
    group's first process: here a grandchild that ignores SIGTERM and is not ours to
    reap, in the group of a process named like a Spark daemon."""
    import subprocess
    import sys

    from pyspark_streamtest.cluster._standalone import _group_members, _stop_pids

    stubborn = ("import signal, sys, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); "
                "print('ready', flush=True); time.sleep(120)")
    leader = subprocess.Popen(
        ["bash", "-c", '"$1" -c "$2" & wait', "org.apache.spark.deploy.Stub",
         sys.executable, stubborn],
        stdout=subprocess.PIPE, start_new_session=True)
    try:
        assert leader.stdout is not None and leader.stdout.readline() == b"ready\n"
        members = _group_members(leader.pid)
        assert leader.pid in members and len(members) == 2
        _stop_pids([leader.pid], timeout=5.0)
        assert _group_members(leader.pid) == []
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(leader.pid, 9)
        leader.wait(30)
