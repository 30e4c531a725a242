"""Wake-on-LAN for lab VMs: a UDP listener on loopback that powers on the VM whose MAC a magic packet names.

One listener plays one LAN segment: it may carry several VMs, and like their NICs it ignores
packets for other MACs. A packet for a VM that is already on changes nothing (as on real hardware).
"""
from __future__ import annotations

import logging
import socket
import threading

from .qemu import Vm, normalize_mac

log = logging.getLogger(__name__)
SYNC = b"\xff" * 6


def magic_packet_mac(data: bytes) -> str | None:
    """The MAC a magic packet wakes (aa:bb:...), or None if data is not one.

    Accepted: 6 x 0xFF then the MAC 16 times (102 bytes) or 20 times (126 bytes, as some senders
    do), optionally followed by a 4- or 6-byte SecureOn password (ignored here).
    """
    if not data.startswith(SYNC) or len(data) < 102:
        return None
    mac = data[6:12]
    for repeats in (16, 20):
        body = 6 + 6 * repeats
        if len(data) in (body, body + 4, body + 6) and data[6:body] == mac * repeats:
            return ":".join(f"{b:02x}" for b in mac)
    return None


class WolFront:
    """A magic-packet listener for some VMs on 127.0.0.1:<port> (port 0 picks a free one)."""

    def __init__(self, vms: list[Vm], port: int = 0, host: str = "127.0.0.1") -> None:
        self.vms = {normalize_mac(vm.spec.mac): vm for vm in vms}
        self._sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self._sock.bind((host, port))
        self._sock.settimeout(0.2)
        self.address: tuple[str, int] = self._sock.getsockname()
        self.port = self.address[1]
        self.woken: list[str] = []  # VM names powered on by a packet, in order (for tests and the lab's log)
        self.errors: list[str] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._serve, name=f"wol-{self.port}", daemon=True)

    def start(self) -> "WolFront":
        self._thread.start()
        return self

    def _serve(self) -> None:
        while not self._stop.is_set():
            try:
                data, _peer = self._sock.recvfrom(2048)
            except socket.timeout:
                continue
            except OSError:
                return
            self.handle(data)

    def handle(self, data: bytes) -> Vm | None:
        """Power on the VM the packet names; returns it if this packet started it."""
        mac = magic_packet_mac(data)
        vm = self.vms.get(mac) if mac else None
        if vm is None:
            return None
        try:
            if vm.start():
                self.woken.append(vm.name)
                log.info("Wake-on-LAN: magic packet for %s powered on VM %s", mac, vm.name)
                return vm
        except Exception as exc:  # keep listening; the error is reported, not lost
            self.errors.append(f"VM {vm.name}: {exc}")
            log.error("Wake-on-LAN: could not power on VM %s: %s", vm.name, exc)
        return None

    def stop(self) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(2)
        self._sock.close()
