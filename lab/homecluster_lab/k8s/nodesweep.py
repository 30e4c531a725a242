"""Ending everything the lab's real node started, also what a SIGKILLed lab left behind.

The node's processes (containerd, its shims, the kubelet, kube-proxy, every container) all live under one
cgroup, nodeconfig.CGROUP_ROOT, in each cgroup hierarchy; its mounts live in a private mount namespace that
dies with its last process. So ending the node is: SIGKILL every process under that cgroup until none is
left, remove the cgroups, remove the chains kube-proxy and the kubelet made (`kube-proxy --cleanup`, then any
KUBE-* chain left and the rules that jump to it), delete the bridge. The same sweep runs at every start, under
a machine-wide lock (one real node per machine: kube-proxy's chains are the host's), so a node a killed lab
left behind is gone before a new one starts.
"""
from __future__ import annotations

import fcntl
import os
import shutil
import signal
import subprocess
import time
from pathlib import Path

from homecluster_lab.config import LabError

from . import nodeconfig

CGROUPS = Path("/sys/fs/cgroup")
LOCK = Path("/run/lock/homecluster-realnode.lock")


def take_lock(path: Path = LOCK) -> int:
    """The machine-wide real-node lock (a file descriptor to keep open), or LabError naming who holds it."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        holder = os.pread(fd, 32, 0).decode(errors="replace").strip()
        os.close(fd)
        raise LabError(f"another lab's real node runs on this machine (process {holder or '?'} holds {path}); "
                       f"one real node per machine, since kube-proxy's iptables chains are the host's: "
                       f"stop that lab first") from None
    os.ftruncate(fd, 0)
    os.pwrite(fd, str(os.getpid()).encode(), 0)
    return fd


def release_lock(fd: int) -> None:
    os.close(fd)  # closing the descriptor drops the flock


def node_cgroups(root: str = nodeconfig.CGROUP_ROOT) -> list[Path]:
    """The node's cgroup folder in every mounted hierarchy that has one."""
    return [h / root for h in sorted(CGROUPS.iterdir()) if (h / root).is_dir()] if CGROUPS.is_dir() else []


def make_cgroups(sub: str = nodeconfig.NODE_CGROUP) -> list[Path]:
    """CGROUP_ROOT/node in every v1 hierarchy (and the unified one): the kubelet wants its cgroup root in each."""
    made = []
    for hierarchy in sorted(CGROUPS.iterdir()):
        if (hierarchy / "cgroup.procs").exists():
            (hierarchy / sub).mkdir(parents=True, exist_ok=True)
            made.append(hierarchy / sub)
    return made


def _pids(folder: Path) -> set[int]:
    found: set[int] = set()
    for procs in folder.rglob("cgroup.procs"):
        try:
            found.update(int(p) for p in procs.read_text().split())
        except OSError:
            continue
    return found


def kill_node_processes(timeout: float = 20.0) -> int:
    """SIGKILL every process under the node's cgroups until none is left; how many were found."""
    folders = node_cgroups()
    seen: set[int] = set()
    deadline = time.monotonic() + timeout
    while True:
        pids = set().union(*(_pids(f) for f in folders)) if folders else set()
        if not pids:
            return len(seen)
        seen |= pids
        for pid in pids:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        if time.monotonic() > deadline:
            raise LabError(f"real node: processes {sorted(pids)} under {folders[0]} outlived SIGKILL for "
                           f"{timeout:g}s (stuck in the kernel?); end them and remove the folder by hand")
        time.sleep(0.05)


def remove_cgroups() -> None:
    """rmdir the node's cgroups, deepest first (each must be empty of processes: kill_node_processes first)."""
    for folder in node_cgroups():
        for sub in sorted((p for p in folder.rglob("*") if p.is_dir()), key=lambda p: -len(p.parts)):
            _rmdir_retrying(sub)
        _rmdir_retrying(folder)


def _rmdir_retrying(folder: Path, tries: int = 50) -> None:
    for _ in range(tries):  # a cgroup whose last process just died can be busy for a moment
        try:
            folder.rmdir()
            return
        except FileNotFoundError:
            return
        except OSError:
            time.sleep(0.02)
    folder.rmdir()


def remove_kube_chains(programs: tuple[str, ...] = ("iptables", "ip6tables")) -> list[str]:
    """Delete every rule jumping to a KUBE-* chain and every KUBE-* chain, in each table; what was removed."""
    removed = []
    for program in programs:
        save = subprocess.run([f"{program}-save"], capture_output=True, text=True)
        if save.returncode != 0:
            continue
        table = None
        chains: list[tuple[str, str]] = []
        jumps: list[tuple[str, str]] = []
        for line in save.stdout.splitlines():
            if line.startswith("*"):
                table = line[1:]
            elif line.startswith(":KUBE-"):
                chains.append((table, line[1:].split()[0]))
            elif line.startswith("-A ") and not line.split()[1].startswith("KUBE-") and " -j KUBE-" in line:
                jumps.append((table, line))
        for table, rule in jumps:
            subprocess.run([program, "-w", "-t", table, "-D", *_split(rule[3:])], capture_output=True)
            removed.append(f"{program} -t {table} {rule}")
        for table, chain in chains:
            subprocess.run([program, "-w", "-t", table, "-F", chain], capture_output=True)
        for table, chain in chains:
            subprocess.run([program, "-w", "-t", table, "-X", chain], capture_output=True)
            removed.append(f"{program} -t {table} chain {chain}")
    return removed


def _split(rule: str) -> list[str]:
    import shlex
    return shlex.split(rule)


def delete_bridge() -> None:
    if Path(f"/sys/class/net/{nodeconfig.BRIDGE}").exists():
        subprocess.run(["ip", "link", "delete", nodeconfig.BRIDGE], capture_output=True)


def make_bridge() -> None:
    """The pods' bridge with the gateway address on it, made before the first pod (the relay listens there)."""
    delete_bridge()
    for argv in (["ip", "link", "add", nodeconfig.BRIDGE, "type", "bridge"],
                 ["ip", "addr", "add", f"{nodeconfig.GATEWAY}/{nodeconfig.POD_CIDR.split('/')[1]}",
                  "dev", nodeconfig.BRIDGE],
                 ["ip", "link", "set", nodeconfig.BRIDGE, "up"]):
        done = subprocess.run(argv, capture_output=True, text=True)
        if done.returncode != 0:
            raise LabError(f"real node: `{' '.join(argv)}` failed: {done.stderr.strip()}")


def sweep(kube_proxy: Path | None) -> dict[str, object]:
    """End and remove everything a real node of this machine left (call with the lock held)."""
    killed = kill_node_processes()
    remove_cgroups()
    if kube_proxy is not None:
        subprocess.run([str(kube_proxy), "--cleanup"], capture_output=True, timeout=60)
    chains = remove_kube_chains()
    delete_bridge()
    shutil.rmtree(nodeconfig.RUN_DIR, ignore_errors=True)  # only files by now: the mounts died with their namespace
    return {"processes": killed, "chains": chains}
