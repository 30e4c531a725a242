"""A real IPMI 2.0 (RMCP+) BMC for a simulated machine, built on pyghmi's BMC server.

pyghmi keeps one process-wide I/O loop for all its sockets, so every BMC of the lab shares one
serving thread (`IpmiServer`): a hundred BMCs cost a hundred UDP sockets and one thread.

Two things differ from pyghmi's stock server:
- Cipher suites. pyghmi's server always answers with cipher suite 3 (HMAC-SHA1, AES) whatever the
  client proposed. pyghmi's own client proposes SHA-256 first, takes the SHA-1 answer for a SHA-256
  one and fails in RAKP2. This BMC answers any non-SHA-1 proposal with RMCP+ status 0x11 ("no cipher
  suite match"), which makes the client retry with SHA-1; ipmitool (default suite or -C 3) is unaffected.
- The server binds port 0 (ephemeral) and records the real port, since pyghmi routes session packets
  by the socket's port number.
- Sockets stay non-blocking. pyghmi's `_io_sendto` sets its socket blocking before each send, while
  pyghmi's I/O thread reads the same socket after setting it non-blocking: when a BMC's answer (sent from
  the serving thread) falls between the two, the I/O thread blocks in `recvfrom` until the next packet to
  that BMC, and at a lab's teardown none comes. Every later `_io_wait` then hung, and with it the lab's
  close (a clean-clone run hung in `test_chaos_campaign` teardown, 2026-12-05). The lab sends without
  changing the mode (`_send_nonblocking`), and its own waits on the I/O thread are bounded (`_nudge`).
Fault knobs: `bmc_unreachable` drops every packet (the client times out); `wrong_credentials` makes the
BMC check against a password no client knows (RAKP2 fails at once).
"""
from __future__ import annotations

import logging
import threading

import pyghmi.ipmi.bmc as pyghmi_bmc
import pyghmi.ipmi.private.serversession as serversession
import pyghmi.ipmi.private.session as ipmisession

from homecluster_lab.machines.machine import SimMachine

log = logging.getLogger(__name__)
NUDGE_BOUND = 2.0  # seconds the lab waits for pyghmi's I/O thread to take note of a socket change


def _send_nonblocking(mysocket, packet, sockaddr) -> None:
    """pyghmi's `_io_sendto` without its `setblocking(1)` (module docstring): a UDP datagram this small is
    sent at once or dropped, as pyghmi's own ignores a failed send."""
    if hasattr(mysocket, "fd"):
        mysocket = mysocket.fd
    try:
        mysocket.sendto(packet, sockaddr)
    except OSError:
        pass


def _nudge(bound: float = NUDGE_BOUND) -> bool:
    """Wake pyghmi's I/O thread (its select() then re-reads the socket list) and wait until it has gone round
    once, at most `bound` seconds; pyghmi's own `_io_wait` waits forever. False when it did not answer."""
    done = threading.Event()
    ipmisession.ioqueue.append((ipmisession._monotonic_time(), done, None))
    wake = ipmisession.iosockets[0]
    _send_nonblocking(wake, b"\x01", (ipmisession.myself, wake.getsockname()[1]))
    if not done.wait(bound):
        log.warning("pyghmi's I/O thread did not answer within %gs; going on without it", bound)
        return False
    return True

RMCP_STATUS_NO_CIPHER_SUITE_MATCH = 0x11
_SHA1_AUTH = 1  # RAKP-HMAC-SHA1
_ACCEPTED_INTEGRITY = (0, 1)  # none, HMAC-SHA1-96
_ACCEPTED_CONFIDENTIALITY = (0, 1)  # none, AES-CBC-128


def proposed_algorithms(request: bytes | bytearray) -> tuple[int, int, int] | None:
    """(auth, integrity, confidentiality) algorithm numbers of an RMCP+ Open Session Request.

    Layout (IPMI 2.0 table 13-9): tag, privilege, 2 reserved, console session id (4), then three
    8-byte payloads whose 5th byte is the algorithm. None when the request is too short."""
    if len(request) < 32:
        return None
    return request[12] & 0x3F, request[20] & 0x3F, request[28] & 0x3F


def is_sha1_proposal(algorithms: tuple[int, int, int] | None) -> bool:
    """Whether this BMC can serve the proposal (it only speaks cipher suite 3 and its subsets)."""
    if algorithms is None:
        return False
    auth, integrity, conf = algorithms
    return auth == _SHA1_AUTH and integrity in _ACCEPTED_INTEGRITY and conf in _ACCEPTED_CONFIDENTIALITY


class _Session(serversession.ServerSession):
    """A server session that refuses cipher suites it cannot speak, instead of pretending."""

    def create_open_session_response(self, request):
        if not is_sha1_proposal(proposed_algorithms(request)):
            request = bytearray(request)
            return bytearray([request[0], RMCP_STATUS_NO_CIPHER_SUITE_MATCH, 0, 0]) + request[4:8]
        return super().create_open_session_response(request)


class _Passwords:
    """pyghmi asks authdata.get(username) for the password to check against; ask the machine."""

    def __init__(self, machine: SimMachine) -> None:
        self._machine = machine

    def get(self, username: str, default=None):
        expected = self._machine.expected_password(username)
        return default if expected is None else expected


class MachineBmc(pyghmi_bmc.Bmc):
    """The BMC of one SimMachine on 127.0.0.1:<port>."""

    def __init__(self, machine: SimMachine, address: str = "127.0.0.1", port: int = 0) -> None:
        if machine.credentials is None:
            raise ValueError(f"machine {machine.name}: an IPMI BMC needs credentials (username and password)")
        self.machine = machine
        super().__init__(_Passwords(machine), port=port, address=address)
        self.port = self.serversocket.getsockname()[1]

    # -- drop everything when unreachable
    def sessionless_data(self, data, sockaddr):
        if self.machine.faults.bmc_unreachable:
            return
        data = bytearray(data)
        if len(data) >= 22 and data[0] == 6 and data[2:4] == b"\xff\x07" and data[4] == 6 and data[5] == 16:
            _Session(self.authdata, self.kg, sockaddr, self.serversocket, data[16:], self.uuid, bmc=self)
            return
        super().sessionless_data(data, sockaddr)

    def handle_raw_request(self, request, session):
        if self.machine.faults.bmc_unreachable:
            return
        super().handle_raw_request(request, session)

    # -- chassis
    def get_power_state(self):
        return self.machine.bmc_power_state()

    def power_on(self):
        self.machine.power_on(source="ipmi")

    def power_off(self):
        self.machine.power_off(source="ipmi")

    def power_shutdown(self):
        self.machine.soft_off(source="ipmi")  # ignored by `ignores_graceful_shutdown`; still "accepted"

    def power_reset(self):
        self.machine.reset(source="ipmi")

    def power_cycle(self):
        if self.machine.power_state() == "off":
            return 0xD5  # "command not supported in present state", as real BMCs answer
        self.machine.power_off(source="ipmi")
        self.machine.power_on(source="ipmi")

    def get_boot_device(self):
        return self.machine.boot_device

    def set_boot_device(self, bootdevice):
        self.machine.set_boot_device(bootdevice)

    def get_system_guid(self):
        return self.uuid

    def cold_reset(self):
        return 0

    def is_active(self):
        return self.machine.power_state() == "on"

    def close(self) -> None:
        """Stop answering: forget the socket in pyghmi's loop and close it."""
        sock = self.serversocket
        ipmisession.Session.bmc_handlers.pop(sock, None)
        for client in list(ipmisession.Session.bmc_handlers):
            handlers = ipmisession.Session.bmc_handlers.get(client)
            if isinstance(handlers, dict) and handlers.get(self.port) is not None \
                    and getattr(handlers[self.port], "bmc", None) is self:
                handlers.pop(self.port, None)
                if not handlers:
                    ipmisession.Session.bmc_handlers.pop(client, None)
        if sock in ipmisession.iosockets:
            ipmisession.iosockets.remove(sock)
            _nudge()  # let the I/O thread's select() drop the socket before it is closed
        sock.close()


class IpmiServer:
    """All the lab's BMCs, served by one thread running pyghmi's event loop."""

    _primed = False
    _prime_lock = threading.Lock()

    def __init__(self) -> None:
        self._bmcs: dict[str, MachineBmc] = {}
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    @classmethod
    def _prime(cls) -> None:
        # pyghmi wakes its I/O thread by sending to its first socket at an IPv6 address; make sure that
        # first socket is pyghmi's own dual-stack one, not an IPv4 BMC socket that cannot send there.
        with cls._prime_lock:
            if not cls._primed:
                ipmisession._io_sendto = _send_nonblocking  # serversession calls it through this module too
                ipmisession.Session._assignsocket()
                cls._primed = True

    def add(self, machine: SimMachine, address: str = "127.0.0.1", port: int = 0) -> MachineBmc:
        """Start answering IPMI for `machine`; the returned BMC's `.port` is where."""
        self._prime()
        bmc = MachineBmc(machine, address=address, port=port)
        self._bmcs[machine.name] = bmc
        if self._thread is None:
            self._thread = threading.Thread(target=self._serve, name="lab-ipmi", daemon=True)
            self._thread.start()
        else:
            self._wake()
        return bmc

    def remove(self, name: str) -> None:
        bmc = self._bmcs.pop(name, None)
        if bmc is not None:
            bmc.close()

    def _wake(self) -> None:
        # make pyghmi's select() notice new sockets
        _nudge()

    def _serve(self) -> None:
        while not self._stop.is_set():
            try:
                ipmisession.Session.wait_for_rsp(timeout=0.5)
            except Exception:  # one bad packet must not stop every BMC of the lab
                log.exception("IPMI loop error (continuing)")

    def close(self) -> None:
        for name in list(self._bmcs):
            self.remove(name)
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None
