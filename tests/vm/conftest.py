"""Fixtures for the real-VM tests: one image build per session, VMs that are always powered off after.

The image goes to the repository's build/vm (git-ignored), so a second test run reuses it
(set HOMECLUSTER_VM_BUILD_DIR to put it elsewhere). Each test's VMs live in its tmp_path; after the
test every VM and ipmi_sim is stopped and the test fails if any qemu or ipmi_sim process of ours
is still alive.
"""
from __future__ import annotations

import os
import shutil
import time
from pathlib import Path

import pytest

from homecluster_lab.vm.image import BUILD_DIR_ENV, BuildReport, build_report
from homecluster_lab.vm.machine import VmMachine, leftover_processes
from homecluster_lab.vm.qemu import QEMU, Vm, VmSpec

REPO = Path(__file__).resolve().parents[2]
BOOT_TIMEOUT = 40.0  # TCG boots in about 4 s on 2 cores; generous for a loaded CI machine


def _build_dir() -> Path:
    return Path(os.environ.get(BUILD_DIR_ENV) or REPO / "build" / "vm")


@pytest.fixture(scope="session")
def image_report() -> BuildReport:
    if shutil.which(QEMU) is None:
        pytest.skip(f"{QEMU} is not installed (Debian package qemu-system-x86): real-VM tests need it")
    return build_report(_build_dir())


@pytest.fixture(scope="session")
def image(image_report):
    return image_report.paths


class VmFactory:
    """Makes VMs and VM machines under one folder and powers all of them off at the end."""

    def __init__(self, root: Path, image) -> None:
        self.root = root
        self.image = image
        self.vms: list[Vm] = []
        self.machines: list[VmMachine] = []
        self.boot_timeout = BOOT_TIMEOUT

    def vm(self, name: str, **spec) -> Vm:
        vm = Vm(VmSpec(name=name, state_dir=self.root / name, image=self.image, **spec))
        self.vms.append(vm)
        return vm

    def machine(self, name: str, **kwargs) -> VmMachine:
        kwargs.setdefault("username", "admin")
        kwargs.setdefault("password", "lab-secret-1")
        machine = VmMachine(name, self.root, self.image, **kwargs)
        self.machines.append(machine)
        self.vms.append(machine.vm)
        return machine

    def close(self) -> None:
        for machine in self.machines:
            machine.close()
        for vm in self.vms:
            vm.kill()


@pytest.fixture
def vms(tmp_path, image):
    factory = VmFactory(tmp_path, image)
    try:
        yield factory
    finally:
        factory.close()
        deadline = time.monotonic() + 5
        while leftover_processes(tmp_path) and time.monotonic() < deadline:
            time.sleep(0.1)
        left = leftover_processes(tmp_path)
        assert not left, f"qemu/ipmi_sim processes left running after the test: pids {left}"
