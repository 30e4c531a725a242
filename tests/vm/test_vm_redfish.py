"""Redfish in front of a VM: the lab's Redfish service with the VM as its machine."""
from __future__ import annotations

import asyncio
import base64

import aiohttp
import pytest
from support.waits import poll

pytestmark = pytest.mark.vm

redfish = pytest.importorskip("homecluster_lab.machines.redfish")


def _basic(user: str, password: str) -> dict[str, str]:
    return {"Authorization": "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()}


async def test_reset_on_and_force_off_start_and_kill_the_vm(vms):
    machine = vms.machine("slot-redfish")
    service = redfish.RedfishService()
    try:
        port = await service.add(machine.redfish_adapter())
        base = f"http://127.0.0.1:{port}/redfish/v1/Systems/slot-redfish"
        async with aiohttp.ClientSession(headers=_basic(machine.username, machine.password)) as http:
            async def power_state() -> str:
                async with http.get(base) as resp:
                    assert resp.status == 200
                    return (await resp.json())["PowerState"]

            async def reset(kind: str) -> int:
                async with http.post(f"{base}/Actions/ComputerSystem.Reset", json={"ResetType": kind}) as resp:
                    return resp.status

            assert await power_state() == "Off"
            assert await reset("On") == 204
            assert machine.vm.is_running()
            assert await power_state() == "On"
            assert await reset("ForceOff") == 204
            assert not machine.vm.is_running()
            assert await power_state() == "Off"

            # GracefulShutdown: the guest powers itself off over SSH once it is up
            assert await reset("On") == 204
            assert await asyncio.to_thread(machine.vm.wait_for_marker, vms.boot_timeout)
            assert await reset("GracefulShutdown") == 204
            assert await poll(lambda: not machine.vm.is_running(), 15), "the guest ignored GracefulShutdown"

        async with aiohttp.ClientSession(headers=_basic(machine.username, "wrong")) as bad:
            async with bad.post(f"{base}/Actions/ComputerSystem.Reset", json={"ResetType": "On"}) as resp:
                assert resp.status == 401
        assert not machine.vm.is_running()
    finally:
        await service.close()
