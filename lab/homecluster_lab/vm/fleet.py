"""The lab's machines as real qemu VMs (`homecluster lab --machines vm`), with the same face as the
simulated Fleet (homecluster_lab.machines.fleet) so LabCluster builds slots and Secrets the same way.

Per machine, by its power method:
  ipmi     the VM's own ipmi_sim BMC (VmMachine.start_fronts), chassis power = the qemu process
  redfish  the lab's Redfish service (one aiohttp app, a port per BMC) with the VM as its machine
  wol      one Wake-on-LAN listener for the segment (every VM's NIC hears it), power-off over the
           guest's own sshd (dropbear through qemu's loopback port forward) with `poweroff -f`
Each VM also gets a boot check port (lab/machines/bootport.BootPort, the slot's spec.bootCheck) open
while the guest is up, and a host-side kubelet (node_watch.VmNode + lab/node/kubelet.Kubelet) that
registers and heartbeats its corev1 Node while the guest is up: as the lab's admin on the in-memory
server, and on the real control plane (`node_kubeconfig` given) as its node, `system:node:<slot>`, with a client
certificate from the lab's CA, exactly as a simulated machine's kubelet (machines.fleet.start_kubelet). The
certificate and its key stay on the host, in the lab's folder (mode 0600): the guest has no kubelet and is
never handed a credential, neither on its kernel command line nor over SSH. A machine whose spec carries
`faults.never_boots` starts with the image's hang knob set: its boot stops before networking.

close() powers every VM off, stops every front and then checks that no qemu or ipmi_sim process
of this fleet is left (killing and reporting any that is).
"""
from __future__ import annotations

import asyncio
import contextlib
import logging
import secrets
import shutil
import tempfile
from pathlib import Path
from typing import Callable

from homecluster_lab.machines.bootport import BootPort
from homecluster_lab.machines.fleet import Endpoints, MachineSpec, start_kubelet
from homecluster_lab.machines.redfish import RedfishService
from homecluster_lab.node.identity import Identity
from homecluster_lab.node.kube import Kube
from homecluster_lab.node.kubelet import Kubelet

from . import procs
from .image import ImagePaths
from .machine import VmMachine, leftover_processes
from .node_watch import VmNode
from .qemu import mac_for
from .wol_front import WolFront

log = logging.getLogger(__name__)

POLL_SECONDS = 0.2  # how often the host-side kubelets look at their VMs (a /proc read and a small file)
SSH_POWEROFF = "poweroff -f"  # the guest's init is a shell: a plain `poweroff` signal would be ignored


class VmFleet:
    """The lab's VM machines. Use `async with VmFleet(...) as fleet:` or call close()."""

    def __init__(self, image: ImagePaths, *, kubeconfig: str | Path | None = None, workdir: Path | None = None,
                 lease_seconds: float = 10.0, status_seconds: float = 60.0, retry_seconds: float = 1.0,
                 node_kubeconfig: Callable[[str], Path] | None = None) -> None:
        self.image = image
        self.kubeconfig = kubeconfig
        # as Fleet's: node name -> a kubeconfig of that node's own identity (the real control plane's lab)
        self.node_kubeconfig = node_kubeconfig
        self._node_apis: list = []
        self._own_workdir = workdir is None
        self.workdir = Path(workdir) if workdir else Path(tempfile.mkdtemp(prefix="hc-lab-vm-"))
        self.state_root = self.workdir / "vms"
        self._kubelet_settings = dict(lease_seconds=lease_seconds, status_seconds=status_seconds,
                                      retry_seconds=retry_seconds)
        self.machines: dict[str, VmNode] = {}
        self.endpoints: dict[str, Endpoints] = {}
        self.kubelets: dict[str, Kubelet] = {}
        self.wol: WolFront | None = None
        self._redfish: RedfishService | None = None
        self._api: Kube | None = None
        self._poller: asyncio.Task | None = None
        self._boot_ports: list[BootPort] = []

    async def __aenter__(self) -> "VmFleet":
        return self

    async def __aexit__(self, *exc_info) -> None:
        await self.close()

    def vm_machine(self, name: str) -> VmMachine:
        """The VmMachine (VM, IPMI front, SSH endpoint) behind a slot."""
        return self.machines[name].machine

    async def start(self, specs: list[MachineSpec]) -> dict[str, Endpoints]:
        """Make every VM (powered off, or on with spec.powered_on), open its fronts, start its kubelet."""
        if self.machines:
            raise RuntimeError("VmFleet.start: the fleet already runs; make a new VmFleet for other machines")
        self.state_root.mkdir(parents=True, exist_ok=True)
        nodes = [self._node(spec) for spec in specs]
        for node in nodes:
            self.machines[node.name] = node
        # One segment: every VM's NIC hears magic packets, whatever its power method (as Fleet does).
        self.wol = WolFront([node.vm for node in nodes]).start()
        for spec, node in zip(specs, nodes):
            self.endpoints[spec.name] = await self._fronts(spec, node)
            if spec.powered_on:
                await asyncio.to_thread(node.vm.start)
        api = await self._api_client()
        if api is not None:
            for node in nodes:
                kubelet, own = await start_kubelet(node, api, self.node_kubeconfig, self._kubelet_settings)
                self.kubelets[node.name] = kubelet
                if own is not None:
                    self._node_apis.append(own)
        self._poller = asyncio.create_task(self._poll(), name="lab-vm-watch")
        return dict(self.endpoints)

    def _node(self, spec: MachineSpec) -> VmNode:
        if spec.method not in ("ipmi", "redfish", "wol"):
            raise ValueError(f"VM machine {spec.name}: method {spec.method!r} is not one of ipmi, redfish, wol")
        slot = spec.slot or spec.name
        machine = VmMachine(spec.name, self.state_root, self.image, username=spec.username,
                            password=spec.password or secrets.token_urlsafe(12), mac=spec.mac or mac_for(spec.name),
                            hang=bool(spec.faults and spec.faults.never_boots))
        identity = Identity(name=spec.name, slot=slot, mac=machine.mac, node_name=spec.node_name or slot,
                            provider_id=spec.provider_id or f"homecluster://{slot}", labels=dict(spec.labels),
                            capacity=dict(spec.capacity), allocatable=spec.allocatable,
                            readiness_taints=tuple(spec.readiness_taints))
        return VmNode(machine, identity, ready_taints_clear_seconds=spec.ready_taints_clear_seconds,
                      unknown_after_seconds=spec.unknown_after_seconds)

    async def _fronts(self, spec: MachineSpec, node: VmNode) -> Endpoints:
        machine = node.machine
        # Not the guest's sshd forward: qemu's user-mode hostfwd accepts a connection as soon as qemu runs, before
        # the guest answers. A host-side port opened when the guest's boot marker shows (dropbear listens) instead.
        boot_port = BootPort(node)
        await boot_port.start()
        self._boot_ports.append(boot_port)
        boot_check = {"host": boot_port.host, "port": boot_port.port}
        if spec.method == "ipmi":
            await asyncio.to_thread(machine.start_fronts)
            host, port = machine.ipmi.address
            return Endpoints(spec.name, "ipmi", ipmi={"address": host, "port": port}, boot_check=boot_check,
                             username=machine.username, password=machine.password)
        if spec.method == "redfish":
            if self._redfish is None:
                self._redfish = RedfishService()
            port = await self._redfish.add(machine.redfish_adapter())
            return Endpoints(spec.name, "redfish",
                             redfish={"endpoint": f"http://127.0.0.1:{port}", "systemId": spec.name,
                                      "verifyTLS": False, "insecure": True},
                             boot_check=boot_check, username=machine.username, password=machine.password)
        assert self.wol is not None
        ssh = machine.ssh
        return Endpoints(spec.name, "wol",
                         wol={"macAddress": machine.mac, "broadcastAddress": "127.0.0.1", "port": self.wol.port},
                         ssh={"host": ssh.host, "port": ssh.port, "user": ssh.user, "command": SSH_POWEROFF},
                         boot_check=boot_check, private_key_path=ssh.private_key)

    async def _api_client(self) -> Kube | None:
        """The one client every kubelet of the fleet shares (None without a kubeconfig)."""
        if self._api is None and self.kubeconfig is not None:
            self._api = await Kube(str(self.kubeconfig)).__aenter__()
        return self._api

    async def _poll(self) -> None:
        while True:
            for node in list(self.machines.values()):
                try:
                    node.poll()
                except Exception:  # noqa: BLE001 - one unreadable VM must not blind the others
                    log.exception("lab: watching VM %s failed", node.name)
            await asyncio.sleep(POLL_SECONDS)

    async def close(self) -> None:
        """Stop the kubelets and the watcher, power every VM off, stop every front; check nothing is left."""
        if self._poller is not None:
            self._poller.cancel()
            await asyncio.gather(self._poller, return_exceptions=True)
            self._poller = None
        for kubelet in self.kubelets.values():
            await kubelet.stop()
        self.kubelets.clear()
        for own in self._node_apis:
            with contextlib.suppress(Exception):
                await own.close()
        self._node_apis.clear()
        for boot_port in self._boot_ports:
            await boot_port.close()
        self._boot_ports.clear()
        if self._redfish is not None:
            await self._redfish.close()
            self._redfish = None
        if self.wol is not None:
            self.wol.stop()
            self.wol = None
        for node in self.machines.values():
            try:
                await asyncio.to_thread(node.machine.close)
                node.poll()  # one last look: collects what the power-offs left re-parented to the lab
            except Exception:  # keep stopping the others; say what failed
                log.exception("lab: stopping VM %s failed", node.name)
        if self.state_root.exists():
            left = leftover_processes(self.state_root)
            for pid in left:
                procs.kill_and_wait(pid)
            if left:
                log.error("lab: killed qemu/ipmi_sim processes left behind by the VM machines: pids %s", left)
        if self._api is not None:
            with contextlib.suppress(Exception):
                await self._api.close()
            self._api = None
        if self._own_workdir:
            shutil.rmtree(self.workdir, ignore_errors=True)
