"""SSH power-off for a simulated machine without a BMC: a real OpenSSH sshd on a loopback port.

Design, and why:
- A real `sshd` (/usr/sbin/sshd) per Wake-on-LAN machine, with its own host key, config, pid file
  and authorized_keys in a private directory. Clients (OpenSSH `ssh`, paramiko, Ansible) speak to a
  genuine SSH server, so key handling, host keys and exit codes are real.
- sshd listens only while the machine's operating system is up (the gate below starts it when the
  OS comes up and stops it when the machine goes off): connecting to a machine that is off is
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
import random
import socket
import sys
from dataclasses import dataclass
from pathlib import Path

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ed25519

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


def _ephemeral_low() -> int:
    try:
        return int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return 32768


def free_tcp_port(host: str = "127.0.0.1") -> int:
    """An unused TCP port for sshd, which cannot bind port 0 and report it back.

    sshd binds it only when the machine's OS comes up, possibly much later. A port from the kernel's
    ephemeral range could by then be the local end of some outgoing connection or another port-0
    bind, so pick one below that range (where only explicit binds land) and check it is free now."""
    low = max(1024, min(_ephemeral_low(), 65536) - 12000)
    high = max(low + 1, min(_ephemeral_low(), 65536) - 1)
    for _ in range(200):
        port = random.randint(low, high)
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
            try:
                sock.bind((host, port))
            except OSError:
                continue
            return port
    raise RuntimeError(f"no free TCP port for sshd on {host} between {low} and {high}")


def sshd_config(*, port: int, host: str, directory: Path, user: str) -> str:
    return "\n".join([
        f"ListenAddress {host}:{port}",
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
    """sshd for one machine, listening on host:port while the machine's OS is up."""

    def __init__(self, machine: SimMachine, directory: Path, *, host: str = "127.0.0.1",
                 user: str | None = None) -> None:
        self.machine = machine
        self.directory = directory
        self.host = host
        self.user = user or getpass.getuser()
        self.port = 0
        self.client_key: KeyFiles | None = None
        self.commands: list[str] = []  # commands received, for tests and the lab's log
        self._sshd: asyncio.subprocess.Process | None = None
        self._sshd_ready = False
        self._control: asyncio.AbstractServer | None = None
        self._gate: asyncio.Task | None = None
        self._wake = asyncio.Event()
        self._stopping = False  # a cancellation swallowed by a subprocess call must still end the gate
        self._sync_lock = asyncio.Lock()  # start() and the gate must not start two sshds
        self._unsubscribe = None

    @property
    def control_socket(self) -> Path:
        return self.directory / "control.sock"

    async def start(self) -> None:
        """Prepare keys and config, serve the control socket, and start gating sshd on the OS."""
        self.directory.mkdir(parents=True, exist_ok=True, mode=0o700)
        if os.geteuid() == 0:
            Path("/run/sshd").mkdir(mode=0o755, exist_ok=True)
        make_key(self.directory / "host_ed25519", f"host-{self.machine.name}")
        self.client_key = make_key(self.directory / "id_ed25519", f"homecluster-lab-{self.machine.name}")
        (self.directory / "authorized_keys").write_text(authorized_key_line(self.client_key, self.control_socket))
        self.port = free_tcp_port(self.host)
        (self.directory / "sshd_config").write_text(
            sshd_config(port=self.port, host=self.host, directory=self.directory, user=self.user))
        self._control = await asyncio.start_unix_server(self._serve_control, path=str(self.control_socket))
        loop = asyncio.get_running_loop()
        self._unsubscribe = self.machine.subscribe(lambda: loop.call_soon_threadsafe(self._wake.set))
        self._gate = asyncio.create_task(self._run_gate(), name=f"ssh-gate-{self.machine.name}")
        await self._sync()  # sshd is up before start() returns when the machine is

    async def close(self) -> None:
        self._stopping = True
        if self._unsubscribe:
            self._unsubscribe()
        if self._gate is not None:
            self._wake.set()
            self._gate.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._gate
            self._gate = None
        async with self._sync_lock:
            await self._stop_sshd()
        if self._control is not None:
            self._control.close()
            await self._control.wait_closed()
            self._control = None

    @property
    def listening(self) -> bool:
        """sshd accepts connections (started, seen listening, not exited)."""
        return self._sshd_ready and self._sshd is not None and self._sshd.returncode is None

    @property
    def _running(self) -> bool:
        return self._sshd is not None and self._sshd.returncode is None

    # -- the gate: sshd runs exactly while the OS is up
    async def _run_gate(self) -> None:
        while not self._stopping:
            view = self.machine.view()
            self._wake.clear()
            try:
                await self._sync()
            except Exception:
                log.exception("machine %s: could not start or stop sshd; retrying in 1 s", self.machine.name)
                await asyncio.sleep(1)
                continue
            timeout = None if view.next_change is None else max(0.01, view.next_change - self.machine.now())
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(self._wake.wait(), timeout)

    async def _sync(self) -> None:
        async with self._sync_lock:
            want = self.machine.view().os_up
            if want and not self._running:
                await self._start_sshd()
            elif not want and self._running:
                await self._stop_sshd()

    async def _start_sshd(self) -> None:
        stderr = open(self.directory / "sshd.log", "ab")
        try:
            self._sshd = await asyncio.create_subprocess_exec(
                SSHD, "-D", "-e", "-f", str(self.directory / "sshd_config"),
                stdin=asyncio.subprocess.DEVNULL, stdout=asyncio.subprocess.DEVNULL, stderr=stderr)
        finally:
            stderr.close()
        loop = asyncio.get_running_loop()
        deadline = loop.time() + 5
        while loop.time() < deadline:
            if self._sshd.returncode is not None:
                break
            try:
                _, writer = await asyncio.open_connection(self.host, self.port)
                writer.close()
                self._sshd_ready = True
                return
            except OSError:
                await asyncio.sleep(0.02)
        log_text = (self.directory / "sshd.log").read_text(errors="replace")[-2000:]
        await self._stop_sshd()
        raise RuntimeError(f"machine {self.machine.name}: sshd did not listen on {self.host}:{self.port}: {log_text}")

    async def _stop_sshd(self) -> None:
        proc, self._sshd = self._sshd, None
        self._sshd_ready = False
        if proc is None or proc.returncode is not None:
            return
        proc.terminate()
        try:
            await asyncio.wait_for(proc.wait(), 5)
        except asyncio.TimeoutError:
            proc.kill()
            await proc.wait()
        except asyncio.CancelledError:
            # close() cancelled the gate mid-stop: finish the stop before giving up,
            # or the terminated sshd outlives its endpoint
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
