"""The lab's real node: containerd + runc, the CNI bridge, a real kubelet and kube-proxy, on this machine.

    async with RealNode(workdir, url=cp.url, pki=cp.pki, kube=admin_kube) as node:
        node.name            # the Node it registered, Ready
        await node.import_image(oci_archive)   # an image built here (no registry can be reached)

What it starts, in order (each waited on until ready, never a sleep):
1. a private mount namespace (`unshare --mount`), whose holder bind-mounts the kubelet's wanted kernel settings
   over /proc/sys/... (nodeconfig.KUBELET_KERNEL_SETTINGS: the host's stay as they are) and the node's own
   /var/log; containerd, the kubelet and kube-proxy enter it (nsenter), so every mount they make (overlay
   rootfs, volumes, network namespaces) lives and dies with it;
2. the node's cgroup (nodeconfig.CGROUP_ROOT, every hierarchy) that all of them and every container join;
3. the bridge nodeconfig.BRIDGE with the pods' gateway address, and a TCP relay on it to kube-apiserver (which
   listens on loopback only), published as the `kubernetes` Service's endpoints: pods reach the API server
   through the Service as on a cluster;
4. containerd (Debian's 1.6, its state under the node's folder) with the pause image built here imported;
5. the kubelet (system:node:<name>), and kube-proxy (system:kube-proxy, iptables mode).
Stopping (and the start, for what a killed lab left) is nodesweep.sweep under the machine-wide lock.
"""
from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import shutil
import subprocess
import time
from pathlib import Path

from homecluster_lab.config import LabError, free_port
from homecluster_lab.ports import PORT_TRIES, says_port_taken

from . import binaries, nodeconfig, nodesweep, ociarchive, pki
from .process import Component, StartStop

log = logging.getLogger(__name__)
NODE = "lab-node"
NODE_PROGRAMS = ("kubelet", "kube-proxy", "pause")
HOST_PROGRAMS = {"containerd": "containerd", "ctr": "containerd", "runc": "runc", "unshare": "util-linux",
                 "nsenter": "util-linux", "iptables": "iptables", "conntrack": "conntrack", "ip": "iproute2"}
CNI_BIN = Path("/usr/lib/cni")


def missing_reason() -> str | None:
    """None when this machine can run a real node, else what is missing and how to get it."""
    if os.geteuid() != 0:
        return "a real node needs root (containerd, mounts, cgroups, iptables)"
    missing = [f"{p} (Debian: {pkg})" for p, pkg in HOST_PROGRAMS.items() if shutil.which(p) is None]
    if not (CNI_BIN / "bridge").exists():
        missing.append(f"{CNI_BIN}/bridge (Debian: containernetworking-plugins)")
    if missing:
        return f"the real node's programs are missing: {', '.join(missing)}; run `make system-deps`"
    built = binaries.missing_reason(NODE_PROGRAMS, binaries.bin_dir(binaries.NODE_MODULE))
    if built:
        return built.replace("`make k8s`", "`make realnode`")
    return None


class RealNode(StartStop):
    def __init__(self, workdir: Path, *, url: str, pki: pki.Pki, kube, name: str = NODE, timeout: float = 120.0,
                 images: tuple[Path, ...] = (), lock_wait: float = 300.0, take_lock: bool = True):
        """`images`: OCI archives imported before the kubelet starts (a pod already bound to the node finds them)."""
        self.workdir, self.url, self.pki, self.kube, self.name = Path(workdir), url, pki, kube, name
        self.preload = tuple(images)
        self.lock_wait = lock_wait
        self.take_lock = take_lock  # False: the caller holds the machine's lock (nodesweep.take_lock) itself
        self._swept = False  # the start's sweep ran: stop sweeps too
        self.timeout = timeout
        self.bin_dir = binaries.bin_dir(binaries.NODE_MODULE)
        self.paths = nodeconfig.NodePaths(self.workdir, nodeconfig.RUN_DIR)
        self.components: list[Component] = []
        self._lock: int | None = None
        self._relay: asyncio.base_events.Server | None = None
        self.timings: dict[str, float] = {}

    # -- start -------------------------------------------------------------------------------------------------
    async def start(self) -> None:
        reason = missing_reason()
        if reason:
            raise LabError(reason)
        if self.take_lock:
            self._lock = await self._take_lock()
        self._swept = True
        await asyncio.to_thread(nodesweep.sweep, self.bin_dir / "kube-proxy")
        self._write_files()
        nodesweep.make_cgroups()
        nodesweep.make_bridge()
        await self._timed("relay", self._start_relay())
        await self._timed("mount namespace", self._start_holder())
        await self._timed("containerd", self._start_containerd())
        archive = self.workdir / "images" / "pause.tar"
        ociarchive.write_single_binary_image(self.bin_dir / "pause", nodeconfig.SANDBOX_IMAGE, archive)
        await self._timed("pause image", self.import_image(archive))
        for image in self.preload:
            await self._timed(f"image {image.name}", self.import_image(image))
        # the kubelet and kube-proxy must be told their ports: picked (homecluster_lab.ports), started, and started
        # again on new ports when another process took one meanwhile (seen under load: "bind: address already in
        # use" from the kubelet's healthz port)
        for attempt in range(1, PORT_TRIES + 1):
            try:
                await self._timed("kubelet", self._start_kubelet())
                await self._timed("kube-proxy", self._start_proxy())
                return
            except LabError:
                taken = [c for c in self.components if c.name in ("kubelet", "kube-proxy")
                         and c.exited() is not None and says_port_taken(c.log_tail(40))]
                if not taken or attempt == PORT_TRIES:
                    raise
                log.warning("real node: another process took a port of the %s; starting again on new ports",
                            taken[0].name)
                for component in [c for c in self.components if c.name in ("kubelet", "kube-proxy")]:
                    await component.stop_keeping_log(f"try{attempt}")
                    self.components.remove(component)
                self._write_port_files()

    async def _take_lock(self):
        """The machine's one real node: wait up to lock_wait s for another lab's node to stop (tests run in
        parallel), saying so once; then LabError naming who holds it."""
        deadline = time.monotonic() + self.lock_wait
        said = False
        while True:
            try:
                return nodesweep.take_lock()
            except LabError as exc:
                if time.monotonic() > deadline:
                    raise
                if not said:
                    log.warning("%s; waiting up to %gs", exc, self.lock_wait)
                    said = True
            await asyncio.sleep(0.5)

    async def _timed(self, what: str, step) -> None:
        t0 = time.monotonic()
        await step
        self.timings[what] = round(time.monotonic() - t0, 2)

    def _write_files(self) -> None:
        p = self.paths
        for sub in ("containerd", "cni/net.d", "cni/ipam", "kubelet", "kube-proxy", "logs", "varlog", "sysctl",
                    "images"):
            (p.root / sub).mkdir(parents=True, exist_ok=True)
        for name, value in nodeconfig.KUBELET_KERNEL_SETTINGS.items():
            (p.root / "sysctl" / name.replace("/", ".")).write_text(value + "\n")
        p.containerd_config.write_text(nodeconfig.containerd_config(p))
        (p.cni_conf_dir / "10-homecluster.conflist").write_text(nodeconfig.cni_config(p))
        pki.write_kubeconfig(p.kubelet_dir / "kubeconfig", self.pki, self.url,
                             (f"system:node:{self.name}", ("system:nodes",)))
        pki.write_kubeconfig(p.root / "kube-proxy" / "kubeconfig", self.pki, self.url, ("system:kube-proxy", ()))
        self._write_port_files()

    def _write_port_files(self) -> None:
        """Four new ports, and the kubelet's and kube-proxy's configs that name them."""
        p = self.paths
        self.ports = nodeconfig.NodePorts(*(free_port("127.0.0.1") for _ in range(4)))
        (p.kubelet_dir / "config.yaml").write_text(nodeconfig.kubelet_config(p, self.ports, self.pki.ca_cert))
        proxy = p.root / "kube-proxy"
        (proxy / "config.yaml").write_text(nodeconfig.kube_proxy_config(proxy / "kubeconfig", self.name, self.ports))

    def _in_node(self, argv: list[str]) -> list[str]:
        """argv run in the node's cgroup and mount namespace."""
        procs = nodesweep.CGROUPS / "pids" / nodeconfig.NODE_CGROUP / "cgroup.procs"
        holder = self.components[0].pid
        return ["sh", "-c", 'echo $$ > "$0" && exec "$@"', str(procs),
                "nsenter", f"--target={holder}", "--mount", "--", *argv]

    async def _start(self, name: str, argv: list[str]) -> Component:
        component = Component(name, argv, self.paths.logs / f"{name}.log")
        self.components.append(component)
        await component.start()
        return component

    async def _start_holder(self) -> None:
        procs = nodesweep.CGROUPS / "pids" / nodeconfig.NODE_CGROUP / "cgroup.procs"
        script = f'echo $$ > {procs}\n' + nodeconfig.holder_script(self.paths)
        holder = await self._start("mount-namespace", ["unshare", "--mount", "--propagation", "private", "--",
                                                       "sh", "-c", script])
        await self._until(lambda: "ready" in holder.log_tail(5), holder, "its bind mounts")

    async def _start_containerd(self) -> None:
        containerd = await self._start("containerd", self._in_node(
            ["containerd", f"--config={self.paths.containerd_config}", "--log-level=warn"]))
        await self._until(lambda: self._ctr("version").returncode == 0, containerd, f"its socket {self.paths.socket}")

    def _ctr(self, *args: str, timeout: float = 300) -> subprocess.CompletedProcess:
        return subprocess.run(["ctr", f"--address={self.paths.socket}", "--namespace=k8s.io", *args],
                              capture_output=True, text=True, timeout=timeout)

    async def import_image(self, archive: Path) -> None:
        """Import an OCI archive (under the reference it names) into the node's containerd."""
        done = await asyncio.to_thread(self._ctr, "images", "import", str(archive))
        if done.returncode != 0:
            raise LabError(f"real node: importing {archive} into containerd failed: {done.stderr.strip()}")

    def images(self) -> list[str]:
        done = self._ctr("images", "list", "--quiet")
        return done.stdout.split()

    def task_pid(self, container_id: str) -> int | None:
        """The host pid of a running container's process (the id a pod status gives after "containerd://"),
        None when containerd runs no such task."""
        for line in self._ctr("tasks", "list").stdout.splitlines()[1:]:
            fields = line.split()
            if len(fields) >= 3 and fields[0] == container_id and fields[2] == "RUNNING":
                return int(fields[1])
        return None

    async def _start_kubelet(self) -> None:
        argv = nodeconfig.kubelet_argv(self.bin_dir / "kubelet", self.paths, self.paths.kubelet_dir / "kubeconfig",
                                       self.name)
        kubelet = await self._start("kubelet", self._in_node(argv))
        await kubelet.wait_ready(f"http://127.0.0.1:{self.ports.kubelet_healthz}/healthz", self.timeout, False)
        await self._until_async(self._node_ready, kubelet, f"Node {self.name} Ready")

    async def _node_ready(self) -> bool:
        try:
            node = await self.kube.get(f"/api/v1/nodes/{self.name}")
        except Exception:  # not registered yet
            return False
        return any(c.get("type") == "Ready" and c.get("status") == "True"
                   for c in (node.get("status") or {}).get("conditions") or [])

    async def _start_proxy(self) -> None:
        argv = nodeconfig.kube_proxy_argv(self.bin_dir / "kube-proxy", self.paths.root / "kube-proxy" / "config.yaml")
        proxy = await self._start("kube-proxy", self._in_node(argv))
        await proxy.wait_ready(f"http://127.0.0.1:{self.ports.proxy_healthz}/healthz", self.timeout, False)

    # -- the API server's relay ---------------------------------------------------------------------------------
    async def _start_relay(self) -> None:
        host, port = self.url.removeprefix("https://").rsplit(":", 1)
        self._relay = await asyncio.start_server(_relay_to(host, int(port)), nodeconfig.GATEWAY,
                                                 nodeconfig.APISERVER_RELAY_PORT)
        await self._publish_kubernetes_endpoints()

    async def _publish_kubernetes_endpoints(self) -> None:
        """The `kubernetes` Service's EndpointSlice: the relay (the API server runs with no endpoint reconciler)."""
        body = {"apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice", "addressType": "IPv4",
                "metadata": {"name": "kubernetes", "namespace": "default",
                             "labels": {"kubernetes.io/service-name": "kubernetes",
                                        "endpointslice.kubernetes.io/managed-by": "homecluster-lab"}},
                "endpoints": [{"addresses": [nodeconfig.GATEWAY], "conditions": {"ready": True}}],
                "ports": [{"name": "https", "port": nodeconfig.APISERVER_RELAY_PORT, "protocol": "TCP"}]}
        path = "/apis/discovery.k8s.io/v1/namespaces/default/endpointslices"
        await self.kube.delete(f"{path}/kubernetes")
        await self.kube.create(path, body)

    # -- waiting ------------------------------------------------------------------------------------------------
    async def _until(self, check, component: Component, what: str) -> None:
        async def as_async() -> bool:
            return await asyncio.to_thread(check)
        await self._until_async(as_async, component, what)

    async def _until_async(self, check, component: Component, what: str) -> None:
        deadline = time.monotonic() + self.timeout
        while not await check():
            if component.exited() is not None:
                raise LabError(f"real node: {component.name} exited with code {component.exited()} before "
                               f"{what}; its last lines ({component.log_path}):\n{component.log_tail()}")
            if time.monotonic() > deadline:
                raise LabError(f"real node: no {what} within {self.timeout:g}s; {component.name}'s last lines "
                               f"({component.log_path}):\n{component.log_tail()}")
            await asyncio.sleep(0.1)

    # -- stop ---------------------------------------------------------------------------------------------------
    async def stop(self) -> None:
        """kube-proxy and the kubelet first (SIGTERM), then everything under the node's cgroup, its chains, its
        bridge; the lock last."""
        for component in reversed(self.components):
            if component.name in ("kube-proxy", "kubelet"):
                await component.stop(grace=5.0)
        if self._relay is not None:
            self._relay.close()
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self._relay.wait_closed(), 2)
        if self._swept:
            await asyncio.to_thread(nodesweep.sweep, self.bin_dir / "kube-proxy")
        for component in reversed(self.components):
            await component.stop(grace=1.0)
        self.components.clear()
        if self._lock is not None:
            nodesweep.release_lock(self._lock)
            self._lock = None


def _relay_to(host: str, port: int):
    async def relay(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            up_reader, up_writer = await asyncio.open_connection(host, port)
        except OSError:
            writer.close()
            return
        await asyncio.gather(_pipe(reader, up_writer), _pipe(up_reader, writer), return_exceptions=True)

    return relay


async def _pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    try:
        while data := await reader.read(65536):
            writer.write(data)
            await writer.drain()
    finally:
        writer.close()
