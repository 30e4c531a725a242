"""One lab machine made of a real VM and its power fronts, for `homecluster lab` and tests.

VmMachine owns: the Vm (qemu), its IPMI BMC (ipmi_sim) and its SSH endpoint (the guest's dropbear
on a loopback port). Wake-on-LAN is per LAN segment, so the lab makes one WolFront for all its VM
machines; Redfish is served by the lab's RedfishService on its event loop (`redfish_adapter()`).
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from . import procs
from .image import ImagePaths
from .ipmi_front import IpmiFront
from .qemu import QEMU, Vm, VmSpec


@dataclass(frozen=True)
class SshEndpoint:
    host: str
    port: int
    user: str
    private_key: Path


class VmMachine:
    """A VM with its IPMI front. start_fronts() opens the BMC; close() powers off and closes everything."""

    def __init__(self, name: str, state_root: Path, image: ImagePaths, *, username: str, password: str,
                 mac: str = "", hang: bool = False, ipmi_port: int = 0) -> None:
        self.vm = Vm(VmSpec(name=name, state_dir=Path(state_root) / name, image=image, mac=mac, hang=hang))
        self.ipmi = IpmiFront(self.vm, username, password, port=ipmi_port)
        self.username = username
        self.password = password

    @property
    def name(self) -> str:
        return self.vm.name

    @property
    def mac(self) -> str:
        return self.vm.spec.mac

    @property
    def ssh(self) -> SshEndpoint:
        return SshEndpoint("127.0.0.1", self.vm.ssh_port(), "root", self.vm.spec.image.ssh_private_key)

    def start_fronts(self) -> "VmMachine":
        self.ipmi.start()
        return self

    def redfish_adapter(self):
        """The object to hand RedfishService.add() so Redfish power changes drive this VM."""
        from homecluster_lab.machines.machine import Credentials

        from .redfish_front import VmPowerAdapter

        return VmPowerAdapter(self.vm, Credentials(self.username, self.password))

    def close(self) -> None:
        """Stop the BMC and cut the VM's power; safe to call twice."""
        self.ipmi.stop()
        self.vm.kill()


def leftover_processes(state_root: Path) -> list[int]:
    """Live qemu or ipmi_sim processes whose command line points into state_root (ours, left behind)."""
    root = str(Path(state_root).resolve())

    def ours(argv: list[str]) -> bool:
        return bool(argv) and (Path(argv[0]).name in (QEMU, "ipmi_sim")) and any(root in a for a in argv)

    return procs.find(ours)
