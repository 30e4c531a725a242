"""Start and stop a set of simulated machines from a simple spec, and say how to reach each one.

`Fleet` shares everything it can, so a hundred machines stay cheap: one IPMI thread for every IPMI
BMC, one aiohttp application for every Redfish BMC (a listening socket each), one Wake-on-LAN
listener for the whole segment, one Kubernetes API client for every kubelet, and an sshd only for
a Wake-on-LAN machine, only while its OS is up (an IPMI or Redfish machine gets a plain listener,
bootport.BootPort, open while its OS is up). For each machine it returns `Endpoints`: what a slot's
spec.power needs (`power_spec()`), the port its OS answers on (`boot_check`, the slot's
spec.bootCheck) and what its credentials Secret holds (`secret_data()`).

Every BMC, boot port and sshd listens on `bmc_host` (loopback by default). The lab with a real node binds them on
the host's address on the node's CNI bridge (realnode.py), which a Job pod on the pod network reaches as its
gateway. The Wake-on-LAN segment stays on loopback: only a pod with the host's network (a `wol` slot's startup
Job) reaches it, as only a host on the machines' own segment hears a broadcast.
"""
from __future__ import annotations

import asyncio
import hashlib
import logging
import secrets
import shutil
import ssl
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from homecluster import tls
from homecluster_lab.machines.boot import Faults, Timing
from homecluster_lab.machines.bootport import BootPort
from homecluster_lab.machines.ipmi import IpmiServer
from homecluster_lab.machines.machine import Credentials, Identity, SimMachine, Taint
from homecluster_lab.machines.redfish import RedfishService
from homecluster_lab.machines.ssh import SshEndpoint
from homecluster_lab.machines.wol import WolSegment, normalize_mac
from homecluster_lab.node.kube import Kube
from homecluster_lab.node.kubelet import Kubelet
from homecluster_lab.node.view import NodeSource

log = logging.getLogger(__name__)

METHODS = ("ipmi", "redfish", "wol")


@dataclass
class MachineSpec:
    """One machine of the lab. Only `name` and `method` are required."""

    name: str
    method: str = "ipmi"  # ipmi | redfish | wol
    username: str = "admin"
    password: str | None = None  # generated when None
    boot_seconds: float = 2.0
    ready_taints_clear_seconds: float = 1.0
    unknown_after_seconds: float = 5.0
    graceful_shutdown_seconds: float = 0.5
    slot: str | None = None  # defaults to name
    node_name: str | None = None  # defaults to the slot
    provider_id: str | None = None  # defaults to homecluster://<slot>
    mac: str | None = None  # derived from the name when None
    labels: dict = field(default_factory=dict)
    capacity: dict = field(default_factory=lambda: {"cpu": "4", "memory": "8Gi", "pods": "110"})
    allocatable: dict | None = None
    readiness_taints: tuple[Taint, ...] = ()
    faults: Faults | None = None
    powered_on: bool = False
    redfish_tls: bool = False
    power_delay_seconds: float = 0.0  # Redfish: delay between an accepted Reset and the power change

    def __post_init__(self) -> None:
        if self.method not in METHODS:
            raise ValueError(f"machine {self.name}: method {self.method!r} is not one of {', '.join(METHODS)}")
        if self.boot_seconds < 0 or self.ready_taints_clear_seconds < 0:
            raise ValueError(f"machine {self.name}: boot_seconds and ready_taints_clear_seconds must be >= 0")

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "MachineSpec":
        """From a plain mapping (YAML/JSON): readiness_taints as [{key, effect?, value?}], faults as a mapping."""
        data = dict(data)
        taints = tuple(Taint(**t) for t in data.pop("readiness_taints", None) or data.pop("readinessTaints", ()) or ())
        faults = data.pop("faults", None)
        return cls(readiness_taints=taints, faults=Faults(**faults) if faults else None, **data)


def mac_for(name: str) -> str:
    """A stable, locally administered MAC for a machine name (52:54:00 is QEMU's prefix)."""
    digest = hashlib.sha256(name.encode()).digest()
    return "52:54:00:" + ":".join(f"{b:02x}" for b in digest[:3])


@dataclass(frozen=True)
class Endpoints:
    """How to reach one machine: what a slot's spec.power needs, and its secret."""

    name: str
    method: str
    ipmi: dict | None = None  # {address, port}
    redfish: dict | None = None  # {endpoint, systemId, verifyTLS}
    wol: dict | None = None  # {macAddress, broadcastAddress, port}
    ssh: dict | None = None  # {host, port, user, command}
    boot_check: dict | None = None  # {host, port}: answers while the machine's OS is up (spec.bootCheck)
    username: str | None = None
    password: str | None = None
    private_key_path: Path | None = None
    redfish_ca_path: Path | None = None

    def __repr__(self) -> str:  # no secrets in logs
        return f"Endpoints({self.name!r}, {self.method}, ipmi={self.ipmi}, redfish={self.redfish}, wol={self.wol}, " \
               f"ssh={self.ssh}, boot_check={self.boot_check})"

    def power_spec(self, secret_name: str, secret_namespace: str | None = None) -> dict:
        """spec.power of the machine's slot, referring to a Secret made from secret_data()."""
        ref = {"name": secret_name, **({"namespace": secret_namespace} if secret_namespace else {})}
        spec: dict = {"method": self.method}
        if self.ipmi:
            spec["ipmi"] = {**self.ipmi, "credentialsSecretRef": ref}
        if self.redfish:
            spec["redfish"] = {**self.redfish, "credentialsSecretRef": ref}
        if self.wol:
            spec["wol"] = dict(self.wol)
        if self.ssh:
            spec["ssh"] = {**self.ssh, "credentialsSecretRef": ref}
        return spec

    def secret_data(self) -> dict[str, str]:
        """The Secret's stringData: username and password, or privateKey for SSH."""
        if self.private_key_path is not None:
            return {"privateKey": self.private_key_path.read_text()}
        return {"username": self.username or "", "password": self.password or ""}


async def start_kubelet(machine: NodeSource, api: Kube, node_kubeconfig: Callable[[str], Path] | None,
                        settings: dict[str, float]) -> tuple[Kubelet, Kube | None]:
    """Start the kubelet of `machine` (a SimMachine, or anything with its face: vm.node_watch.VmNode).

    Without `node_kubeconfig` it writes with `api` (the in-memory server's lab). With it (the real control
    plane), it authenticates as its node (`system:node:<node>`, a client of its own from that kubeconfig, so the
    Node authorizer and NodeRestriction judge it), `api` only lifts the readiness taints (the "CNI"), it marks
    the pods bound to its Node Running and it falls silent once off (node/kubelet.py). Returns the kubelet and
    its own API client (None without `node_kubeconfig`), which the caller closes after stopping the kubelet.
    """
    if node_kubeconfig is None:
        kubelet, own = Kubelet(machine, api, **settings), None
    else:
        own_kubeconfig = node_kubeconfig(machine.identity.node_name)
        own = await Kube(str(own_kubeconfig)).__aenter__()
        kubelet = Kubelet(machine, own, taints_kube=api, pods_kubeconfig=own_kubeconfig,
                          report_when_off=False, **settings)
    kubelet.start()
    return kubelet, own


class Fleet:
    """The lab's simulated machines. Use `async with Fleet(...) as fleet:` or call close()."""

    def __init__(self, *, kubeconfig: str | Path | None = None, workdir: Path | None = None,
                 lease_seconds: float = 10.0, status_seconds: float = 60.0, retry_seconds: float = 1.0,
                 node_kubeconfig: Callable[[str], Path] | None = None, bmc_host: str = "127.0.0.1") -> None:
        self.kubeconfig = kubeconfig
        self.bmc_host = bmc_host  # where every IPMI and Redfish BMC and every boot port listens
        # node name -> a kubeconfig authenticating as that node's kubelet (the real control plane's lab): each
        # kubelet then has a client of its own, and `kubeconfig` is the readiness taints' owner (the "CNI");
        # the kubelets then also mark their Node's pods Running, and post nothing once their machine is off
        self.node_kubeconfig = node_kubeconfig
        self._node_apis: dict[str, Any] = {}
        self._own_workdir = workdir is None
        self.workdir = Path(workdir) if workdir else Path(tempfile.mkdtemp(prefix="hc-lab-"))
        self._kubelet_settings = dict(lease_seconds=lease_seconds, status_seconds=status_seconds,
                                      retry_seconds=retry_seconds)
        self.machines: dict[str, SimMachine] = {}
        self.endpoints: dict[str, Endpoints] = {}
        self.kubelets: dict[str, Kubelet] = {}
        self._ssh: dict[str, SshEndpoint] = {}
        self._boot_ports: dict[str, BootPort] = {}
        self._ipmi: IpmiServer | None = None
        self._redfish: RedfishService | None = None
        self._wol: WolSegment | None = None
        self._api: Kube | None = None
        self._ca: tls.KeyPair | None = None
        self._redfish_tls: tuple[ssl.SSLContext, Path] | None = None
        self._macs: set[str] = set()

    async def __aenter__(self) -> "Fleet":
        return self

    async def __aexit__(self, *exc_info) -> None:
        await self.close()

    # -- shared services, made on first use
    async def _api_client(self) -> Kube | None:
        """The one client every kubelet of the fleet shares (None without a kubeconfig)."""
        if self._api is None and self.kubeconfig is not None:
            self._api = await Kube(str(self.kubeconfig)).__aenter__()
        return self._api

    async def wol_segment(self) -> WolSegment:
        if self._wol is None:
            self._wol = WolSegment()
            await self._wol.start()
        return self._wol

    def ssh_commands(self, name: str) -> list[str]:
        """The commands the sshd of Wake-on-LAN machine `name` was asked to run (its power-offs), oldest first."""
        return list(self._ssh[name].commands)

    def _tls_context(self) -> tuple[ssl.SSLContext, Path]:
        if self._redfish_tls is None:
            self._ca = tls.make_ca("homecluster-lab-bmc-ca")
            leaf = tls.issue(self._ca, "homecluster-lab-bmc", sorted({"127.0.0.1", "localhost", self.bmc_host}))
            directory = self.workdir / "redfish-tls"
            cert, key = leaf.write(directory, "bmc")
            ca_path, _ = self._ca.write(directory, "ca")
            context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
            context.load_cert_chain(cert, key)
            self._redfish_tls = (context, ca_path)
        return self._redfish_tls

    # -- machines
    async def start(self, specs: list[MachineSpec]) -> dict[str, Endpoints]:
        """Start every machine of `specs`; returns their endpoints by name."""
        for spec in specs:
            await self.add(spec)
        return {spec.name: self.endpoints[spec.name] for spec in specs}

    def _machine(self, spec: MachineSpec) -> SimMachine:
        mac = normalize_mac(spec.mac) if spec.mac else mac_for(spec.name)
        while mac in self._macs and not spec.mac:
            mac = mac_for(mac)
        if mac in self._macs:
            raise ValueError(f"machine {spec.name}: MAC {mac} is already used by another machine of the lab")
        self._macs.add(mac)
        slot = spec.slot or spec.name
        identity = Identity(name=spec.name, slot=slot, mac=mac, node_name=spec.node_name or slot,
                            provider_id=spec.provider_id or f"homecluster://{slot}", labels=dict(spec.labels),
                            capacity=dict(spec.capacity), allocatable=spec.allocatable,
                            readiness_taints=tuple(spec.readiness_taints))
        timing = Timing(boot_seconds=spec.boot_seconds, ready_taints_clear_seconds=spec.ready_taints_clear_seconds,
                        unknown_after_seconds=spec.unknown_after_seconds,
                        graceful_shutdown_seconds=spec.graceful_shutdown_seconds)
        credentials = Credentials(spec.username, spec.password or secrets.token_urlsafe(12))
        return SimMachine(identity, timing=timing, faults=spec.faults, credentials=credentials,
                          powered_on=spec.powered_on)

    async def add(self, spec: MachineSpec) -> Endpoints:
        if spec.name in self.machines:
            raise ValueError(f"machine {spec.name} already exists in the lab; pick another name")
        machine = self._machine(spec)
        creds = machine.credentials
        wol = await self.wol_segment()
        wol.register(machine)  # every machine's NIC hears magic packets, whatever its power method
        wol_info = {"macAddress": machine.mac, "broadcastAddress": "127.0.0.1", "port": wol.port}
        if spec.method in ("ipmi", "redfish"):  # a wol machine's sshd is its boot check port
            boot_port = BootPort(machine, host=self.bmc_host)
            await boot_port.start()
            self._boot_ports[spec.name] = boot_port
            boot_check = {"host": boot_port.host, "port": boot_port.port}
        if spec.method == "ipmi":
            if self._ipmi is None:
                self._ipmi = IpmiServer()
            bmc = await asyncio.to_thread(self._ipmi.add, machine, self.bmc_host)
            endpoints = Endpoints(spec.name, "ipmi", ipmi={"address": self.bmc_host, "port": bmc.port},
                                  boot_check=boot_check, username=creds.username, password=creds.password)
        elif spec.method == "redfish":
            if self._redfish is None:
                self._redfish = RedfishService()
            context, ca_path = self._tls_context() if spec.redfish_tls else (None, None)
            port = await self._redfish.add(machine, host=self.bmc_host, ssl_context=context,
                                           power_delay_seconds=spec.power_delay_seconds)
            scheme = "https" if context else "http"
            endpoints = Endpoints(spec.name, "redfish",
                                  redfish={"endpoint": f"{scheme}://{self.bmc_host}:{port}", "systemId": machine.name,
                                           "verifyTLS": False, **({} if context else {"insecure": True})},
                                  boot_check=boot_check, username=creds.username, password=creds.password,
                                  redfish_ca_path=ca_path)
        else:
            ssh = SshEndpoint(machine, self.workdir / f"ssh-{len(self._ssh)}", host=self.bmc_host)
            await ssh.start()
            self._ssh[spec.name] = ssh
            endpoints = Endpoints(spec.name, "wol", wol=wol_info,
                                  ssh={"host": ssh.host, "port": ssh.port, "user": ssh.user, "command": "poweroff"},
                                  boot_check={"host": ssh.host, "port": ssh.port},
                                  private_key_path=ssh.client_key.private_path)
        self.machines[spec.name] = machine
        self.endpoints[spec.name] = endpoints
        api = await self._api_client()
        if api is not None:
            kubelet, own = await start_kubelet(machine, api, self.node_kubeconfig, self._kubelet_settings)
            self.kubelets[spec.name] = kubelet
            if own is not None:
                self._node_apis[spec.name] = own
        return endpoints

    async def remove(self, name: str) -> None:
        machine = self.machines.pop(name, None)
        if machine is None:
            return
        self.endpoints.pop(name, None)
        kubelet = self.kubelets.pop(name, None)
        if kubelet is not None:
            await kubelet.stop()
        own_api = self._node_apis.pop(name, None)
        if own_api is not None:
            await own_api.close()
        ssh = self._ssh.pop(name, None)
        if ssh is not None:
            await ssh.close()
        boot_port = self._boot_ports.pop(name, None)
        if boot_port is not None:
            await boot_port.close()
        if self._ipmi is not None:
            await asyncio.to_thread(self._ipmi.remove, name)
        if self._redfish is not None:
            await self._redfish.remove(name)
        if self._wol is not None:
            self._wol.unregister(machine)
        self._macs.discard(machine.mac)

    async def close(self) -> None:
        """Stop every machine, every server and every sshd."""
        for name in list(self.machines):
            try:
                await self.remove(name)
            except Exception:  # keep stopping the others; say what failed
                log.exception("lab: stopping machine %s failed", name)
        if self._ipmi is not None:
            await asyncio.to_thread(self._ipmi.close)
            self._ipmi = None
        if self._redfish is not None:
            await self._redfish.close()
            self._redfish = None
        if self._wol is not None:
            self._wol.close()
            self._wol = None
        if self._api is not None:
            await self._api.close()
            self._api = None
        if self._own_workdir:
            shutil.rmtree(self.workdir, ignore_errors=True)
