"""How the lab gets its ports: no port is picked, let go and bound later.

Picking a free port, closing it and binding it later (or telling another program to) races with every
other process on the machine: under load the gap is long, and another lab, test worker or outgoing
connection takes the port (`[Errno 98] address already in use`). So:

- a listener in the lab's own process binds port 0 and reports the port the kernel gave it;
- a listener that must come and go on one fixed port (a machine's boot-check port, open exactly while
  its OS is up) holds its port for its whole life with a `HeldPort` (on a port the kernel gave a plain
  socket, never shared with another hold of this process): a socket bound with SO_REUSEPORT and
  never listening, which refuses connections (nothing listens) and keeps every other bind off the port
  (theirs lack SO_REUSEPORT), while `listener()` opens and closes the listening socket beside it;
- a program in another process that must be told its port (the operator, etcd, kube-apiserver, a VM's
  qemu forwarding its SSH port, ipmi_sim on its UDP port) gets one from `program_port()`, is started, and
  is checked to listen on it itself (`listens`, `udp_bound_by`: a health check could be answered by another
  lab's program that holds the port); when the port was taken meanwhile, its starter starts it again on
  new ports.
"""
from __future__ import annotations

import asyncio
import contextlib
import errno
import os
import random
import socket
import threading
import time
from collections.abc import Callable
from pathlib import Path


# The ports this process's HeldPorts hold: one lab's hold never shares its port with another's (see HeldPort)
_HELD: set[tuple[str, int]] = set()
_HELD_LOCK = threading.Lock()
# how many times a program told its port (program_port) is started on new ones when another process took one
PORT_TRIES = 5


class HeldPort:
    """A TCP port on `host` that this object owns until `close()`; `port` is the number the kernel chose.

    The kernel chooses it for a plain socket (bound to port 0 without SO_REUSEPORT, so it is a port no socket
    is bound to), which is then closed and the port bound at once by the SO_REUSEPORT hold. Not the hold's own
    port-0 bind: for a socket with SO_REUSEPORT the kernel may hand out a port another SO_REUSEPORT socket of
    the same user already has, so two labs' machines shared a boot-check port (CI of stop 30, test_port_race,
    round 58 of 100: both labs' boot-check port 44239). Ports held in this process are also checked by number;
    between processes the gap between the plain pick and the hold's bind is a few microseconds."""

    def __init__(self, host: str = "127.0.0.1") -> None:
        self.host = host
        for _ in range(100):
            hold = _reuseport_socket(host)
            port = _unbound_port(host)
            try:
                hold.bind((host, port))  # not listening: connections are refused
            except OSError as exc:
                hold.close()
                if exc.errno == errno.EADDRINUSE:  # taken in the gap by a plain bind elsewhere: pick again
                    continue
                raise
            with _HELD_LOCK:
                if (host, port) in _HELD:  # shared with another hold of this process: pick again
                    hold.close()
                    continue
                _HELD.add((host, port))
            self._hold: socket.socket | None = hold
            self.port: int = port
            return
        raise OSError(errno.EADDRINUSE, f"no TCP port on {host} could be held after 100 tries")

    def listener(self, backlog: int = 128) -> socket.socket:
        """A new listening socket on the held port (close it to refuse connections again)."""
        if self._hold is None:
            raise RuntimeError(f"port {self.host}:{self.port} was given back; make a new HeldPort")
        sock = _reuseport_socket(self.host)
        try:
            sock.bind((self.host, self.port))
            sock.listen(backlog)
        except BaseException:
            sock.close()
            raise
        sock.setblocking(False)
        return sock

    def close(self) -> None:
        hold, self._hold = self._hold, None
        if hold is not None:
            hold.close()
            with _HELD_LOCK:
                _HELD.discard((self.host, self.port))


def _unbound_port(host: str) -> int:
    """A port no socket on `host` is bound to now: the kernel's choice for a plain (no SO_REUSEPORT) bind."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as probe:
        probe.bind((host, 0))
        return probe.getsockname()[1]


def _reuseport_socket(host: str) -> socket.socket:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    # SO_REUSEPORT only (no SO_REUSEADDR): the held socket and its listeners share the port, while a
    # foreign bind -- with or without SO_REUSEADDR -- fails with EADDRINUSE
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
    return sock


def program_port(host: str = "127.0.0.1", udp: bool = False) -> int:
    """A port for a program in another process, which must be told its port before it binds it.

    Below the kernel's ephemeral range, where no port-0 bind and no outgoing connection lands, so only
    another explicit pick can race for it; it is free now and nobody holds it after this returns: the
    caller starts the program, checks that the program itself listens there (`listens`), and on failure
    asks again."""
    low = max(1024, _ephemeral_low() - 12000)
    high = max(low + 1, _ephemeral_low() - 1)
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    for _ in range(200):
        port = random.randint(low, high)
        with socket.socket(family, socket.SOCK_DGRAM if udp else socket.SOCK_STREAM) as sock:
            try:
                sock.bind((host, port))
            except OSError:
                continue
            return port
    raise OSError(errno.EADDRINUSE, f"no free {'UDP' if udp else 'TCP'} port on {host} between {low} and {high}")


def _ephemeral_low() -> int:
    try:
        return min(65536, int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0]))
    except (OSError, ValueError, IndexError):
        return 32768


def listens(pid: int, port: int) -> bool:
    """Process `pid`, and no other, listens on TCP `port` (Linux /proc). "No other" matters: gRPC servers
    bind with SO_REUSEPORT, so two of them told the same port both start and share its connections."""
    listening = _listening(port)
    return bool(listening) and listening <= _sockets_of(pid)


def held_by(pid: int, port: int) -> bool:
    """Process `pid` has a TCP socket on local `port`, listening or not (a HeldPort's, say)."""
    return bool(_listening(port, states=None) & _sockets_of(pid))


def udp_bound_by(pid: int, port: int) -> bool:
    """Process `pid`, and no other, has a UDP socket on local `port` (Linux /proc)."""
    bound = _listening(port, states=None, tables=("/proc/net/udp", "/proc/net/udp6"))
    return bool(bound) and bound <= _sockets_of(pid)


def _listening(port: int, states: tuple[str, ...] | None = ("0A",),
               tables: tuple[str, ...] = ("/proc/net/tcp", "/proc/net/tcp6")) -> set[str]:
    """The inodes of the sockets in `tables` (TCP unless told) on local `port` in `states` (0A: LISTEN;
    None: any)."""
    found = set()
    for table in tables:
        with contextlib.suppress(OSError):
            for line in Path(table).read_text().splitlines()[1:]:
                fields = line.split()
                if (states is None or fields[3] in states) and int(fields[1].rsplit(":", 1)[1], 16) == port:
                    found.add(fields[9])
    found.discard("0")  # TIME_WAIT entries belong to no process
    return found


def _sockets_of(pid: int) -> set[str]:
    ours = set()
    with contextlib.suppress(OSError):
        for fd in Path(f"/proc/{pid}/fd").iterdir():
            with contextlib.suppress(OSError):
                link = os.readlink(fd)
                if link.startswith("socket:["):
                    ours.add(link[8:-1])
    return ours


async def wait_own(pid: int, port: int, timeout: float, exited: Callable[[], int | None],
                   log_text: Callable[[], str]) -> str:
    """Until program `pid` is the only listener on `port`: "ours"; "taken" as soon as another process
    listens there too, or the program's log says the port was in use; "exited" or "timeout" otherwise."""
    deadline = time.monotonic() + timeout
    while True:
        listening = _listening(port)
        mine = listening & _sockets_of(pid)
        if mine and mine == listening:
            return "ours"
        if (mine and listening - mine) or says_port_taken(log_text()):
            return "taken"
        if exited() is not None:
            return "exited"
        if time.monotonic() > deadline:
            return "timeout"
        await asyncio.sleep(0.05)


def says_port_taken(text: str) -> bool:
    """A program's log says a bind failed because the port was in use (Linux's wording, and Go's)."""
    return "address already in use" in text.lower()
