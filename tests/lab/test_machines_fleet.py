"""A fleet of simulated machines: cheap to start, each reachable with what its slot's spec.power says."""
from __future__ import annotations

import asyncio
import json
import os
import subprocess
import time

import pytest
import wakeonlan

from homecluster_lab import ports
from homecluster_lab.machines.boot import Faults
from homecluster_lab.machines.fleet import Fleet, MachineSpec, mac_for
from homecluster_lab.machines.machine import Taint

from support.waits import poll

pytestmark = pytest.mark.lab


async def run(*args: str) -> subprocess.CompletedProcess:
    return await asyncio.to_thread(subprocess.run, list(args), capture_output=True, text=True, timeout=30)


async def test_a_hundred_machines_start_fast_and_each_kind_answers_its_own_client():
    specs = ([MachineSpec(f"ipmi-{i}", "ipmi", boot_seconds=0.2) for i in range(40)]
             + [MachineSpec(f"rf-{i}", "redfish", boot_seconds=0.2) for i in range(40)]
             + [MachineSpec(f"wol-{i}", "wol", boot_seconds=0.2) for i in range(20)])
    started = time.monotonic()
    async with Fleet() as fleet:
        endpoints = await fleet.start(specs)
        elapsed = time.monotonic() - started
        print(f"starting 100 machines took {elapsed:.1f}s")
        assert elapsed < 30, f"starting 100 machines took {elapsed:.1f}s (a hang, not a speed target)"
        assert len({e.ipmi["port"] for e in endpoints.values() if e.ipmi}) == 40
        assert len({m.mac for m in fleet.machines.values()}) == 100

        ipmi = endpoints["ipmi-7"]
        result = await run("ipmitool", "-I", "lanplus", "-H", ipmi.ipmi["address"], "-p", str(ipmi.ipmi["port"]),
                           "-U", ipmi.username, "-P", ipmi.password, "chassis", "power", "on")
        assert result.returncode == 0, result.stderr
        assert fleet.machines["ipmi-7"].power_state() == "on" and fleet.machines["ipmi-8"].power_state() == "off"

        rf = endpoints["rf-3"]
        url = f"{rf.redfish['endpoint']}/redfish/v1/Systems/{rf.redfish['systemId']}"
        result = await run("curl", "-sf", "-u", f"{rf.username}:{rf.password}", "-X", "POST", "-d",
                           '{"ResetType": "On"}', f"{url}/Actions/ComputerSystem.Reset")
        assert result.returncode == 0, result.stderr
        result = await run("curl", "-sf", "-u", f"{rf.username}:{rf.password}", url)
        assert json.loads(result.stdout)["PowerState"] == "On"

        wol = endpoints["wol-5"]
        await asyncio.to_thread(wakeonlan.wake, wol.wol["macAddress"], host=wol.wol["broadcastAddress"],
                                port=wol.wol["port"])
        machine = fleet.machines["wol-5"]
        assert await poll(lambda: machine.power_state() == "on")
        assert await poll(lambda: fleet._ssh["wol-5"].listening)
        assert sum(1 for s in fleet._ssh.values() if s.listening) == 1  # sshd only where the OS is up
        result = await run("ssh", "-i", str(wol.private_key_path), "-p", str(wol.ssh["port"]),
                           "-o", "BatchMode=yes", "-o", "StrictHostKeyChecking=no", "-o", "UserKnownHostsFile=/dev/null",
                           f"{wol.ssh['user']}@{wol.ssh['host']}", wol.ssh["command"])
        assert result.returncode == 0, result.stderr
        assert await poll(lambda: machine.power_state() == "off")
        workdir = fleet.workdir
    assert not ports.held_by(os.getpid(), wol.ssh["port"])  # the machine's SSH port is given back with the fleet
    assert not workdir.exists()


async def test_endpoints_give_a_slot_power_spec_and_secret():
    async with Fleet() as fleet:
        ipmi = await fleet.add(MachineSpec("a", "ipmi", password="pw"))
        rf = await fleet.add(MachineSpec("b", "redfish", redfish_tls=True))
        wol = await fleet.add(MachineSpec("c", "wol", mac="52-54-00-00-00-0C"))
        assert ipmi.power_spec("a-bmc", "homecluster-system") == {
            "method": "ipmi",
            "ipmi": {"address": "127.0.0.1", "port": ipmi.ipmi["port"],
                     "credentialsSecretRef": {"name": "a-bmc", "namespace": "homecluster-system"}}}
        assert ipmi.secret_data() == {"username": "admin", "password": "pw"}
        assert "pw" not in repr(ipmi) and "pw" not in repr(fleet.machines["a"].credentials)
        assert rf.redfish["endpoint"].startswith("https://127.0.0.1:") and rf.redfish_ca_path.exists()
        assert len(rf.secret_data()["password"]) >= 12  # generated
        spec = wol.power_spec("c-ssh")
        assert spec["wol"]["macAddress"] == "52:54:00:00:00:0c" and spec["ssh"]["command"] == "poweroff"
        assert spec["ssh"]["credentialsSecretRef"] == {"name": "c-ssh"}
        assert wol.secret_data()["privateKey"].startswith("-----BEGIN OPENSSH PRIVATE KEY-----")
        with pytest.raises(ValueError, match="already exists"):
            await fleet.add(MachineSpec("a", "ipmi"))


async def test_bmcs_and_boot_ports_listen_on_the_fleets_bmc_host_only():
    """The lab with a real node binds its BMCs where a pod reaches them (the node's bridge); here another loopback
    address stands for it: the endpoints name it, its clients power the machines there, and 127.0.0.1 has none."""
    host = "127.0.0.2"
    async with Fleet(bmc_host=host) as fleet:
        ipmi = await fleet.add(MachineSpec("a", "ipmi", boot_seconds=0.2))
        rf = await fleet.add(MachineSpec("b", "redfish", boot_seconds=0.2, redfish_tls=True))
        assert ipmi.ipmi["address"] == host and ipmi.boot_check["host"] == host
        assert rf.redfish["endpoint"] == f"https://{host}:{fleet._redfish._by_name['b'].port}"
        assert rf.boot_check["host"] == host

        result = await run("ipmitool", "-I", "lanplus", "-H", host, "-p", str(ipmi.ipmi["port"]),
                           "-U", ipmi.username, "-P", ipmi.password, "chassis", "power", "on")
        assert result.returncode == 0, result.stderr
        # the BMC's certificate names the address its endpoint does: verified against the fleet's CA
        result = await run("curl", "-sf", "--cacert", str(rf.redfish_ca_path), "-u", f"{rf.username}:{rf.password}",
                           "-X", "POST", "-d", '{"ResetType": "On"}',
                           f"{rf.redfish['endpoint']}/redfish/v1/Systems/b/Actions/ComputerSystem.Reset")
        assert result.returncode == 0, result.stderr
        assert fleet.machines["a"].power_state() == "on" and fleet.machines["b"].power_state() == "on"
        assert await poll(lambda: fleet._boot_ports["b"].listening)
        await asyncio.open_connection(host, rf.boot_check["port"])  # the OS answers on the BMC host
        for port in (fleet._redfish._by_name["b"].port, rf.boot_check["port"]):
            with pytest.raises(OSError):
                await asyncio.open_connection("127.0.0.1", port)


def test_spec_from_dict_and_validation():
    spec = MachineSpec.from_dict({"name": "x", "method": "wol", "boot_seconds": 1,
                                  "readinessTaints": [{"key": "node.cilium.io/agent-not-ready"}],
                                  "faults": {"flaps": True}})
    assert spec.readiness_taints == (Taint("node.cilium.io/agent-not-ready"),) and spec.faults == Faults(flaps=True)
    with pytest.raises(ValueError, match="method 'pxe'"):
        MachineSpec("y", "pxe")
    assert mac_for("x") == mac_for("x") != mac_for("y")
