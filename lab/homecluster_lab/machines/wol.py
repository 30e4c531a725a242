"""Wake-on-LAN for simulated machines: one UDP listener, like one broadcast segment.

On a real LAN a magic packet is broadcast and every NIC on the segment sees it; the one whose MAC
it names powers its machine on. The lab's segment is one UDP socket on 127.0.0.1: every registered
machine "sees" every packet. Senders differ in how often they repeat the MAC (16 times is the
standard, some send 20) and some append a 4- or 6-byte SecureOn password: all are accepted.
A machine with `bmc_unreachable` does not wake (read: its NIC is not listening).
"""
from __future__ import annotations

import asyncio
import logging
import re

from homecluster_lab.machines.machine import SimMachine

log = logging.getLogger(__name__)

_SYNC = b"\xff" * 6
_MAC_RE = re.compile(r"^[0-9a-f]{2}([:-]?)[0-9a-f]{2}(\1[0-9a-f]{2}){4}$")


def normalize_mac(mac: str) -> str:
    """'52-54-00-AB-CD-EF' or '525400abcdef' -> '52:54:00:ab:cd:ef'; ValueError names the bad value."""
    text = mac.strip().lower()
    if not _MAC_RE.match(text):
        raise ValueError(f"invalid MAC address {mac!r}: use six hex pairs, e.g. 52:54:00:12:34:56")
    digits = re.sub(r"[:-]", "", text)
    return ":".join(digits[i:i + 2] for i in range(0, 12, 2))


def parse_magic_packet(data: bytes) -> str | None:
    """The MAC a magic packet wakes, or None if `data` is not one.

    Accepted: 6 x 0xFF, then the MAC 16 or more times (16 or 20 in practice), then optionally a
    4- or 6-byte SecureOn password."""
    if len(data) < 102 or not data.startswith(_SYNC):
        return None
    mac = data[6:12]
    if mac == _SYNC:
        return None
    body = data[6:]
    repeats = 0
    while body[repeats * 6:(repeats + 1) * 6] == mac:
        repeats += 1
    rest = len(body) - repeats * 6
    if repeats < 16 or rest not in (0, 4, 6):
        return None
    return ":".join(f"{b:02x}" for b in mac)


class _Protocol(asyncio.DatagramProtocol):
    def __init__(self, segment: "WolSegment") -> None:
        self._segment = segment

    def datagram_received(self, data: bytes, addr) -> None:
        self._segment.receive(data)


class WolSegment:
    """A UDP listener that powers on the registered machine a magic packet names."""

    def __init__(self) -> None:
        self._machines: dict[str, SimMachine] = {}
        self._transport: asyncio.DatagramTransport | None = None
        self.port: int = 0
        self.received: list[str] = []  # MACs of accepted packets, for tests and the lab's log

    async def start(self, host: str = "127.0.0.1", port: int = 0) -> int:
        loop = asyncio.get_running_loop()
        self._transport, _ = await loop.create_datagram_endpoint(lambda: _Protocol(self), local_addr=(host, port))
        self.port = self._transport.get_extra_info("sockname")[1]
        return self.port

    def register(self, machine: SimMachine) -> None:
        self._machines[normalize_mac(machine.mac)] = machine

    def unregister(self, machine: SimMachine) -> None:
        self._machines.pop(normalize_mac(machine.mac), None)

    def receive(self, data: bytes) -> None:
        mac = parse_magic_packet(data)
        if mac is None:
            log.debug("ignored a %d-byte datagram that is not a magic packet", len(data))
            return
        self.received.append(mac)
        machine = self._machines.get(mac)
        if machine is None:
            log.debug("magic packet for %s: no machine with that MAC", mac)
            return
        if machine.faults.bmc_unreachable:
            return
        machine.power_on(source="wol")

    def close(self) -> None:
        if self._transport is not None:
            self._transport.close()
            self._transport = None
