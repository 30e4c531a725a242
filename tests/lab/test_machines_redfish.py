"""The lab's Redfish BMCs against independent clients: curl and the sushy library."""
from __future__ import annotations

import asyncio
import json
import shutil
import subprocess
import time

import pytest

from homecluster import tls
from homecluster_lab.machines.machine import Credentials, Identity, SimMachine
from homecluster_lab.machines.redfish import RedfishService, parse_basic_auth, reset_action

pytestmark = [pytest.mark.lab, pytest.mark.skipif(shutil.which("curl") is None, reason="needs curl")]


def make_machine(name: str = "rf-1") -> SimMachine:
    return SimMachine(Identity(name, name, "52:54:00:00:00:20", name, f"k3s://{name}"),
                      credentials=Credentials("admin", "s3cret"))


@pytest.fixture
async def service():
    svc = RedfishService()
    yield svc
    await svc.close()


async def curl(*args: str) -> tuple[int, str, int]:
    """(HTTP status, body, curl exit code)."""
    def run():
        return subprocess.run(["curl", "-s", "-w", "\n%{http_code}", *args], capture_output=True, text=True,
                              timeout=30)
    result = await asyncio.to_thread(run)
    body, _, status = result.stdout.rpartition("\n")
    return int(status or 0), body, result.returncode


async def test_curl_reads_power_and_resets(service):
    m = make_machine()
    port = await service.add(m)
    system = f"http://127.0.0.1:{port}/redfish/v1/Systems/rf-1"
    status, body, _ = await curl("-u", "admin:s3cret", system)
    assert status == 200 and json.loads(body)["PowerState"] == "Off"
    allowed = json.loads(body)["Actions"]["#ComputerSystem.Reset"]["ResetType@Redfish.AllowableValues"]
    assert set(allowed) == {"On", "ForceOff", "GracefulShutdown", "ForceRestart"}

    reset = f"{system}/Actions/ComputerSystem.Reset"
    status, _, _ = await curl("-u", "admin:s3cret", "-X", "POST", "-H", "Content-Type: application/json",
                              "-d", '{"ResetType": "On"}', reset)
    assert status == 204 and m.power_state() == "on"
    status, body, _ = await curl("-u", "admin:s3cret", system)
    assert json.loads(body)["PowerState"] == "On"
    status, _, _ = await curl("-u", "admin:s3cret", "-X", "POST", "-d", '{"ResetType": "ForceOff"}', reset)
    assert status == 204 and m.power_state() == "off"
    status, body, _ = await curl("-u", "admin:s3cret", "-X", "POST", "-d", '{"ResetType": "Nmi"}', reset)
    assert status == 400 and "ResetType" in body


async def test_bad_or_missing_credentials_get_401(service):
    m = make_machine()
    port = await service.add(m)
    system = f"http://127.0.0.1:{port}/redfish/v1/Systems/rf-1"
    assert (await curl("-u", "admin:wrong", system))[0] == 401
    assert (await curl(system))[0] == 401
    status, _, _ = await curl("-u", "admin:wrong", "-X", "POST", "-d", '{"ResetType": "On"}',
                              f"{system}/Actions/ComputerSystem.Reset")
    assert status == 401 and m.power_state() == "off"
    m.set_faults(wrong_credentials=True)
    assert (await curl("-u", "admin:s3cret", system))[0] == 401
    assert (await curl(f"http://127.0.0.1:{port}/redfish/v1"))[0] == 200  # the service root is public
    assert (await curl("-X", "POST", f"http://127.0.0.1:{port}/redfish/v1/SessionService/Sessions"))[0] == 404


async def test_unreachable_bmc_answers_nothing(service):
    m = make_machine()
    port = await service.add(m)
    m.set_faults(bmc_unreachable=True)
    status, _, exit_code = await curl("-m", "1", "-u", "admin:s3cret", f"http://127.0.0.1:{port}/redfish/v1/Systems")
    assert status == 0 and exit_code == 28  # curl: operation timed out
    m.set_faults(bmc_unreachable=False)
    assert (await curl("-u", "admin:s3cret", f"http://127.0.0.1:{port}/redfish/v1/Systems"))[0] == 200


async def test_sushy_powers_on_and_off_with_a_controlled_delay(service):
    import sushy

    m = make_machine()
    port = await service.add(m, power_delay_seconds=0.3)

    def drive() -> list[str]:
        seen = []
        root = sushy.Sushy(f"http://127.0.0.1:{port}/redfish/v1", username="admin", password="s3cret")
        system = root.get_system(root.get_system_collection().members_identities[0])
        seen.append(str(system.power_state.value))
        system.reset_system(sushy.RESET_ON)
        system.refresh()
        seen.append(str(system.power_state.value))  # not yet: the delay is 0.3 s
        time.sleep(0.6)
        system.refresh()
        seen.append(str(system.power_state.value))
        system.reset_system(sushy.RESET_GRACEFUL_SHUTDOWN)
        time.sleep(0.3 + m.timing.graceful_shutdown_seconds + 0.3)
        system.refresh()
        seen.append(str(system.power_state.value))
        try:
            sushy.Sushy(f"http://127.0.0.1:{port}/redfish/v1", username="admin", password="bad").get_system(
                "/redfish/v1/Systems/rf-1")
        except sushy.exceptions.AccessError:
            seen.append("rejected")
        return seen

    assert await asyncio.to_thread(drive) == ["Off", "Off", "On", "Off", "rejected"]


async def test_tls_endpoint_with_curl(service, tmp_path):
    ca = tls.make_ca()
    cert, key = tls.issue(ca, "bmc", ["127.0.0.1"]).write(tmp_path, "bmc")
    ca_path, _ = ca.write(tmp_path, "ca")
    import ssl
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(cert, key)
    m = make_machine()
    port = await service.add(m, ssl_context=context)
    status, body, _ = await curl("--cacert", str(ca_path), "-u", "admin:s3cret",
                                 f"https://127.0.0.1:{port}/redfish/v1/Systems/rf-1")
    assert status == 200 and json.loads(body)["Id"] == "rf-1"
    assert (await curl(f"http://127.0.0.1:{port}/redfish/v1"))[0] != 200  # plain HTTP is not served


async def test_many_bmcs_share_one_application_but_not_their_machines(service):
    machines = [make_machine(f"rf-{i}") for i in range(5)]
    ports = [await service.add(m) for m in machines]
    status, _, _ = await curl("-u", "admin:s3cret", "-X", "POST", "-d", '{"ResetType": "On"}',
                              f"http://127.0.0.1:{ports[3]}/redfish/v1/Systems/rf-3/Actions/ComputerSystem.Reset")
    assert status == 204
    assert [m.power_state() for m in machines] == ["off", "off", "off", "on", "off"]
    assert (await curl("-u", "admin:s3cret", f"http://127.0.0.1:{ports[0]}/redfish/v1/Systems/rf-3"))[0] == 404


def test_pure_helpers():
    assert parse_basic_auth("Basic YWRtaW46czNjcmV0") == ("admin", "s3cret")
    assert parse_basic_auth("Bearer x") is None and parse_basic_auth("Basic !!!") is None
    assert reset_action("GracefulShutdown") == "soft_off" and reset_action("Nmi") is None
