"""`homecluster lab --control-plane kubernetes` as a user runs it: the real control plane, our install, the
operator and the runner node start, the `lab ready` line names the real API server's kubeconfig (kubectl, the
one built here, lists the runner's Node and our Group), and SIGTERM stops everything: no process the lab
started — etcd, kube-apiserver, kube-controller-manager, kube-scheduler, the operator — is left alive.
"""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest

from homecluster_lab.executor.process import alive, process_tree
from homecluster_lab.k8s import binaries
from homecluster_lab.k8s.labcluster import RUNNER
from homecluster_lab.operator_proc import unavailable_reason

READY = "lab ready: "
PROGRAMS = ("etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler")


def _comm(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as fh:
            return fh.read().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


def test_lab_on_the_real_control_plane_starts_serves_and_stops_clean(tmp_path) -> None:
    if unavailable_reason():
        pytest.skip(unavailable_reason())
    lines: list[str] = []
    proc = subprocess.Popen([sys.executable, "-m", "homecluster", "lab", "--control-plane", "kubernetes",
                             "--slots", "1", "--driver", "ipmi", "--provider-address", "127.0.0.1:0",
                             "--workdir", str(tmp_path / "lab")],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, bufsize=1,
                            env={**os.environ, "PYTHONUNBUFFERED": "1"}, start_new_session=True)
    try:
        deadline = time.monotonic() + 240  # the control plane takes 5-20 s, more on a loaded machine
        assert proc.stdout is not None
        for line in proc.stdout:
            lines.append(line.rstrip("\n"))
            if line.startswith(READY) or time.monotonic() > deadline:
                break
        ready = next((x for x in lines if x.startswith(READY)), None)
        assert ready, "\n".join(lines)
        kubeconfig = dict(part.split("=", 1) for part in ready[len(READY):].split())["kubeconfig"]
        kubectl = str(binaries.find("kubectl"))
        got = subprocess.run([kubectl, "--kubeconfig", kubeconfig, "get", "nodes,groups", "-o", "name"],
                             capture_output=True, text=True, timeout=60)
        assert f"node/{RUNNER}" in got.stdout and "group.infra.homecluster.dev/workers" in got.stdout, got
        tree = process_tree(proc.pid)
        started = {pid: _comm(pid) for pid in tree}
        for program in PROGRAMS:
            assert any(f"/{program} " in cmd for cmd in started.values()), (program, started)
        assert any("homecluster" in cmd and " run" in cmd for cmd in started.values()), started
        proc.send_signal(signal.SIGTERM)
        rest = proc.communicate(timeout=120)[0]
        lines.extend(rest.splitlines())
        assert proc.returncode == 0, "\n".join(lines)
        left = {pid: cmd for pid, cmd in started.items() if alive(pid) and _comm(pid) == cmd and cmd}
        assert left == {}, left
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
