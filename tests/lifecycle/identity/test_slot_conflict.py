"""One machine, one slot (issue 23 item 1, model.identity): two slots that find the same corev1 Node, through
real passes against the lab API server.

Slot A ("worker-01") declares nothing and finds the Node `worker-01` by name; the Node carries the providerID
`k3s://worker-01`. Slot B, written later, declares `providerID: k3s://worker-01` and finds the same Node by
providerID. Their declarations share nothing, so the declaration check (model.boundary) let B through: with A's
claim ready, B read the machine as on and unwanted and fired `B-shutdown-1`, whose init container cordons and
drains worker-01. Now the first slot to find a Node keeps it; B is refused (NodeAccepted=False, reason
Conflict), Events on both slots say so, and B fires no Job of any kind.
"""
from __future__ import annotations

import asyncio
import hashlib
import logging
from datetime import datetime, timezone

import pytest

from homecluster.model.boundary import NodeSelector
from homecluster.model.timestamps import format_time

pytestmark = pytest.mark.lab

SLOTS = "nodes.infra.homecluster.dev"
POOL_LABEL = {"homecluster.dev/pool": "workers"}
LATER = "b-later"  # sorts before "worker-01" by name: only the creation time can make it the second slot


async def machine_up(env, labels: dict | None = None) -> None:
    """Play the kubelet of worker-01: a Ready Node carrying k3s's providerID (not the slot's default)."""
    await env.lab.create({"apiVersion": "v1", "kind": "Node",
                          "metadata": {"name": "worker-01", "labels": labels or {}},
                          "spec": {"providerID": "k3s://worker-01"}})
    stamp = format_time(env.clock.now)
    await env.lab.patch("nodes", "worker-01", {"status": {"conditions": [{
        "type": "Ready", "status": "True", "reason": "KubeletReady", "lastTransitionTime": stamp,
        "lastHeartbeatTime": stamp}]}}, subresource="status")


async def a_later_second(env, name: str) -> None:
    """Wait until the API server's clock (second precision) has left the second `name` was created in."""
    created = env.get(SLOTS, name)["metadata"]["creationTimestamp"]
    async with asyncio.timeout(5):
        while format_time(datetime.now(timezone.utc)) <= created:
            await asyncio.sleep(0.02)


async def later_slot(env) -> None:
    """Slot B, created in a later second than A (worker-01), declaring the providerID worker-01's Node carries."""
    await a_later_second(env, "worker-01")
    await env.slot(LATER)
    await env.lab.patch(SLOTS, LATER, {"spec": {"providerID": "k3s://worker-01"}})


def accepted(env, slot: str) -> dict | None:
    return next((c for c in env.slot_status(slot).get("conditions") or [] if c["type"] == "NodeAccepted"), None)


def jobs_of(env, slot: str) -> list[str]:
    return [j["metadata"]["name"] for j in env.jobs()
            if j["metadata"]["labels"].get("infra.homecluster.dev/slot") == slot]


def events_of(env, slot: str) -> list[dict]:
    return [e for e in env.lab.list("events", "default")
            if e["involvedObject"]["name"] == slot and e["reason"] == "NodeConflict"]


@pytest.mark.parametrize("selector", [None, "homecluster.dev/pool=workers"])
async def test_a_later_slot_resolving_to_a_claimed_node_is_refused_and_fires_nothing(env, selector):
    if selector:  # the Node carries the pool label, so the selector lets both slots through: it is no defence
        env.ctx.store.managed_node_selector = NodeSelector.parse(selector)
    await machine_up(env, POOL_LABEL)
    await env.group()
    await env.slot("worker-01")  # A: declares nothing, finds worker-01 by its name
    await env.claim("c1", "worker-01")
    await env.step("worker-01", times=3)
    await env.job_done("c1-startup")
    await env.step("worker-01", times=3)
    assert env.claim_status("c1")["phase"] == "ready"
    await later_slot(env)
    for name in (LATER, "worker-01", LATER):
        await env.step(name, times=4)

    assert jobs_of(env, LATER) == []  # before the fix: ['b-later-shutdown-1'], draining worker-01
    condition = accepted(env, LATER)
    assert condition["status"] == "False" and condition["reason"] == "Conflict", env.slot_status(LATER)
    assert '"worker-01"' in condition["message"] and "k3s://worker-01" in condition["message"]
    assert env.slot_status(LATER)["powerState"] == "off" and "nodeName" not in env.slot_status(LATER)
    # A keeps its machine: accepted, observed on, its claim ready, the Node neither cordoned nor drained
    assert accepted(env, "worker-01") is None and env.slot_status("worker-01")["powerState"] == "on"
    assert env.claim_status("c1")["phase"] == "ready" and jobs_of(env, "worker-01") == ["c1-startup"]
    assert not env.get("nodes", "worker-01")["spec"].get("unschedulable")
    # one Warning Event on each slot, naming the other
    [on_b], [on_a] = events_of(env, LATER), events_of(env, "worker-01")
    assert on_b["type"] == on_a["type"] == "Warning"
    assert on_b["message"] == (
        f'slot "{LATER}": Node "worker-01" (found by this slot\'s spec.providerID "k3s://worker-01") is already the '
        'machine of slot "worker-01", created first (found by its spec.nodeName "worker-01"); two slots may not share '
        "a machine, so this slot observes nothing and fires no Job: fix this slot's spec.providerID and spec.nodeName "
        "(or delete one of the two)"), on_b
    assert on_a["message"] == (
        f'slot "worker-01": slot "{LATER}" (created later; spec.providerID "k3s://worker-01", spec.nodeName '
        f'"{LATER}") also finds this slot\'s Node "worker-01"; this slot keeps it, and "{LATER}" observes nothing and '
        "fires no Job until one of the two is fixed"), on_a
    assert on_b["involvedObject"]["kind"] == on_a["involvedObject"]["kind"] == "Node"

    # a claim on B waits pending: nothing is powered on for a slot whose machine is another's
    await env.claim("c2", LATER)
    await env.step(LATER, times=4)
    assert env.claim_status("c2").get("phase", "pending") == "pending" and jobs_of(env, LATER) == []
    assert len(events_of(env, LATER)) == 1 and len(events_of(env, "worker-01")) == 1  # said once


async def test_the_first_slot_keeps_its_node_when_the_later_one_was_there_before_the_node(env):
    # B's author wrote it while the machine was off (no Node yet): when the machine registers, it still is A's
    await env.group()
    await env.slot("worker-01")
    await later_slot(env)
    await env.step(LATER, times=3)
    assert accepted(env, LATER) is None  # nothing to conflict over yet
    await machine_up(env)
    await env.step(LATER, times=4)
    await env.step("worker-01", times=4)
    assert accepted(env, LATER)["reason"] == "Conflict" and jobs_of(env, LATER) == []
    assert env.slot_status("worker-01")["powerState"] == "on"
    assert [j for j in jobs_of(env, "worker-01") if "-unwanted-" in j]  # A's own unwanted machine: A shuts it down


async def test_deleting_the_first_slot_hands_the_node_to_the_second(env):
    await machine_up(env)
    await env.group()
    await env.slot("worker-01")
    await later_slot(env)
    await env.step(LATER, times=4)
    assert accepted(env, LATER)["reason"] == "Conflict"
    await env.lab.delete(SLOTS, "worker-01")
    await env.step(LATER, times=4)
    assert accepted(env, LATER) is None and env.slot_status(LATER)["powerState"] == "on"


async def test_the_conflict_is_logged_once_and_each_event_is_named_after_the_other_slot(env, logged):
    # the Event names derive from the node and the OTHER slot's uid: a conflict with a re-created slot is news,
    # the same conflict seen again is not
    await machine_up(env)
    await env.group()
    await env.slot("worker-01")
    await later_slot(env)
    with logged(env.ctx.log, logging.WARNING) as records:
        await env.step(LATER, times=4)
        await env.step(LATER, times=2)
    keeper, refused = env.get(SLOTS, "worker-01"), env.get(SLOTS, LATER)
    assert [r.getMessage() for r in records] == [accepted(env, LATER)["message"]]

    def name(slot: dict, other: dict) -> str:
        digest = hashlib.sha256(f'{slot["metadata"]["uid"]}/conflict/worker-01/{other["metadata"]["uid"]}/NodeConflict'
                                .encode()).hexdigest()[:10]
        return f'{slot["metadata"]["name"]}.{digest}'

    assert [e["metadata"]["name"] for e in events_of(env, LATER)] == [name(refused, keeper)]
    assert [e["metadata"]["name"] for e in events_of(env, "worker-01")] == [name(keeper, refused)]
