"""The simulated IPMI BMC against independent clients: Debian's ipmitool and pyghmi's client.

pyghmi's client runs in a subprocess: it shares process-wide state with pyghmi's server, and in
production it runs in another process (the Ansible module) anyway.
"""
from __future__ import annotations

import shutil
import subprocess
import sys
import textwrap
import time

import pytest

from homecluster_lab.machines.boot import Timing
from homecluster_lab.machines.ipmi import (IpmiServer, RMCP_STATUS_NO_CIPHER_SUITE_MATCH, is_sha1_proposal,
                                           proposed_algorithms)
from homecluster_lab.machines.machine import Credentials, Identity, SimMachine

pytestmark = [pytest.mark.lab, pytest.mark.skipif(shutil.which("ipmitool") is None, reason="needs Debian's ipmitool")]


@pytest.fixture(scope="module")
def server():
    srv = IpmiServer()
    yield srv
    srv.close()


@pytest.fixture
def bmc(server, request):
    name = request.node.name[:40]
    m = SimMachine(Identity(name, name, "52:54:00:00:00:10", name, f"k3s://{name}"),
                   timing=Timing(graceful_shutdown_seconds=0.2), credentials=Credentials("admin", "s3cret"))
    b = server.add(m)
    yield b
    server.remove(name)


def ipmitool(bmc, *args, user="admin", password="s3cret", cipher=None, timeout_args=()):
    cmd = ["ipmitool", "-I", "lanplus", "-H", "127.0.0.1", "-p", str(bmc.port), "-U", user, "-P", password,
           *timeout_args]
    if cipher is not None:
        cmd += ["-C", str(cipher)]
    return subprocess.run(cmd + list(args), capture_output=True, text=True, timeout=60)


@pytest.mark.parametrize("cipher", [None, 3])
def test_ipmitool_powers_on_and_off(bmc, cipher):
    assert ipmitool(bmc, "chassis", "power", "status", cipher=cipher).stdout.strip() == "Chassis Power is off"
    on = ipmitool(bmc, "chassis", "power", "on", cipher=cipher)
    assert on.returncode == 0, on.stderr
    assert bmc.machine.power_state() == "on"
    assert ipmitool(bmc, "chassis", "power", "status", cipher=cipher).stdout.strip() == "Chassis Power is on"
    off = ipmitool(bmc, "chassis", "power", "off", cipher=cipher)
    assert off.returncode == 0, off.stderr
    assert bmc.machine.power_state() == "off"
    assert [(e.action, e.source) for e in bmc.machine.events] == [("on", "ipmi"), ("off", "ipmi")]


def test_ipmitool_soft_off_and_boot_device(bmc):
    bmc.machine.power_on()
    assert ipmitool(bmc, "chassis", "bootdev", "pxe").returncode == 0
    assert bmc.machine.boot_device == "network"
    assert ipmitool(bmc, "chassis", "power", "soft").returncode == 0
    deadline = time.monotonic() + 10  # a wait, not a speed target
    while bmc.machine.power_state() == "on" and time.monotonic() < deadline:
        time.sleep(0.05)
    assert bmc.machine.power_state() == "off"


def test_soft_off_is_ignored_when_the_machine_ignores_graceful_shutdown(bmc):
    bmc.machine.power_on()
    bmc.machine.set_faults(ignores_graceful_shutdown=True)
    assert ipmitool(bmc, "chassis", "power", "soft").returncode == 0
    time.sleep(0.5)
    assert bmc.machine.power_state() == "on"
    assert ipmitool(bmc, "chassis", "power", "off").returncode == 0
    assert bmc.machine.power_state() == "off"


def test_wrong_password_is_rejected(bmc):
    result = ipmitool(bmc, "chassis", "power", "on", password="wrong")
    assert result.returncode != 0
    assert bmc.machine.power_state() == "off"


def test_wrong_credentials_fault_rejects_the_right_password(bmc):
    bmc.machine.set_faults(wrong_credentials=True)
    assert ipmitool(bmc, "chassis", "power", "on").returncode != 0
    assert bmc.machine.power_state() == "off"
    bmc.machine.set_faults(wrong_credentials=False)
    assert ipmitool(bmc, "chassis", "power", "on").returncode == 0


def test_unreachable_bmc_answers_nothing(bmc):
    bmc.machine.set_faults(bmc_unreachable=True)
    started = time.monotonic()
    result = ipmitool(bmc, "chassis", "power", "on", cipher=3, timeout_args=("-N", "1", "-R", "1"))
    assert result.returncode != 0
    assert time.monotonic() - started >= 0.9  # a timeout, not a refusal
    assert bmc.machine.power_state() == "off"
    bmc.machine.set_faults(bmc_unreachable=False)
    assert ipmitool(bmc, "chassis", "power", "status", cipher=3).returncode == 0


def test_pyghmi_client_powers_on_and_off(bmc):
    code = textwrap.dedent(f"""
        from pyghmi.ipmi import command
        c = command.Command("127.0.0.1", "admin", "s3cret", port={bmc.port})
        print(c.get_power()["powerstate"])
        c.set_power("on")
        print(c.get_power()["powerstate"])
        c.set_bootdev("network")
        print(c.get_bootdev()["bootdev"])
        c.set_power("off")
        print(c.get_power()["powerstate"])
        try:
            command.Command("127.0.0.1", "admin", "wrong", port={bmc.port})
            print("accepted")
        except Exception as exc:
            print("rejected")
    """)
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["off", "on", "network", "off", "rejected"]
    assert [e.action for e in bmc.machine.events] == ["on", "off"]


def test_cipher_suite_proposals():
    sha256 = bytes([1, 0, 0, 0, 0, 0, 0, 0]) + bytes([0, 0, 0, 8, 3, 0, 0, 0, 1, 0, 0, 8, 4, 0, 0, 0,
                                                      2, 0, 0, 8, 1, 0, 0, 0])
    sha1 = bytes([1, 0, 0, 0, 0, 0, 0, 0]) + bytes([0, 0, 0, 8, 1, 0, 0, 0, 1, 0, 0, 8, 1, 0, 0, 0,
                                                    2, 0, 0, 8, 1, 0, 0, 0])
    assert proposed_algorithms(sha256) == (3, 4, 1) and not is_sha1_proposal(proposed_algorithms(sha256))
    assert is_sha1_proposal(proposed_algorithms(sha1))
    assert proposed_algorithms(b"\x00" * 10) is None
    assert RMCP_STATUS_NO_CIPHER_SUITE_MATCH == 0x11


def test_a_bmcs_answers_leave_its_socket_non_blocking_and_its_close_ends(server, bmc):
    """pyghmi's own send set the socket blocking, and its I/O thread, reading between two of its sends, could
    block in recvfrom with nothing more to come: a lab's teardown then hung for good (2026-12-05)."""
    import collections
    import socket
    import types

    from homecluster_lab.machines import ipmi as lab_ipmi

    answer = ipmitool(bmc, "chassis", "power", "status")  # answered through the send pyghmi's server calls
    assert answer.stdout.strip() == "Chassis Power is off", answer.stderr
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock, \
            socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as peer:
        peer.bind(("127.0.0.1", 0))
        sock.setblocking(False)
        lab_ipmi.ipmisession._io_sendto(sock, b"answer", peer.getsockname())
        assert sock.getblocking() is False
        assert peer.recvfrom(16)[0] == b"answer"
    assert lab_ipmi._nudge(), "pyghmi's I/O thread no longer answers"
    # a wake that nobody answers (an I/O thread stuck, as it was) gives up at its bound instead of hanging

    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as wake:
        wake.bind(("127.0.0.1", 0))
        unread = types.SimpleNamespace(ioqueue=collections.deque(), iosockets=[wake], myself="127.0.0.1",
                                       _monotonic_time=time.monotonic)
        real, lab_ipmi.ipmisession = lab_ipmi.ipmisession, unread
        try:
            started = time.monotonic()
            assert lab_ipmi._nudge(bound=0.3) is False
            assert 0.3 <= time.monotonic() - started < 5
        finally:
            lab_ipmi.ipmisession = real
        assert wake.recvfrom(16)[0] == b"\x01"  # the wake was sent, to the I/O thread's first socket
