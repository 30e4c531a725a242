"""A VM's ports when another process took them (issue 28): real qemu and ipmi_sim, no image needed.

The lab tells qemu (its SSH port forward, bound anew at every power-on) and ipmi_sim (its UDP BMC port) a port
number: a program's port (homecluster_lab.ports.program_port), below the kernel's ephemeral range. When
another process took it between the pick and the bind, the program is started again on a new port, never
retried on the taken one.
"""
from __future__ import annotations

import shutil
import socket

import pytest

from homecluster_lab import ports
from homecluster_lab.vm import image
from homecluster_lab.vm.ipmi_front import IpmiFront
from homecluster_lab.vm.qemu import QEMU, Vm, VmError, VmSpec


def _taken(kind: int) -> socket.socket:
    """A socket of another process's kind holding a port the lab would pick (below the ephemeral range)."""
    sock = socket.socket(socket.AF_INET, kind)
    sock.bind(("127.0.0.1", ports.program_port(udp=kind == socket.SOCK_DGRAM)))
    if kind == socket.SOCK_STREAM:
        sock.listen()
    return sock


@pytest.mark.skipif(shutil.which("ipmi_sim") is None, reason="ipmi_sim is not installed (Debian package openipmi)")
def test_a_bmc_port_taken_after_the_pick_is_replaced_and_held_by_ipmi_sim(tmp_path):
    img = image.ImagePaths(tmp_path / "k", tmp_path / "i", tmp_path / "key", tmp_path / "key.pub")
    front = IpmiFront(Vm(VmSpec(name="w-1", state_dir=tmp_path / "w-1", image=img)), "admin", "pw")
    with _taken(socket.SOCK_DGRAM) as other:
        picked = front.port = other.getsockname()[1]  # the race: another process bound the port just picked
        front.start()
        try:
            assert front.port != picked and ports.udp_bound_by(front._proc.pid, front.port)
            assert f"addr 127.0.0.1 {front.port}" in (front.dir / "lan.conf").read_text()
        finally:
            front.stop()
        fixed = IpmiFront(front.vm, "admin", "pw", port=picked)  # a port the caller chose is never moved
        with pytest.raises(RuntimeError, match=f"could not bind 127.0.0.1:{picked}: .*Address already in use"):
            fixed.start()


@pytest.mark.skipif(shutil.which(QEMU) is None, reason=f"{QEMU} is not installed (Debian package qemu-system-x86)")
def test_a_vms_ssh_port_taken_while_it_was_off_is_replaced_in_its_spec(tmp_path):
    (tmp_path / "k").write_bytes(b"not a kernel")  # qemu sets up the port forward before it reads the kernel
    (tmp_path / "i").write_bytes(b"")
    img = image.ImagePaths(tmp_path / "k", tmp_path / "i", tmp_path / "key", tmp_path / "key.pub")
    with _taken(socket.SOCK_STREAM) as other:
        vm = Vm(VmSpec(name="w-1", state_dir=tmp_path / "w-1", image=img, ssh_port=other.getsockname()[1]))
        with pytest.raises(VmError) as failed:
            vm.start()
        # the second power-on got past the port (to the fake kernel), on a new port every reader sees
        assert "host forwarding" not in str(failed.value) and "kernel" in str(failed.value), failed.value
        assert vm.spec.ssh_port != other.getsockname()[1]
        assert Vm.load(vm.spec.state_dir).spec.ssh_port == vm.spec.ssh_port == vm.ssh_port()
