"""A real VM boots, says who it is, answers SSH, and powers off for real; the hang knob stops its boot."""
from __future__ import annotations

import time

import pytest

from homecluster_lab.vm.machine import leftover_processes

pytestmark = pytest.mark.vm


def test_boot_marker_ssh_and_poweroff(vms, record_property):
    vm = vms.vm("slot-boot")
    started = time.monotonic()
    assert vm.start()
    assert vm.is_running()
    assert not vm.start(), "starting a running VM is a no-op"
    assert vm.wait_for_marker(vms.boot_timeout), f"no boot marker; console:\n{vm.serial_text()[-2000:]}"
    assert vm.wait_for_ssh(10)
    record_property("boot_to_sshd_seconds", round(time.monotonic() - started, 2))
    assert "HOMECLUSTER-BOOTED slot=slot-boot" in vm.serial_text()

    result = vm.ssh("echo hello")
    assert (result.returncode, result.stdout) == (0, "hello\n"), result.stderr
    assert vm.ssh("hostname").stdout.strip() == "slot-boot"

    pid = vm.pid()
    vm.ssh("poweroff -f", timeout=10)  # the session dies with the VM; its exit status is meaningless
    assert vm.wait_for_power_off(10), "qemu still runs after poweroff -f in the guest"
    assert vm.pid() is None and not vm.is_running()
    assert pid not in leftover_processes(vms.root)
    assert not vm.kill(), "a VM that powered itself off has nothing left to kill"


def test_hang_knob_stops_boot_before_marker_and_ssh(vms):
    vm = vms.vm("slot-hang", hang=True)
    vm.start()
    assert vm.wait_for_hang(vms.boot_timeout), f"the guest never reached its hang point:\n{vm.serial_text()[-2000:]}"
    assert not vm.wait_for_marker(1.0)
    assert not vm.wait_for_ssh(2.0)
    assert vm.is_running(), "a hung boot is still powered on"
    assert vm.kill()
    assert not vm.is_running()


def test_kill_is_a_pulled_plug(vms):
    vm = vms.vm("slot-kill")
    vm.start()
    pid = vm.pid()
    assert pid is not None
    assert vm.kill()
    assert not vm.is_running()
    assert leftover_processes(vms.root) == []


def test_qemu_refusal_is_reported_with_the_vm_name_and_qemus_words(vms, tmp_path):
    from dataclasses import replace

    from homecluster_lab.vm.qemu import VmError

    broken = replace(vms.image, kernel=tmp_path / "no-such-vmlinuz")
    vm = vms.vm("slot-broken")
    vm.spec.image = broken
    with pytest.raises(VmError, match=r"VM slot-broken: qemu exited \d+: .*no-such-vmlinuz"):
        vm.start()
    assert not vm.is_running()
