"""Ephemeral loopback ports for peers that cannot be told to bind port 0 and report it."""
from __future__ import annotations

import socket


def free_port(kind: int = socket.SOCK_STREAM) -> int:
    """A port the kernel just handed out on 127.0.0.1 (closed again: a tiny race the callers retry)."""
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
