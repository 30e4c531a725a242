"""Ephemeral loopback ports for peers that cannot be told to bind port 0 and report it."""
from __future__ import annotations

import socket


def free_port(kind: int = socket.SOCK_STREAM) -> int:
    """A port the kernel just handed out on 127.0.0.1, closed again: for a program that must be told its port.
    The caller starts the program, checks the program itself bound it (bound_by), and retries on a new one."""
    with socket.socket(socket.AF_INET, kind) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def wait_tcp(port: int, timeout: float, host: str = "127.0.0.1") -> bool:
    import time
    until = time.monotonic() + timeout
    while time.monotonic() < until:
        try:
            with socket.create_connection((host, port), timeout=0.2):
                return True
        except OSError:
            time.sleep(0.02)
    return False


def bound_by(pid: int, port: int, table: str = "/proc/net/udp") -> bool:
    """Process `pid` (not another one that took the port after the pick) has a socket bound to `port`."""
    import os
    with open(table) as fh:
        inodes = {line.split()[9] for line in fh.readlines()[1:] if int(line.split()[1].rsplit(":", 1)[1], 16) == port}
    try:
        fds = os.listdir("/proc/%d/fd" % pid)
    except OSError:
        return False
    for fd in fds:
        try:
            link = os.readlink("/proc/%d/fd/%s" % (pid, fd))
        except OSError:
            continue
        if link.startswith("socket:[") and link[8:-1] in inodes:
            return True
    return False
