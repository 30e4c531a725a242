"""A Wake-on-LAN receiver on loopback: decodes magic packets and can "boot" a machine.

A magic packet is six 0xFF bytes followed by the target MAC repeated 16 times (some
senders repeat it 20 times; both are accepted). When ``boot_port`` is set, the first
packet for ``mac`` opens a TCP listener on that port after ``delay`` seconds: the
reachability check machine_power's wol method confirms a boot with.
"""
from __future__ import annotations

import socket
import threading
import time



def decode_magic(packet: bytes):
    """The MAC a magic packet wakes ('aa:bb:...'), or None if it is not one."""
    if len(packet) not in (102, 126) or packet[:6] != b"\xff" * 6:
        return None
    mac = packet[6:12]
    body = packet[6:]
    if body != mac * (len(body) // 6):
        return None
    return ":".join("%02x" % b for b in mac)


class WolListener:
    def __init__(self, mac: str = "52:54:00:12:34:56", boot_delay: float = 0.0, boot: bool = True) -> None:
        self.mac = mac.lower()
        self.boot_delay = boot_delay
        self.received = []  # MACs of valid magic packets, in order
        self.invalid = 0
        self.udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.udp.bind(("127.0.0.1", 0))
        self.port = self.udp.getsockname()[1]
        # the boot port is held from now on (bound with SO_REUSEPORT, never listening: connections are refused
        # and no other process can bind it) and a listener opens beside it at the boot -- a port picked, let go
        # and bound at the boot could be another process's by then (issue 28)
        self._hold = _reuseport_socket() if boot else None
        if self._hold is not None:
            self._hold.bind(("127.0.0.1", 0))
        self.boot_port = self._hold.getsockname()[1] if self._hold is not None else None
        self._tcp = None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._serve, daemon=True)

    @property
    def booted(self) -> bool:
        return self._tcp is not None

    def start(self) -> "WolListener":
        self.udp.settimeout(0.1)
        self._thread.start()
        return self

    def _serve(self) -> None:
        while not self._stop.is_set():
            try:
                packet, _ = self.udp.recvfrom(2048)
            except socket.timeout:
                continue
            except OSError:
                return
            mac = decode_magic(packet)
            if mac is None:
                self.invalid += 1
                continue
            self.received.append(mac)
            if mac == self.mac and self.boot_port and self._tcp is None:
                threading.Timer(self.boot_delay, self._boot).start()

    def _boot(self) -> None:
        if self._tcp is not None or self._stop.is_set():
            return
        tcp = _reuseport_socket()
        tcp.bind(("127.0.0.1", self.boot_port))
        tcp.listen(16)
        self._tcp = tcp

    def power_off(self) -> None:
        """The machine goes down: its service port stops answering."""
        if self._tcp is not None:
            self._tcp.close()
            self._tcp = None

    def wait_received(self, count: int, timeout: float = 2.0) -> bool:
        until = time.monotonic() + timeout
        while len(self.received) < count and time.monotonic() < until:
            time.sleep(0.01)
        return len(self.received) >= count

    def stop(self) -> None:
        self._stop.set()
        self.power_off()
        self.udp.close()
        if self._hold is not None:
            self._hold.close()
        self._thread.join(2)

    def module_args(self, check: bool = True) -> dict:
        args = {"mac_address": self.mac, "broadcast_address": "127.0.0.1", "port": self.port}
        if check and self.boot_port:
            args.update(check_host="127.0.0.1", check_port=self.boot_port)
        return args


def _reuseport_socket() -> socket.socket:
    """TCP, SO_REUSEPORT only: shares its port with our other such sockets, and with no one else's bind."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
    return sock
