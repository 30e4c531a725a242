"""A half-open watch stream is replaced, so the operator's cache does not freeze (issue 15, item 6).

The real operator (`homecluster.operator.main`, kopf and all) runs on a thread of its own against the
lab API server. The lab's stall_watches fault turns the open NodeClaim watch stream into a half-open
one: silent, never ended by the server, the connection left up. A claim created after that reaches
the operator only through a new stream: with --watch-client-timeout the operator drops the silent
stream and opens a new one within seconds. Without a client timeout only kopf's 70 s inactivity
timer would, long after this test's bound.
"""
from __future__ import annotations

import argparse
import asyncio
import threading

import pytest
from support import objects
from support.waits import until

from homecluster.operator import main as operator_main

pytestmark = pytest.mark.lab
NS = "homecluster-system"
CLAIMS = "nodeclaims.infra.homecluster.dev"


@pytest.fixture
async def operator(lab):
    parser = argparse.ArgumentParser()
    operator_main.add_arguments(parser)
    args = parser.parse_args([
        "--kubeconfig", str(lab.kubeconfig_path), "--namespace", NS, "--no-webhook", "--no-provider",
        "--watch-server-timeout", "2", "--watch-client-timeout", "3", "--watch-connect-timeout", "2"])
    stop = threading.Event()
    thread = threading.Thread(target=lambda: asyncio.run(operator_main.main(args, stop)), daemon=True)
    thread.start()
    yield thread
    stop.set()
    await asyncio.to_thread(thread.join, 15)


async def test_a_half_open_claim_watch_is_replaced_and_the_new_claim_seen(lab, operator):
    await lab.create(objects.group())
    await lab.create(objects.slot(power=objects.ipmi()))
    watches = lambda: lab.audit.select("nodeclaims", verbs=["watch"], user_agent="kopf")  # noqa: E731
    await until(lambda: watches(), "kopf watching NodeClaims", 30)
    lab.faults.stall_watches("nodeclaims")
    opened = len(watches())
    await lab.create(objects.claim("c1"))
    # seeded by the operator: it saw the claim, so a new stream replaced the silent one
    await until(lambda: ((lab.get(CLAIMS, "c1") or {}).get("status") or {}).get("attempt") == 1,
                "the operator seeding c1", 20)
    assert len(watches()) > opened
