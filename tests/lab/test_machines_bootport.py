"""Each lab machine answers on its boot check port (the slot's spec.bootCheck) exactly while its OS is up."""
from __future__ import annotations

import asyncio
import socket

import pytest

from homecluster_lab.machines.boot import Faults
from homecluster_lab.machines.fleet import Fleet, MachineSpec

from support.waits import poll

pytestmark = pytest.mark.lab


def answers(check: dict) -> bool:
    """A TCP connection to host:port is accepted (what the startup playbook's wait_for asks)."""
    try:
        with socket.create_connection((check["host"], check["port"]), timeout=1):
            return True
    except OSError:
        return False


async def probe(check: dict) -> bool:
    return await asyncio.to_thread(answers, check)


@pytest.mark.parametrize("method", ["ipmi", "redfish", "wol"])
async def test_the_port_opens_when_the_os_is_up_and_closes_when_off(method):
    async with Fleet() as fleet:
        endpoints = await fleet.add(MachineSpec("m", method, boot_seconds=1.5))
        check = endpoints.boot_check
        if method == "wol":
            assert check == {"host": endpoints.ssh["host"], "port": endpoints.ssh["port"]}  # its real sshd
        machine = fleet.machines["m"]
        assert not await probe(check)  # off
        machine.power_on(source="test")
        assert machine.power_state() == "on" and not await probe(check)  # on, still booting
        assert await poll(lambda: machine.view().os_up, timeout=10)
        assert await poll(lambda: answers(check), timeout=10)
        machine.power_off(source="test")
        assert await poll(lambda: not answers(check), timeout=10)


async def test_a_machine_that_never_boots_never_answers():
    async with Fleet() as fleet:
        endpoints = await fleet.add(MachineSpec("m", "ipmi", boot_seconds=0.2, faults=Faults(never_boots=True)))
        fleet.machines["m"].power_on(source="test")
        await asyncio.sleep(1.0)
        assert not await probe(endpoints.boot_check)


async def test_a_machine_that_boots_but_never_registers_answers_once_its_os_is_up():
    """The fault is the kubelet's: the OS is up (what the startup Job's boot wait asks), the Node never comes.
    The port opened only when some other change of the machine woke its gate, so a startup Job's boot wait
    ran to its budget and the claim failed StartupJobFailed after minutes instead of RegistrationTimedOut."""
    async with Fleet() as fleet:
        endpoints = await fleet.add(MachineSpec("m", "ipmi", boot_seconds=0.5,
                                                faults=Faults(boots_but_never_registers=True)))
        machine = fleet.machines["m"]
        machine.power_on(source="test")
        assert await poll(lambda: machine.view().os_up, timeout=10)
        assert await poll(lambda: answers(endpoints.boot_check), timeout=10)
        assert machine.view().ready is None  # and still no Node


def taken(port: int) -> bool:
    """Another process's bind of the port fails -- plain, and with SO_REUSEADDR as asyncio's servers bind."""
    for reuse in (False, True):
        with socket.socket() as other:
            if reuse:
                other.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            try:
                other.bind(("127.0.0.1", port))
            except OSError:
                continue
            return False
    return True


@pytest.mark.parametrize("method", ["ipmi", "wol"])
async def test_the_port_stays_the_machines_while_it_is_off(method):
    """Issue 28: a port picked, let go and bound at boot was taken meanwhile (EADDRINUSE, retried forever)."""
    async with Fleet() as fleet:
        endpoints = await fleet.add(MachineSpec("m", method, boot_seconds=0.2))
        check, machine = endpoints.boot_check, fleet.machines["m"]
        assert taken(check["port"]) and not await probe(check)  # off: refused, and nobody else can bind it
        machine.power_on(source="test")
        assert await poll(lambda: answers(check), timeout=10)
        machine.power_off(source="test")
        assert await poll(lambda: not answers(check), timeout=10)
        assert taken(check["port"])
        machine.power_on(source="test")
        assert await poll(lambda: answers(check), timeout=10)  # the same port again
