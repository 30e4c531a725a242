"""How the lab gets its ports: no port is picked, let go and bound later.

Picking a free port, closing it and binding it later (or telling another program to) races with every
other process on the machine: under load the gap is long, and another lab, test worker or outgoing
connection takes the port (`[Errno 98] address already in use`). So:

- a listener in the lab's own process binds port 0 and reports the port the kernel gave it;
- a listener that must come and go on one fixed port (a machine's boot-check port, open exactly while
  its OS is up) holds its port for its whole life with a `HeldPort`: a socket bound with SO_REUSEPORT and
  never listening, which refuses connections (nothing listens) and keeps every other bind off the port
  (theirs lack SO_REUSEPORT), while `listener()` opens and closes the listening socket beside it;
- a program in another process that must be told its port (etcd, kube-apiserver, the operator) gets one
  from `program_port()`, is started, and is checked to serve on it; on failure its starter retries with
  a new port (`start_with_retries`).
"""
from __future__ import annotations

import socket
from collections.abc import Awaitable, Callable
from typing import TypeVar

T = TypeVar("T")


class HeldPort:
    """A TCP port on `host` that this object owns until `close()`; `port` is the number the kernel chose."""

    def __init__(self, host: str = "127.0.0.1") -> None:
        self.host = host
        self._hold: socket.socket | None = _reuseport_socket(host)
        self._hold.bind((host, 0))  # not listening: connections are refused
        self.port: int = self._hold.getsockname()[1]

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


def _reuseport_socket(host: str) -> socket.socket:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    # SO_REUSEPORT only (no SO_REUSEADDR): the held socket and its listeners share the port, while a
    # foreign bind -- with or without SO_REUSEADDR -- fails with EADDRINUSE
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
    return sock


def program_port(host: str = "127.0.0.1") -> int:
    """A port for a program in another process, which must be told its port before it binds it.

    The port is free now and nobody holds it after this returns: the caller starts the program, checks
    it serves there, and on failure asks again (start_with_retries). Port 0's pick is used: the kernel's
    ephemeral range, which it hands out round the range, so a just-freed port is the least likely pick."""
    with socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        return sock.getsockname()[1]


async def start_with_retries(start: Callable[[], Awaitable[T]], what: str, attempts: int = 5) -> T:
    """`start()` picks its ports and starts; a start that fails because a port was taken meanwhile
    (PortTaken) is retried with new ports, up to `attempts` times."""
    for attempt in range(1, attempts + 1):
        try:
            return await start()
        except PortTaken as exc:
            if attempt == attempts:
                raise PortTaken(f"{what}: every one of {attempts} tries found its port taken; last: {exc}") from exc
    raise AssertionError("unreachable")


class PortTaken(OSError):
    """A program could not bind the port it was given (another process took it after the pick)."""
