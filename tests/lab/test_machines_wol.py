"""Wake-on-LAN: the `wakeonlan` package's magic packets power on the machine whose MAC they name."""
from __future__ import annotations

import asyncio
import socket

import pytest
import wakeonlan

from homecluster_lab.machines.machine import Identity, SimMachine
from homecluster_lab.machines.wol import WolSegment, normalize_mac, parse_magic_packet

from support.waits import poll

pytestmark = pytest.mark.lab

MAC_A, MAC_B = "52:54:00:aa:00:01", "52:54:00:bb:00:02"


def make_machine(name: str, mac: str) -> SimMachine:
    return SimMachine(Identity(name, name, mac, name, f"k3s://{name}"))


@pytest.fixture
async def segment():
    seg = WolSegment()
    await seg.start()
    yield seg
    seg.close()



@pytest.mark.filterwarnings("ignore:Use wake:DeprecationWarning")  # wakeonlan 4 deprecates it; still in use
async def test_wakeonlan_package_powers_on_only_the_named_machine(segment):
    a, b = make_machine("a", MAC_A), make_machine("b", MAC_B)
    segment.register(a)
    segment.register(b)
    await asyncio.to_thread(wakeonlan.send_magic_packet, MAC_B.upper(), ip_address="127.0.0.1", port=segment.port)
    assert await poll(lambda: b.power_state() == "on")
    assert a.power_state() == "off"
    assert b.events[-1].source == "wol"


async def test_wake_function_and_dash_separated_mac(segment):
    a = make_machine("a", MAC_A)
    segment.register(a)
    await asyncio.to_thread(wakeonlan.wake, MAC_A.replace(":", "-"), host="127.0.0.1", port=segment.port)
    assert await poll(lambda: a.power_state() == "on")


async def test_twenty_repeats_and_secureon_password_are_accepted(segment):
    a = make_machine("a", MAC_A)
    segment.register(a)
    mac = bytes.fromhex(MAC_A.replace(":", ""))
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        sock.sendto(b"\xff" * 6 + mac * 20, ("127.0.0.1", segment.port))
    assert await poll(lambda: a.power_state() == "on")
    a.power_off()
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        sock.sendto(b"\xff" * 6 + mac * 16 + b"\x01\x02\x03\x04\x05\x06", ("127.0.0.1", segment.port))
    assert await poll(lambda: a.power_state() == "on")


async def test_garbage_and_unreachable_nic_do_not_wake(segment):
    a = make_machine("a", MAC_A)
    segment.register(a)
    a.set_faults(bmc_unreachable=True)
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        sock.sendto(b"hello", ("127.0.0.1", segment.port))
        sock.sendto(wakeonlan.create_magic_packet(MAC_A), ("127.0.0.1", segment.port))
    assert await poll(lambda: MAC_A in segment.received)
    assert a.power_state() == "off"


@pytest.mark.parametrize("packet, mac", [
    (b"\xff" * 6 + bytes.fromhex("525400aa0001") * 16, MAC_A),
    (b"\xff" * 6 + bytes.fromhex("525400aa0001") * 20, MAC_A),
    (b"\xff" * 6 + bytes.fromhex("525400aa0001") * 16 + b"1234", MAC_A),
    (b"\xff" * 6 + bytes.fromhex("525400aa0001") * 15, None),  # too few repeats
    (b"\xff" * 5 + b"\x00" + bytes.fromhex("525400aa0001") * 16, None),  # bad sync stream
    (b"\xff" * 6 + bytes.fromhex("525400aa0001") * 15 + bytes.fromhex("525400aa0002"), None),  # mixed MACs
    (b"\xff" * 102, None),
])
def test_parse_magic_packet(packet, mac):
    assert parse_magic_packet(packet) == mac


def test_normalize_mac():
    assert normalize_mac("52-54-00-AA-00-01") == MAC_A == normalize_mac("525400aa0001")
    with pytest.raises(ValueError, match="invalid MAC address"):
        normalize_mac("52:54:00:aa:00")
