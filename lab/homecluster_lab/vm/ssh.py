"""OpenSSH client commands for the guest's dropbear, reached through qemu's loopback port forward.

Host keys are made fresh at every boot, so host key checking is off; the lab's VMs are on
loopback only.
"""
from __future__ import annotations

import subprocess
import time
from pathlib import Path

SSH_OPTIONS = (
    "-o", "StrictHostKeyChecking=no",
    "-o", "UserKnownHostsFile=/dev/null",
    "-o", "BatchMode=yes",
    "-o", "LogLevel=ERROR",
    "-o", "IdentitiesOnly=yes",
)


def ssh_argv(port: int, key: Path, command: str, connect_timeout: float = 3, host: str = "127.0.0.1") -> list[str]:
    """The `ssh` command line that runs `command` as root in the guest."""
    return ["ssh", *SSH_OPTIONS, "-o", f"ConnectTimeout={max(1, int(connect_timeout))}",
            "-i", str(key), "-p", str(port), f"root@{host}", command]


def run(port: int, key: Path, command: str, timeout: float = 10) -> subprocess.CompletedProcess[str]:
    """Run `command` in the guest; the result carries returncode, stdout and stderr."""
    return subprocess.run(ssh_argv(port, key, command, connect_timeout=min(timeout, 5)),
                          capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL)


def wait_until_answers(port: int, key: Path, timeout: float) -> bool:
    """True once `ssh ... true` succeeds; False if it never does within timeout seconds."""
    deadline = time.monotonic() + timeout
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            return False
        try:
            if run(port, key, "true", timeout=max(1.0, min(left, 5.0))).returncode == 0:
                return True
        except subprocess.TimeoutExpired:
            pass
        time.sleep(0.2)
