"""SSH power-off through a real OpenSSH sshd, driven by OpenSSH's `ssh` and by paramiko."""
from __future__ import annotations

import asyncio
import os
import shutil
import subprocess

import pytest

from homecluster_lab import ports
from homecluster_lab.machines.boot import Timing
from homecluster_lab.machines.machine import Identity, SimMachine
from homecluster_lab.machines.ssh import SSHD, SshEndpoint
from homecluster_lab.machines.ssh_commands import Effect, classify_command

from support.waits import poll

pytestmark = [pytest.mark.lab,
              pytest.mark.skipif(not (os.path.exists(SSHD) and shutil.which("ssh")), reason="needs OpenSSH")]


@pytest.fixture
async def endpoint(tmp_path):
    machine = SimMachine(Identity("wol-1", "wol-1", "52:54:00:cc:00:01", "node-wol-1", "k3s://node-wol-1"),
                         timing=Timing(boot_seconds=0.3, graceful_shutdown_seconds=0.2), powered_on=True)
    ep = SshEndpoint(machine, tmp_path / "ssh")
    await ep.start()
    yield ep
    await ep.close()
    assert not ports.held_by(os.getpid(), ep.port)  # the port is given back


async def ssh(ep: SshEndpoint, command: str) -> subprocess.CompletedProcess:
    args = ["ssh", "-i", str(ep.client_key.private_path), "-p", str(ep.port), "-o", "BatchMode=yes",
            "-o", "StrictHostKeyChecking=no", "-o", "UserKnownHostsFile=/dev/null", "-o", "LogLevel=ERROR",
            "-o", "ConnectTimeout=5", f"{ep.user}@127.0.0.1", command]
    return await asyncio.to_thread(subprocess.run, args, capture_output=True, text=True, timeout=30)



async def test_openssh_poweroff_turns_the_machine_off_and_sshd_stops(endpoint):
    machine = endpoint.machine
    assert endpoint.listening
    result = await ssh(endpoint, "hostname")
    assert result.returncode == 0 and result.stdout.strip() == "node-wol-1"
    result = await ssh(endpoint, "poweroff")
    assert result.returncode == 0, result.stderr
    assert await poll(lambda: machine.power_state() == "off")
    assert machine.events[-1].action == "self-off"  # the graceful shutdown completed
    assert await poll(lambda: not endpoint.listening)
    refused = await ssh(endpoint, "poweroff")
    assert refused.returncode == 255 and "refused" in refused.stderr.lower()
    assert endpoint.commands == ["hostname", "poweroff"]


async def test_sshd_comes_back_when_the_os_is_up_again(endpoint):
    machine = endpoint.machine
    machine.power_off()
    assert await poll(lambda: not endpoint.listening)
    machine.power_on()
    assert not endpoint.listening  # still booting
    assert await poll(lambda: endpoint.listening)
    assert (await ssh(endpoint, "true")).returncode == 0


async def test_paramiko_runs_the_power_off(endpoint):
    import paramiko

    def run() -> tuple[int, bytes]:
        client = paramiko.SSHClient()
        client.set_missing_host_key_policy(paramiko.AutoAddPolicy())  # a fresh lab host key each time
        client.connect("127.0.0.1", port=endpoint.port, username=endpoint.user,
                       key_filename=str(endpoint.client_key.private_path), look_for_keys=False, allow_agent=False)
        try:
            _, stdout, _ = client.exec_command("poweroff -f")
            return stdout.channel.recv_exit_status(), stdout.read()
        finally:
            client.close()

    status, _ = await asyncio.to_thread(run)
    assert status == 0
    assert endpoint.machine.power_state() == "off"
    assert endpoint.machine.events[-1].action == "off"  # hard off: at once


async def test_unknown_command_fails_and_changes_nothing(endpoint):
    result = await ssh(endpoint, "rm -rf /")
    assert result.returncode == 127 and "not found" in result.stderr
    assert endpoint.machine.power_state() == "on"


async def test_a_wrong_key_is_refused(endpoint, tmp_path):
    from homecluster_lab.machines.ssh import make_key
    stranger = make_key(tmp_path / "stranger", "stranger")
    args = ["ssh", "-i", str(stranger.private_path), "-p", str(endpoint.port), "-o", "BatchMode=yes",
            "-o", "StrictHostKeyChecking=no", "-o", "UserKnownHostsFile=/dev/null", "-o", "IdentitiesOnly=yes",
            f"{endpoint.user}@127.0.0.1", "poweroff"]
    result = await asyncio.to_thread(subprocess.run, args, capture_output=True, text=True, timeout=30)
    assert result.returncode == 255 and "denied" in result.stderr.lower()
    assert endpoint.machine.power_state() == "on"


async def test_graceful_poweroff_ignored_but_forced_one_works(endpoint):
    machine = endpoint.machine
    machine.set_faults(ignores_graceful_shutdown=True)
    assert (await ssh(endpoint, "sudo systemctl poweroff")).returncode == 0
    await asyncio.sleep(0.5)
    assert machine.power_state() == "on"
    assert (await ssh(endpoint, "systemctl poweroff --force --force")).returncode == 0
    assert machine.power_state() == "off"


@pytest.mark.parametrize("command, effect", [
    ("poweroff", Effect.SOFT_OFF), ("sudo shutdown -h now", Effect.SOFT_OFF), ("/sbin/poweroff", Effect.SOFT_OFF),
    ("poweroff -f", Effect.HARD_OFF), ("systemctl poweroff -ff", Effect.HARD_OFF), ("reboot", Effect.REBOOT),
    ("", Effect.NOOP), ("echo hi", Effect.NOOP), ("rm -rf /", Effect.UNKNOWN), ("poweroff 'oops", Effect.UNKNOWN),
])
def test_classify_command(command, effect):
    assert classify_command(command) is effect
