"""A Redfish BMC in front of a lab VM, by reusing the lab's Redfish service with a VM as the machine.

homecluster_lab.machines.redfish.RedfishService serves the power part of Redfish for any object
that behaves like a SimMachine in these few ways: name, credentials, expected_password(),
faults.bmc_unreachable, power_state(), bmc_power_state(), power_on/power_off/soft_off/reset(source=), boot_device,
set_boot_device(). VmPowerAdapter provides exactly those with the VM's qemu process as the power,
so Redfish power changes start and kill the VM for real. (The service has no formal backend
interface; if it grows one, this adapter should implement it.)

GracefulShutdown asks the guest itself to power off (`poweroff -f` over its SSH), in a thread so the
service's event loop is not held up; if the guest does not answer, the VM stays on, as a real OS
that ignores the request would.
"""
from __future__ import annotations

import logging
import threading

from homecluster_lab.machines.boot import Faults
from homecluster_lab.machines.machine import BOOT_DEVICES, Credentials

from .qemu import Vm

log = logging.getLogger(__name__)


class VmPowerAdapter:
    """A VM seen through the SimMachine methods the Redfish service calls."""

    def __init__(self, vm: Vm, credentials: Credentials) -> None:
        self.vm = vm
        self.credentials = credentials
        self._boot_device = "default"
        self.events: list[tuple[str, str]] = []  # (action, source), for the lab's log and tests

    @property
    def name(self) -> str:
        return self.vm.name

    @property
    def faults(self) -> Faults:
        return Faults()  # a VM has no simulated faults: its failures are real ones

    def expected_password(self, username: str) -> str | None:
        return self.credentials.password if username == self.credentials.username else None

    def power_state(self) -> str:
        return "on" if self.vm.is_running() else "off"

    def bmc_power_state(self) -> str:
        """What the BMC reports: a VM's readback never lies (no simulated faults)."""
        return self.power_state()

    def power_on(self, source: str = "lab") -> bool:
        self.events.append(("on", source))
        self.vm.start()
        return True

    def power_off(self, source: str = "lab") -> bool:
        self.events.append(("off", source))
        self.vm.kill()
        return True

    def soft_off(self, source: str = "lab") -> bool:
        self.events.append(("soft-off", source))
        if self.vm.is_running():
            threading.Thread(target=self._guest_poweroff, name=f"soft-off-{self.name}", daemon=True).start()
        return True

    def _guest_poweroff(self) -> None:
        try:
            self.vm.ssh("poweroff -f", timeout=10)
        except Exception as exc:  # the guest may be gone or not up yet: then it stays as it is
            log.warning("VM %s: graceful shutdown over SSH failed: %s", self.name, exc)

    def reset(self, source: str = "lab") -> bool:
        self.events.append(("reset", source))
        if self.vm.is_running():
            self.vm.kill()
            self.vm.start()
        return True

    @property
    def boot_device(self) -> str:
        return self._boot_device

    def set_boot_device(self, device: str) -> None:
        if device not in BOOT_DEVICES:
            raise ValueError(f"VM {self.name}: unknown boot device {device!r}; use one of {BOOT_DEVICES}")
        self._boot_device = device
