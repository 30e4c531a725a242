"""SSH power-off for a simulated machine without a BMC: a real OpenSSH sshd on a loopback port.

Design, and why:
- A real `sshd` (/usr/sbin/sshd) per Wake-on-LAN machine, with its own host key, config, pid file
  and authorized_keys in a private directory. Clients (OpenSSH `ssh`, paramiko, Ansible) speak to a
  genuine SSH server, so key handling, host keys and exit codes are real.
- The machine's port answers only while its operating system is up: a bootport.BootPort holds the
  port for the machine's whole life (no other process can take it while the machine is off) and
  listens while the OS is up, handing each connection to `sshd -i` (sshd's inetd mode: one real sshd
  per connection, on the connection as its stdin and stdout). Connecting to a machine that is off is
  refused, as on a real network.
- The machine's key in authorized_keys carries a forced command (`command="python -I ssh_forced.py
  <control socket>"`). Whatever the client asks to run, sshd runs that relay, which passes the
  requested command (SSH_ORIGINAL_COMMAND) to the lab over a Unix socket that only this machine's
  endpoint serves; the lab decides its effect (ssh_commands.classify_command) and answers with the
  output and exit code. A Unix socket, not a watched file: the answer is synchronous, so `ssh ...
  poweroff` returns only once the machine has taken the command, and an unknown command fails.
- Logins go to the user the lab runs as (root here; on a laptop, the user's own account), which is
  the only account an unprivileged sshd can serve. Running as root, sshd needs its privilege
  separation directory /run/sshd, which Debian's service unit normally creates: it is created if
  missing.
"""
from __future__ import annotations

import asyncio
import contextlib
import getpass
import json
import logging
import os
import socket
import sys
from dataclasses import dataclass
from pathlib import Path

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ed25519

from homecluster_lab.machines.bootport import BootPort
from homecluster_lab.machines.machine import SimMachine
from homecluster_lab.machines.ssh_commands import Effect, classify_command

log = logging.getLogger(__name__)

SSHD = "/usr/sbin/sshd"
FORCED_COMMAND_SCRIPT = Path(__file__).with_name("ssh_forced.py")


@dataclass(frozen=True)
class KeyFiles:
    private_path: Path
    public_line: str  # "ssh-ed25519 AAAA..."

    @property
    def private_pem(self) -> str:
        return self.private_path.read_text()


def make_key(path: Path, comment: str) -> KeyFiles:
    """An Ed25519 key in OpenSSH format at `path` (mode 0600), its public half at path.pub."""
    key = ed25519.Ed25519PrivateKey.generate()
    pem = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.OpenSSH,
                            serialization.NoEncryption())
    public = key.public_key().public_bytes(serialization.Encoding.OpenSSH, serialization.PublicFormat.OpenSSH)
    path.touch(mode=0o600)
    path.write_bytes(pem)
    line = f"{public.decode()} {comment}"
    path.with_suffix(".pub").write_text(line + "\n")
    return KeyFiles(path, line)


def sshd_config(*, directory: Path, user: str) -> str:
    """For `sshd -i` (no ListenAddress: the lab's BootPort listens and hands over each connection)."""
    return "\n".join([
        f"HostKey {directory / 'host_ed25519'}",
        f"PidFile {directory / 'sshd.pid'}",
        f"AuthorizedKeysFile {directory / 'authorized_keys'}",
        f"AllowUsers {user}",
        "PermitRootLogin forced-commands-only",
        "PubkeyAuthentication yes",
        "PasswordAuthentication no",
        "KbdInteractiveAuthentication no",
        "UsePAM no",
        "StrictModes no",
        "PrintMotd no",
        "PrintLastLog no",
        "MaxStartups 100",
        "LogLevel ERROR",
        "",
    ])


def authorized_key_line(key: KeyFiles, control_socket: Path) -> str:
    command = f"{sys.executable} -I {FORCED_COMMAND_SCRIPT} {control_socket}"
    options = f'command="{command}",no-pty,no-port-forwarding,no-agent-forwarding,no-X11-forwarding,no-user-rc'
    return f"{options} {key.public_line}\n"


class SshEndpoint:
    """sshd for one machine, answering on host:port while the machine's OS is up."""

    def __init__(self, machine: SimMachine, directory: Path, *, host: str = "127.0.0.1",
                 user: str | None = None) -> None:
        self.machine = machine
        self.directory = directory
        self.host = host
        self.user = user or getpass.getuser()
        self.port = 0
        self.client_key: KeyFiles | None = None
        self.commands: list[str] = []  # commands received, for tests and the lab's log
        self._control: asyncio.AbstractServer | None = None
        self._port = BootPort(machine, host=host, serve=self._session)

    @property
    def control_socket(self) -> Path:
        return self.directory / "control.sock"

    async def start(self) -> None:
        """Prepare keys and config, serve the control socket, and take the port (listening while the OS is up)."""
        self.directory.mkdir(parents=True, exist_ok=True, mode=0o700)
        if os.geteuid() == 0:
            Path("/run/sshd").mkdir(mode=0o755, exist_ok=True)
        make_key(self.directory / "host_ed25519", f"host-{self.machine.name}")
        self.client_key = make_key(self.directory / "id_ed25519", f"homecluster-lab-{self.machine.name}")
        (self.directory / "authorized_keys").write_text(authorized_key_line(self.client_key, self.control_socket))
        (self.directory / "sshd_config").write_text(sshd_config(directory=self.directory, user=self.user))
        self._control = await asyncio.start_unix_server(self._serve_control, path=str(self.control_socket))
        await self._port.start()  # listening before start() returns when the machine's OS is up
        self.port = self._port.port

    async def close(self) -> None:
        await self._port.close()  # ends the sessions too
        if self._control is not None:
            self._control.close()
            await self._control.wait_closed()
            self._control = None

    @property
    def listening(self) -> bool:
        """The port accepts connections (the machine's OS is up)."""
        return self._port.listening

    async def _session(self, connection: socket.socket) -> None:
        """One connection: a real sshd in inetd mode on it (killed if the endpoint closes meanwhile)."""
        with connection:
            connection.setblocking(True)  # the child's stdin and stdout
            stderr = open(self.directory / "sshd.log", "ab")
            try:
                proc = await asyncio.create_subprocess_exec(
                    SSHD, "-i", "-e", "-f", str(self.directory / "sshd_config"),
                    stdin=connection.fileno(), stdout=connection.fileno(), stderr=stderr)
            finally:
                stderr.close()
        try:
            await proc.wait()
        except asyncio.CancelledError:
            with contextlib.suppress(ProcessLookupError):
                proc.kill()
            await asyncio.shield(proc.wait())
            raise

    # -- the control socket the forced command talks to
    async def _serve_control(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            request = json.loads(await asyncio.wait_for(reader.readline(), 10) or b"{}")
            command = str(request.get("command", ""))
            self.commands.append(command)
            effect, reply = self._decide(command)
            writer.write(json.dumps(reply).encode() + b"\n")
            await writer.drain()
        except (OSError, ValueError, asyncio.TimeoutError) as exc:
            log.warning("machine %s: bad request on the SSH control socket: %s", self.machine.name, exc)
            return
        finally:
            writer.close()
        self._apply(effect)

    def _decide(self, command: str) -> tuple[Effect, dict]:
        effect = classify_command(command)
        name = self.machine.identity.node_name
        if effect is Effect.UNKNOWN:
            word = command.split()[0] if command.split() else command
            return effect, {"exit": 127, "stderr": f"sh: 1: {word}: not found\n"}
        if effect is Effect.NOOP:
            out = f"{name}\n" if command.strip() == "hostname" else ""
            return effect, {"exit": 0, "stdout": out}
        return effect, {"exit": 0}

    def _apply(self, effect: Effect) -> None:
        if effect is Effect.SOFT_OFF:
            self.machine.soft_off(source="ssh")
        elif effect is Effect.HARD_OFF:
            self.machine.power_off(source="ssh")
        elif effect is Effect.REBOOT:
            self.machine.reset(source="ssh")
