"""molecule test of the collection's startup and shutdown playbooks against real VMs (molecule/vm_*).

Three VMs, one per method: `mol-ipmi` behind ipmi_sim, `mol-redfish` behind the lab's Redfish service
(run on its own event loop in a thread here), `mol-wol` woken by a magic packet and powered off over
its own sshd. This test makes them (powered off), opens their fronts, describes them in a JSON file
(HC_VM_PEERS) and runs `molecule test -s vm_startup` then `molecule test -s vm_shutdown`: syntax,
converge, idempotence, verify each. The scenarios check after every step that the qemu process runs
or is gone and that the guest answers over SSH; this test checks the same from outside. The `vms`
fixture powers everything off and fails the test if a qemu or ipmi_sim process is left.
"""
from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from load_factor import load_factor

from homecluster_lab.machines.redfish import RedfishService
from homecluster_lab.vm.wol_front import WolFront

pytestmark = [pytest.mark.vm, pytest.mark.slow]

REPO = Path(__file__).resolve().parents[2]
VENV_BIN = Path(sys.executable).parent
COLLECTIONS = REPO / "build" / "collections"


class RedfishThread:
    """The lab's Redfish service on an event loop of its own, for a synchronous test."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, name="redfish-loop", daemon=True)
        self.thread.start()
        self.service: RedfishService = self._call(self._make())

    async def _make(self) -> RedfishService:
        return RedfishService()

    def _call(self, coro):
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(10)

    def add(self, adapter) -> int:
        return self._call(self.service.add(adapter))

    def close(self) -> None:
        self._call(self.service.close())
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(5)
        self.loop.close()


def credentials(directory: Path, **files: str) -> str:
    directory.mkdir(parents=True, exist_ok=True)
    for name, content in files.items():
        path = directory / name
        path.write_text(content)
        path.chmod(0o600)
    return str(directory)


def molecule_env(tmp_path: Path, peers: Path) -> dict[str, str]:
    """The collection from build/collections (what `make collection` links), everything else in tmp_path."""
    link = COLLECTIONS / "ansible_collections" / "homecluster" / "infra"
    if not link.exists():
        link.parent.mkdir(parents=True, exist_ok=True)
        link.symlink_to(REPO)
    env = dict(os.environ)
    env.update(ANSIBLE_COLLECTIONS_PATH=str(COLLECTIONS), ANSIBLE_HOME=str(tmp_path / "ansible-home"),
               ANSIBLE_LOCAL_TEMP=str(tmp_path / "ansible-tmp"), XDG_CACHE_HOME=str(tmp_path / "cache"),
               ANSIBLE_NOCOLOR="1", ANSIBLE_FORCE_COLOR="0", ANSIBLE_LOCALHOST_WARNING="false",
               ANSIBLE_RETRY_FILES_ENABLED="false", ANSIBLE_PIPELINING="true",
               PATH=f"{VENV_BIN}:{env.get('PATH', '/usr/bin:/bin')}",
               HC_VM_PEERS=str(peers))
    return env


def molecule(scenario: str, env: dict[str, str]) -> tuple[subprocess.CompletedProcess, float]:
    """`molecule test -s SCENARIO` from the repository root; its output is kept beside the peers file."""
    started = time.monotonic()
    proc = subprocess.run([str(VENV_BIN / "molecule"), "test", "-s", scenario], cwd=REPO, env=env,
                          capture_output=True, text=True, timeout=300)
    Path(env["HC_VM_PEERS"]).with_name(f"molecule-{scenario}.log").write_text(proc.stdout + proc.stderr)
    return proc, time.monotonic() - started


def test_molecule_startup_and_shutdown_on_vms(vms, tmp_path, record_property):
    ipmi = vms.machine("mol-ipmi", password="mol-ipmi-pw").start_fronts()
    redfish = vms.machine("mol-redfish", password="mol-redfish-pw")
    wol = vms.machine("mol-wol")
    machines = {"ipmi": ipmi, "redfish": redfish, "wol": wol}
    key = str(vms.image.ssh_private_key)
    redfish_service = RedfishThread()
    wol_front = WolFront([wol.vm]).start()
    try:
        adapter = redfish.redfish_adapter()
        redfish_port = redfish_service.add(adapter)
        peers = {
            "key": key,
            "ipmi": {"name": ipmi.name, "port": ipmi.ipmi.port,
                     "credentials": credentials(tmp_path / "c-ipmi", username=ipmi.username, password=ipmi.password)},
            "redfish": {"name": redfish.name, "endpoint": f"http://127.0.0.1:{redfish_port}",
                        "credentials": credentials(tmp_path / "c-redfish", username=redfish.username,
                                                   password=redfish.password)},
            "wol": {"name": wol.name, "mac": wol.mac, "port": wol_front.port,
                    "credentials": credentials(tmp_path / "c-ssh", privateKey=Path(key).read_text())},
        }
        for method, machine in machines.items():
            peers[method].update(ssh_port=machine.ssh.port, pid_file=str(machine.vm.spec.pid_file))
        # the scenarios' waits for a guest to answer and for its qemu to be gone, in 1 s retries: 60 and 10 on a
        # quiet machine, stretched by the load (under make test-under-load a guest took longer than 60)
        factor = load_factor()
        peers.update(boot_retries=round(60 * factor), gone_retries=round(10 * factor))
        peers_file = tmp_path / "peers.json"
        peers_file.write_text(json.dumps(peers, indent=2))
        env = molecule_env(tmp_path, peers_file)

        proc, seconds = molecule("vm_startup", env)
        output = proc.stdout + proc.stderr
        assert proc.returncode == 0, output[-8000:]
        record_property("molecule_vm_startup_seconds", round(seconds, 1))
        assert "idempotence" in output.lower()
        assert wol_front.woken == ["mol-wol"], f"one magic packet powered mol-wol on: {wol_front.errors}"
        for machine in machines.values():
            assert machine.vm.is_running(), f"{machine.name}: qemu is not running after startup"
            answer = machine.vm.ssh("hostname")
            assert (answer.returncode, answer.stdout.strip()) == (0, machine.name), answer.stderr

        proc, seconds = molecule("vm_shutdown", env)
        output = proc.stdout + proc.stderr
        assert proc.returncode == 0, output[-8000:]
        record_property("molecule_vm_shutdown_seconds", round(seconds, 1))
        assert "idempotence" in output.lower()
        for machine in machines.values():
            assert not machine.vm.is_running(), f"{machine.name}: qemu still runs after shutdown"
        # the graceful paths worked: the guests powered themselves off, nothing had to be forced
        assert [action for action, _ in adapter.events] == ["on", "soft-off"], adapter.events
        chassis = (ipmi.vm.spec.state_dir / "chassis.log").read_text()
        assert "set shutdown 1" in chassis and "set power 0" not in chassis, chassis
    finally:
        wol_front.stop()
        redfish_service.close()
