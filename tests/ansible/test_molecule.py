"""molecule test for the startup and shutdown scenarios (molecule/), against real peers on
loopback: ipmi_sim, a second IPMI BMC (the lab's pyghmi-based BMC when it is importable, else a second
ipmi_sim), sushy-emulator, a Wake-on-LAN listener and sshd. Each run: syntax, converge, idempotence, verify."""
from __future__ import annotations

import subprocess
from contextlib import contextmanager

import pytest

from ansible_peers.ipmisim import IpmiSim
from ansible_peers.sshd import SshdPeer
from ansible_peers.sushy import SushyEmulator
from ansible_peers.wol import WolListener
from hc_ansible import REPO, VENV_BIN, ansible_env

pytestmark = pytest.mark.slow


def write_credentials(directory, username, password):
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "username").write_text(username)
    (directory / "password").write_text(password)
    return directory


class SimIpmi:
    def __init__(self, sim):
        self.sim, self.port, self.username, self.password = sim, sim.port, sim.username, sim.password
        self.kind = "ipmi_sim"

    def power(self):
        return self.sim.power


@contextmanager
def second_bmc(tmp_path, powered_on):
    """The lab's pyghmi BMC (an in-process peer written for the lab) if available, else another ipmi_sim."""
    try:
        from homecluster_lab.machines.boot import Timing
        from homecluster_lab.machines.ipmi import IpmiServer
        from homecluster_lab.machines.machine import Credentials, Identity, SimMachine
    except ImportError:
        sim = IpmiSim(tmp_path / "ipmi2", password="s3cret-two", power="on" if powered_on else "off").start()
        try:
            yield SimIpmi(sim)
        finally:
            sim.stop()
        return
    server = IpmiServer()
    machine = SimMachine(Identity("mol-2", "mol-2", "52:54:00:00:00:22", "mol-2", "k3s://mol-2"),
                         timing=Timing(graceful_shutdown_seconds=0.2), credentials=Credentials("admin", "s3cret-lab"),
                         powered_on=powered_on)
    bmc = server.add(machine)

    class LabBmc:
        kind = "lab pyghmi BMC"
        port, username, password = bmc.port, "admin", "s3cret-lab"

    try:
        yield LabBmc()
    finally:
        server.close()


def molecule(tmp_path, scenario, env):
    proc = subprocess.run([str(VENV_BIN / "molecule"), "test", "-s", scenario], cwd=REPO,
                          env=ansible_env(tmp_path, **env), capture_output=True, text=True, timeout=600)
    return proc


def test_molecule_startup(tmp_path):
    ipmi = IpmiSim(tmp_path / "ipmi", password="s3cret-one").start()
    redfish = SushyEmulator(tmp_path / "redfish", delay=1).start()
    wol = WolListener().start()
    try:
        with second_bmc(tmp_path, powered_on=False) as bmc2:
            env = {"HC_IPMI_PORT": ipmi.port, "HC_IPMI_CREDENTIALS": write_credentials(tmp_path / "c1", "admin", ipmi.password),
                   "HC_IPMI2_PORT": bmc2.port,
                   "HC_IPMI2_CREDENTIALS": write_credentials(tmp_path / "c2", bmc2.username, bmc2.password),
                   "HC_REDFISH_ENDPOINT": redfish.endpoint,
                   "HC_REDFISH_CREDENTIALS": write_credentials(tmp_path / "c3", redfish.username, redfish.password),
                   "HC_WOL_PORT": wol.port, "HC_WOL_CHECK_PORT": wol.boot_port}
            proc = molecule(tmp_path, "startup", env)
            assert proc.returncode == 0, (proc.stdout + proc.stderr)[-8000:]
            print("second IPMI peer:", bmc2.kind)
        assert "idempotence" in (proc.stdout + proc.stderr).lower()
        assert ipmi.power == "on" and redfish.power() == "On" and wol.received == ["52:54:00:12:34:56"]
    finally:
        for peer in (ipmi, redfish, wol):
            peer.stop()


def test_molecule_shutdown(tmp_path):
    ipmi = IpmiSim(tmp_path / "ipmi", password="s3cret-one", power="on").start()
    redfish = SushyEmulator(tmp_path / "redfish", delay=1, power_state="On").start()
    sshd = SshdPeer(tmp_path / "sshd").start()
    (tmp_path / "c4").mkdir()
    (tmp_path / "c4" / "privateKey").write_bytes(sshd.key_file.read_bytes())
    try:
        with second_bmc(tmp_path, powered_on=True) as bmc2:
            env = {"HC_IPMI_PORT": ipmi.port, "HC_IPMI_CREDENTIALS": write_credentials(tmp_path / "c1", "admin", ipmi.password),
                   "HC_IPMI2_PORT": bmc2.port,
                   "HC_IPMI2_CREDENTIALS": write_credentials(tmp_path / "c2", bmc2.username, bmc2.password),
                   "HC_REDFISH_ENDPOINT": redfish.endpoint,
                   "HC_REDFISH_CREDENTIALS": write_credentials(tmp_path / "c3", redfish.username, redfish.password),
                   "HC_SSH_PORT": sshd.port, "HC_SSH_USER": sshd.user, "HC_SSH_COMMAND": sshd.command,
                   "HC_SSH_FORCE_COMMAND": sshd.force_command, "HC_SSH_CREDENTIALS": tmp_path / "c4"}
            proc = molecule(tmp_path, "shutdown", env)
            assert proc.returncode == 0, (proc.stdout + proc.stderr)[-8000:]
        assert ipmi.power == "off" and redfish.power() == "Off"
        assert sshd.poweroff_requests() == ["graceful"]
    finally:
        for peer in (ipmi, redfish, sshd):
            peer.stop()
