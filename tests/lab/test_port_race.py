"""Two labs and a busy test worker start side by side, round after round, and never take each other's ports.

Issue 28: the lab picked a free port, let it go and bound it later (a machine's boot-check port at each
boot), so another process could take it in between: `[Errno 98] address already in use`, retried forever.
Here two labs' listeners -- the in-memory API server, an IPMI, a Redfish and a Wake-on-LAN machine, their
boot-check and SSH ports -- start together while a worker does what a test worker and a third lab do to
ports: binds port 0, picks free ports and binds them at once (as the old labs did for their machines),
holding a thousand of them at a time, and opens connections. Every round, every machine of both labs must
answer on its boot-check port once its OS is up, and every port must be its own.
"""
from __future__ import annotations

import asyncio
import logging
import socket
import sys

import pytest

from homecluster_lab.apiserver.server import LabAPIServer
from homecluster_lab.machines.fleet import Fleet, MachineSpec

from support.waits import poll

pytestmark = pytest.mark.lab
ROUNDS = 50  # 100 until 2026-12-05: the worker burns a core for as long as the rounds last (52 s of CPU)
GRAB = 1000  # ports the worker holds at a time, picked as the old labs picked theirs


# A test worker's and a third lab's doing, in a process of its own, until its stdin closes; prints how many
# ports it took. Like the old labs, it picks ports for its programs and binds them at once, a thousand held
# at a time; like a test, it binds port 0 over TCP and UDP and opens connections (ephemeral ports).
WORKER = """
import select, socket, sys
from homecluster_lab.ports import program_port
taken = 0
while not select.select([sys.stdin], [], [], 0)[0]:
    held = []
    for _ in range(%d):
        sock = socket.socket()
        try:
            sock.bind(("127.0.0.1", program_port()))
        except OSError:
            sock.close()
            continue
        held.append(sock)
    for kind in (socket.SOCK_STREAM, socket.SOCK_DGRAM):
        sock = socket.socket(socket.AF_INET, kind)
        sock.bind(("127.0.0.1", 0))
        held.append(sock)
    try:
        socket.create_connection(("127.0.0.1", held[0].getsockname()[1]), timeout=1).close()
    except OSError:
        pass
    taken += len(held)
    for sock in held:
        sock.close()
print(taken)
""" % GRAB


def answers(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=1):
            return True
    except OSError:
        return False


async def one_lab(tmp_path, n: int, both_up: asyncio.Barrier) -> dict[str, list[int]]:
    """Start one lab's listeners, boot its machines, check each answers; its ports by protocol: IPMI and
    Wake-on-LAN listen on UDP, the rest on TCP. The lab stays open until the other has checked its own too
    (`both_up`): a port one lab let go may rightly be the other's next, so only ports held at the same time
    are compared."""
    async with LabAPIServer(workdir=tmp_path / f"api-{n}") as api, Fleet(workdir=tmp_path / f"fleet-{n}") as fleet:
        endpoints = [await fleet.add(MachineSpec(f"{method}-{n}", method, boot_seconds=0.05))
                     for method in ("ipmi", "redfish", "wol")]
        checks = [e.boot_check["port"] for e in endpoints]
        for machine in fleet.machines.values():
            machine.power_on(source="test")
        for port in checks:
            assert await poll(lambda port=port: answers(port), timeout=30), f"lab {n}: boot check {port} never answers"
        redfish = int(endpoints[1].redfish["endpoint"].rsplit(":", 1)[1].split("/")[0])
        await asyncio.wait_for(both_up.wait(), 60)
        return {"tcp": [api.port, redfish, *checks], "udp": [endpoints[0].ipmi["port"], endpoints[2].wol["port"]]}


async def test_two_labs_and_a_busy_worker_start_side_by_side_without_a_collision(tmp_path, caplog):
    caplog.set_level(logging.WARNING, logger="homecluster_lab")
    worker = await asyncio.create_subprocess_exec(sys.executable, "-c", WORKER, stdin=asyncio.subprocess.PIPE,
                                                  stdout=asyncio.subprocess.PIPE)
    try:
        for round_ in range(ROUNDS):
            both_up = asyncio.Barrier(2)
            first, second = await asyncio.gather(one_lab(tmp_path / f"r{round_}", 1, both_up),
                                                 one_lab(tmp_path / f"r{round_}", 2, both_up))
            # a UDP and a TCP port of the same number are two listeners, not a collision
            for kind in ("tcp", "udp"):
                ports = first[kind] + second[kind]
                assert len(set(ports)) == len(ports), \
                    f"round {round_}: two {kind} listeners on one port: {first} {second}"
    finally:
        out, _ = await worker.communicate(b"stop\n")
    assert worker.returncode == 0 and int(out) > GRAB, out  # the worker did compete for ports meanwhile
    # a port taken between the pick and the bind is logged (and retried) by the machine's listener
    collisions = [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR]
    assert not collisions, collisions[:3]
