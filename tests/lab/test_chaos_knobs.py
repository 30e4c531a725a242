"""Fault knobs the fault campaign (tests/chaos) added: a BMC that accepts power commands and does nothing, a
BMC whose power readback lies (through real Redfish, read with curl), and a 429 with Retry-After from the
lab API server."""
from __future__ import annotations

import asyncio
import json
import shutil
import subprocess

import aiohttp
import pytest

from homecluster_lab.faultknobs import describe, parse
from homecluster_lab.machines.machine import Credentials, Identity, SimMachine
from homecluster_lab.machines.redfish import RedfishService

pytestmark = [pytest.mark.lab]


def machine(name: str = "m-1") -> SimMachine:
    return SimMachine(Identity(name, name, "52:54:00:00:00:30", name, f"k3s://{name}"),
                      credentials=Credentials("admin", "s3cret"))


def test_ignored_power_commands_are_accepted_logged_and_do_nothing():
    m = machine()
    m.set_faults(ignores_power_commands=True)
    assert m.power_on(source="ipmi") is True and m.power_state() == "off"
    assert [(e.action, e.source) for e in m.events] == [("noop-on", "ipmi")]
    m.power_on(source="lab")  # the power button still works
    assert m.power_state() == "on"
    assert m.power_off(source="redfish") is True and m.power_state() == "on"
    m.set_faults(ignores_power_commands=False)
    m.power_off(source="redfish")
    assert m.power_state() == "off"


def test_the_annotation_names_the_new_knobs():
    faults = parse("worker-01", "ignores-power-commands,power-readback-lies")
    assert faults.ignores_power_commands and faults.power_readback_lies
    assert describe(faults) == "ignores-power-commands,power-readback-lies"


@pytest.mark.skipif(shutil.which("curl") is None, reason="needs curl")
async def test_a_lying_redfish_readback():
    svc = RedfishService()
    try:
        m = machine("rf-lies")
        port = await svc.add(m)
        url = f"http://127.0.0.1:{port}/redfish/v1/Systems/rf-lies"

        def read() -> str:
            out = subprocess.run(["curl", "-s", "-u", "admin:s3cret", url], capture_output=True, text=True,
                                 timeout=30).stdout
            return json.loads(out)["PowerState"]
        assert await asyncio.to_thread(read) == "Off"
        m.set_faults(power_readback_lies=True)
        assert await asyncio.to_thread(read) == "On" and m.power_state() == "off"
    finally:
        await svc.close()


async def test_a_429_fault_says_when_to_retry(lab_api):
    lab_api.faults.fail_next("configmaps", count=1, code=429)
    body = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}}
    async with aiohttp.ClientSession() as session:
        url = f"{lab_api.url}/api/v1/namespaces/default/configmaps"
        async with session.post(url, json=body) as resp:
            assert resp.status == 429 and resp.headers.get("Retry-After") == "1"
            status = await resp.json()
            assert status["reason"] == "TooManyRequests" and status["details"]["retryAfterSeconds"] == 1
        async with session.post(url, json=body) as resp:
            assert resp.status == 201


async def test_a_fault_for_one_client_leaves_the_others_alone(lab_api):
    lab_api.faults.fail_next("configmaps", count=1, code=500, agent="homecluster-operator")
    url = f"{lab_api.url}/api/v1/namespaces/default/configmaps"
    async with aiohttp.ClientSession() as session:
        for name, agent, status in (("a", "kubectl/v1.35", 201), ("b", "homecluster-operator/1", 500),
                                    ("b", "homecluster-operator/1", 201)):
            body = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}}
            async with session.post(url, json=body, headers={"User-Agent": agent}) as resp:
                assert resp.status == status, (name, agent)
