"""The real node leaves nothing behind: after its own stop, and after the lab that ran it was SIGKILLed (the next
node's start sweeps what was left: the containers and shims under the node's cgroup, kube-proxy's chains, the
bridge). Pods here run the pause image built for the node, so no `make images` image is needed."""
from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import pytest_asyncio
from k8s_install_proof import BOUND
from support.kube import default_account
from support.waits import until
from k8s_realnode import admin, skip_unless_here  # noqa: F401  fixtures

from homecluster_lab.config import LabError
from homecluster_lab.executor.kube import KubeError
from homecluster_lab.k8s import nodeconfig, nodesweep, realnode

pytestmark = [pytest.mark.asyncio(loop_scope="module"), skip_unless_here()]


@pytest_asyncio.fixture(loop_scope="module")
async def machine_lock():
    """The machine's one real node held for the whole test (other modules' nodes wait), so what the test finds
    of a node is its own; the test's nodes run with take_lock=False."""
    async def taken():
        try:
            return nodesweep.take_lock()
        except LabError:
            return None
    fd = await until(taken, "the machine's real-node lock", timeout=900)
    yield fd
    nodesweep.release_lock(fd)


def leftovers(folder: Path) -> dict[str, object]:
    """What of a real node remains on this machine; every value empty when nothing does."""
    cgroups = nodesweep.node_cgroups()
    pids = sorted(set().union(*(nodesweep._pids(c) for c in cgroups))) if cgroups else []
    chains = [line for program in ("iptables-save", "ip6tables-save")
              for line in subprocess.run([program], capture_output=True, text=True).stdout.splitlines()
              if "KUBE-" in line]
    mounts, processes = [], []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            mounts += [m for m in (proc / "mountinfo").read_text().splitlines()
                       if str(folder) in m or str(nodeconfig.RUN_DIR) in m]
            if str(folder).encode() in (proc / "cmdline").read_bytes():
                processes.append(proc.name)
        except OSError:
            continue
    return {"cgroups": [str(c) for c in cgroups], "pids": pids, "chains": chains, "mounts": mounts,
            "processes": processes, "bridge": Path(f"/sys/class/net/{nodeconfig.BRIDGE}").exists(),
            "run_dir": nodeconfig.RUN_DIR.exists()}


def nothing_left(folder: Path) -> None:
    left = leftovers(folder)
    assert not any(left.values()), left


def pause_pod(name: str, node: str) -> dict:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "default"},
            "spec": {"nodeSelector": {"kubernetes.io/hostname": node}, "automountServiceAccountToken": False,
                     "containers": [{"name": "idle", "image": nodeconfig.SANDBOX_IMAGE,
                                     "imagePullPolicy": "Never"}]}}


async def until_running(kube, name: str) -> None:
    async def running() -> bool:
        pod = await kube.get(f"/api/v1/namespaces/default/pods/{name}")
        return (pod.get("status") or {}).get("phase") == "Running"
    await until(running, f"pod {name} to run", BOUND)


async def test_a_stopped_node_leaves_no_process_mount_cgroup_chain_or_bridge(tmp_path, real_k8s, admin, machine_lock):
    folder = tmp_path / "node"
    async with realnode.RealNode(folder, url=real_k8s.url, pki=real_k8s.pki, kube=admin, take_lock=False) as node:
        await until(lambda: default_account(admin), "the default ServiceAccount", BOUND)  # made a moment after the start
        await admin.create("/api/v1/namespaces/default/pods", pause_pod("idle", node.name))
        await until_running(admin, "idle")
        running = leftovers(folder)
        assert all(running[k] for k in ("pids", "chains", "bridge", "mounts", "run_dir")), running
    nothing_left(folder)


# A lab killed outright: its own control plane and node in a child process, a pod running, then SIGKILL.
CHILD = textwrap.dedent("""
    import asyncio, sys
    from pathlib import Path
    from homecluster_lab.executor.kube import Kube
    from homecluster_lab.k8s.controlplane import RealControlPlane
    from homecluster_lab.k8s.realnode import RealNode
    sys.path[:0] = [sys.argv[2], str(Path(sys.argv[2]).parent)]  # tests/k8s, and tests/ for support
    from k8s_install_proof import BOUND
    from support.waits import until
    from support.kube import default_account
    from test_k8s_realnode_cleanup import pause_pod, until_running

    async def main():
        folder = Path(sys.argv[1])
        async with RealControlPlane(folder / "k8s") as cp, Kube(str(cp.kubeconfig_path)) as kube:
            # the test holds the machine's lock (machine_lock); the default ServiceAccount comes a moment after start
            async with RealNode(folder / "node", url=cp.url, pki=cp.pki, kube=kube, take_lock=False) as node:
                await until(lambda: default_account(kube), "the default ServiceAccount", BOUND)
                await kube.create("/api/v1/namespaces/default/pods", pause_pod("orphan", node.name))
                await until_running(kube, "orphan")
                print("up", flush=True)
                await asyncio.sleep(3600)
    asyncio.run(main())
""")


async def test_the_next_start_sweeps_what_a_killed_lab_left(tmp_path, real_k8s, admin, machine_lock):
    child = await asyncio.create_subprocess_exec(
        sys.executable, "-c", CHILD, str(tmp_path / "killed"), str(Path(__file__).parent),
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT)
    try:
        line = await asyncio.wait_for(child.stdout.readline(), 180)
        assert line == b"up\n", line + await asyncio.wait_for(child.stdout.read(), 30)
    finally:
        if child.returncode is None:
            os.kill(child.pid, signal.SIGKILL)
        await child.wait()
    left = leftovers(tmp_path / "killed" / "node")
    # the containers' processes (pause and its shim) outlive the lab; so do the chains and the bridge
    assert left["pids"] and left["chains"] and left["bridge"], left

    folder = tmp_path / "node"
    async with realnode.RealNode(folder, url=real_k8s.url, pki=real_k8s.pki, kube=admin, take_lock=False):
        assert not [p for p in left["pids"] if Path(f"/proc/{p}").exists()]
    nothing_left(folder)
    nothing_left(tmp_path / "killed" / "node")  # (its control plane ends on its own, by its parent-death signal)
