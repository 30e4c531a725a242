"""The host-side kubelet's view of a VM (node_watch): the pure decision row by row, and the VM fault knob.

No VM boots here: `observe` is pure, and VmNode is fed a real Vm whose state folder we write (a pid
file pointing at a live process of ours that is not qemu must not count as the VM)."""
from __future__ import annotations

from pathlib import Path

import pytest

from homecluster_lab.cluster import LabConfig, LabError
from homecluster_lab.machines.boot import KubeletPhase, PowerRecord
from homecluster_lab.machines.machine import Identity, Taint
from homecluster_lab.vm.image import ImagePaths
from homecluster_lab.vm.machine import VmMachine
from homecluster_lab.vm.node_watch import Observation, VmNode, observe

UP = Observation(pid=100, booted=True)
BOOTING = Observation(pid=100, booted=False)
OFF = Observation(pid=None, booted=False)


def test_the_marker_of_a_running_vm_starts_the_kubelet_once():
    rec = observe(PowerRecord(), None, BOOTING, 1.0)
    assert rec == PowerRecord(), "qemu runs but the guest is not up: nothing to report yet"
    rec = observe(rec, 100, UP, 2.0)
    assert (rec.on, rec.on_since, rec.boot_count) == (True, 2.0, 1)
    assert observe(rec, 100, UP, 3.0) == rec, "seeing the same boot again changes nothing"


def test_power_off_stops_the_kubelet_and_a_new_boot_counts_again():
    up = observe(PowerRecord(), 100, UP, 2.0)
    off = observe(up, 100, OFF, 5.0)
    assert (off.on, off.kubelet_stopped_at) == (False, 5.0)
    reboot = observe(off, None, Observation(pid=200, booted=False), 6.0)
    assert reboot == off, "a new qemu process without its marker is not up"
    again = observe(reboot, 200, Observation(pid=200, booted=True), 9.0)
    assert (again.on, again.boot_count) == (True, 2)


def test_a_new_qemu_process_replacing_a_running_one_is_a_reset():
    up = observe(PowerRecord(), 100, UP, 2.0)
    reset = observe(up, 100, Observation(pid=300, booted=False), 4.0)
    assert (reset.on, reset.kubelet_stopped_at) == (False, 4.0)


def _node(tmp_path: Path, clock) -> VmNode:
    image = ImagePaths(*(tmp_path / n for n in ("vmlinuz", "initramfs.gz", "key", "key.pub")))
    machine = VmMachine("slot-watch", tmp_path / "vms", image, username="admin", password="pw")
    identity = Identity("slot-watch", "slot-watch", machine.mac, "slot-watch", "homecluster://slot-watch",
                        readiness_taints=(Taint("example.com/not-ready"),))
    return VmNode(machine, identity, ready_taints_clear_seconds=1.0, unknown_after_seconds=5.0, clock=clock)


def test_view_follows_the_boot_model_with_the_marker_as_the_boot(tmp_path, monkeypatch):
    now = [10.0]
    node = _node(tmp_path, lambda: now[0])
    seen = {"value": OFF}
    monkeypatch.setattr(node, "read", lambda: seen["value"])
    woken = []
    node.subscribe(lambda: woken.append(now[0]))

    assert node.view().phase is KubeletPhase.ABSENT
    seen["value"] = UP
    assert node.poll() and woken == [10.0]
    view = node.view()
    assert (view.phase, view.ready, view.readiness_taints) == (KubeletPhase.UP, "True", True)
    now[0] = 11.5
    assert not node.poll()
    assert node.view().readiness_taints is False, "taints clear ready_taints_clear_seconds after the marker"
    seen["value"] = OFF
    assert node.poll()
    assert (node.view().phase, node.view().ready) == (KubeletPhase.NOT_READY, "False")
    now[0] = 17.0
    assert node.view().ready == "Unknown"


def test_a_pid_file_naming_a_process_that_is_not_our_qemu_is_off(tmp_path):
    node = _node(tmp_path, lambda: 0.0)
    import os
    node.vm.spec.pid_file.write_text(str(os.getpid()))  # alive, but pytest is not this VM's qemu
    assert node.read() == OFF
    assert node.power_state() == "off"


def test_never_boots_is_the_hang_knob_and_sim_only_knobs_are_refused_loudly(tmp_path, caplog):
    node = _node(tmp_path, lambda: 0.0)
    assert node.faults.never_boots is False
    node.set_faults(never_boots=True, flaps=True)
    assert node.vm.spec.hang is True and node.faults.never_boots is True
    assert "homecluster.hang=1" in node.vm.spec.kernel_cmdline()
    assert "flaps" in caplog.text and "only on simulated machines" in caplog.text
    node.set_faults(never_boots=False)
    assert node.vm.spec.hang is False
    with pytest.raises(TypeError, match="slot-watch: unknown fault knob"):
        node.set_faults(explodes=True)


def test_vm_hang_needs_vm_machines_and_known_slots():
    LabConfig(slots=2, machines="vm", vm_hang=("worker-02",)).validate()
    with pytest.raises(LabError, match="add --machines vm"):
        LabConfig(slots=2, vm_hang=("worker-02",)).validate()
    with pytest.raises(LabError, match="--vm-hang worker-09: no such slot"):
        LabConfig(slots=2, machines="vm", vm_hang=("worker-09",)).validate()
