"""OpenSSH's sshd on a loopback port, whose "poweroff" stops the sshd itself.

The power-off command the module runs is a script that records the request and kills
this sshd: from the module's point of view the machine's SSH port stops answering,
exactly what it waits for. The keys (host and client) are made per instance.
"""
from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

from ansible_peers.ports import free_port, wait_tcp

SSHD = "/usr/sbin/sshd"

CONFIG = """Port {port}
ListenAddress 127.0.0.1
HostKey {dir}/host_key
PidFile {dir}/sshd.pid
AuthorizedKeysFile {dir}/authorized_keys
PermitRootLogin prohibit-password
PasswordAuthentication no
KbdInteractiveAuthentication no
UsePAM no
StrictModes no
PrintMotd no
LogLevel ERROR
"""

POWEROFF = """#!/bin/sh
echo "$(date +%s.%N) $*" >> {dir}/poweroff.log
kill $(cat {dir}/sshd.pid)
"""


class SshdPeer:
    def __init__(self, workdir: Path) -> None:
        self.dir = Path(workdir)
        self.dir.mkdir(parents=True, exist_ok=True)
        self.port = 0
        self.proc = None
        self.user = os.environ.get("USER") or "root"
        self.key_file = self.dir / "id_ed25519"
        self.command = "%s graceful" % (self.dir / "poweroff")
        self.force_command = "%s forced" % (self.dir / "poweroff")

    def start(self) -> "SshdPeer":
        Path("/run/sshd").mkdir(mode=0o755, exist_ok=True)  # sshd's privilege-separation directory
        for key in ("host_key", "id_ed25519"):
            if not (self.dir / key).exists():
                subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(self.dir / key)], check=True)
        (self.dir / "authorized_keys").write_text((self.dir / "id_ed25519.pub").read_text())
        script = self.dir / "poweroff"
        script.write_text(POWEROFF.format(dir=self.dir))
        script.chmod(0o755)
        for _ in range(5):
            self.port = free_port()
            (self.dir / "sshd_config").write_text(CONFIG.format(port=self.port, dir=self.dir))
            self.proc = subprocess.Popen([SSHD, "-D", "-e", "-f", str(self.dir / "sshd_config")],
                                         stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                         stderr=open(self.dir / "sshd.log", "ab"))
            if wait_tcp(self.port, 5.0) and self._pidfile():
                return self
            self.stop()
        raise RuntimeError("sshd did not start; see %s" % (self.dir / "sshd.log"))

    def _pidfile(self) -> bool:
        until = time.monotonic() + 2
        while time.monotonic() < until:
            if (self.dir / "sshd.pid").exists():
                return True
            time.sleep(0.02)
        return False

    def poweroff_requests(self) -> list:
        log = self.dir / "poweroff.log"
        return [line.split()[1] for line in log.read_text().splitlines()] if log.exists() else []

    @property
    def running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def stop(self) -> None:
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        (self.dir / "sshd.pid").unlink(missing_ok=True)
        self.proc = None

    def module_args(self) -> dict:
        return {"host": "127.0.0.1", "port": self.port, "user": self.user, "private_key_file": str(self.key_file),
                "command": self.command, "force_command": self.force_command}
