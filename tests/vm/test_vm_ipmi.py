"""ipmitool and pyghmi against ipmi_sim whose power button is the VM's qemu process."""
from __future__ import annotations

import subprocess

import pytest
from pyghmi.ipmi import command as ipmi_command

pytestmark = pytest.mark.vm


def ipmitool(machine, *args, password=None):
    host, port = machine.ipmi.address
    return subprocess.run(
        ["ipmitool", "-I", "lanplus", "-C", "3", "-H", host, "-p", str(port), "-U", machine.username,
         "-P", password or machine.password, *args],
        capture_output=True, text=True, timeout=30,
    )


def test_ipmitool_power_on_status_and_off_drive_the_real_vm(vms):
    machine = vms.machine("slot-ipmi").start_fronts()
    assert ipmitool(machine, "chassis", "power", "status").stdout.strip() == "Chassis Power is off"

    on = ipmitool(machine, "chassis", "power", "on")
    assert on.returncode == 0, on.stderr
    assert machine.vm.is_running()
    assert ipmitool(machine, "chassis", "power", "status").stdout.strip() == "Chassis Power is on"
    assert machine.vm.wait_for_marker(vms.boot_timeout), machine.vm.serial_text()[-2000:]

    # pyghmi (the collection's IPMI client) sees the same BMC, unpatched
    host, port = machine.ipmi.address
    client = ipmi_command.Command(bmc=host, userid=machine.username, password=machine.password, port=port)
    try:
        assert client.get_power() == {"powerstate": "on"}
    finally:
        client.ipmi_session.logout()

    off = ipmitool(machine, "chassis", "power", "off")
    assert off.returncode == 0, off.stderr
    assert not machine.vm.is_running()
    assert ipmitool(machine, "chassis", "power", "status").stdout.strip() == "Chassis Power is off"


def test_status_follows_the_process_not_a_remembered_state(vms):
    machine = vms.machine("slot-ipmi-status").start_fronts()
    machine.vm.start()  # powered on behind the BMC's back
    assert ipmitool(machine, "chassis", "power", "status").stdout.strip() == "Chassis Power is on"
    machine.vm.kill()  # and off again
    assert ipmitool(machine, "chassis", "power", "status").stdout.strip() == "Chassis Power is off"


def test_wrong_password_is_refused(vms):
    machine = vms.machine("slot-ipmi-auth").start_fronts()
    result = ipmitool(machine, "chassis", "power", "on", password="not-the-password")
    assert result.returncode != 0
    assert not machine.vm.is_running()


def test_hang_knob_holds_for_a_power_on_through_the_bmc(vms):
    machine = vms.machine("slot-ipmi-hang").start_fronts()
    machine.vm.set_hang(True)  # the lab's fault knob, read by the chassis program at power-on
    assert ipmitool(machine, "chassis", "power", "on").returncode == 0
    assert machine.vm.wait_for_hang(vms.boot_timeout), machine.vm.serial_text()[-2000:]
    assert not machine.vm.wait_for_marker(0.5)
    assert not machine.vm.wait_for_ssh(1.5)
    assert ipmitool(machine, "chassis", "power", "status").stdout.strip() == "Chassis Power is on"
    assert ipmitool(machine, "chassis", "power", "off").returncode == 0
    assert not machine.vm.is_running()
