"""lifecycle.slotstatus through real passes against the lab API server: what the slot's status says (its
NodeAccepted condition beside the conditions others keep there, nodeName, lastClaim, the shutdown counter),
the words a person reads, and when a pass writes nothing to the slot at all.
"""
from __future__ import annotations

from datetime import timedelta

import pytest

from homecluster.model.boundary import NodeSelector
from homecluster.model.timestamps import format_time

pytestmark = pytest.mark.lab

SLOTS = "nodes.infra.homecluster.dev"
MAINTENANCE = {"type": "Maintenance", "status": "True", "reason": "Planned", "message": "new disk on Friday",
               "lastTransitionTime": "2026-01-01T00:00:00Z"}


def slot_status_writes(env, slot: str = "worker-01") -> list:
    return [e for e in env.writes() if e.resource == "nodes" and e.group == "infra.homecluster.dev"
            and e.subresource == "status" and e.name == slot]


def not_managed(selector: str) -> str:
    return (f'slot "worker-01": Node "worker-01" does not match the operator\'s --managed-node-selector '
            f"'{selector}': label the machine (k3s --node-label) or fix the slot's spec.providerID and spec.nodeName")


async def up_unlabelled_node(env) -> None:
    await env.lab.create({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "worker-01"},
                          "spec": {"providerID": "homecluster://worker-01"}})
    stamp = format_time(env.clock.now)
    await env.lab.patch("nodes", "worker-01", {"status": {"conditions": [{
        "type": "Ready", "status": "True", "reason": "KubeletReady", "lastTransitionTime": stamp,
        "lastHeartbeatTime": stamp}]}}, subresource="status")


async def test_node_accepted_is_written_once_beside_others_conditions_and_dropped_once_accepted(pool):
    env = pool
    env.ctx.store.managed_node_selector = NodeSelector.parse("pool=workers")
    await env.lab.patch(SLOTS, "worker-01", {"status": {"conditions": [MAINTENANCE]}}, subresource="status")
    await up_unlabelled_node(env)
    refused_at = format_time(env.clock.now)
    await env.step(times=3)
    assert env.slot_status()["conditions"] == [MAINTENANCE, {
        "type": "NodeAccepted", "status": "False", "reason": "NodeNotManaged", "message": not_managed("pool=workers"),
        "lastTransitionTime": refused_at}]
    assert env.slot_status()["powerState"] == "off" and env.jobs() == []

    before = len(slot_status_writes(env))
    env.clock.advance(minutes=1)
    await env.step(times=3)
    assert len(slot_status_writes(env)) == before, "the same refusal was written again"

    env.ctx.store.managed_node_selector = NodeSelector.parse("pool=lab")  # another refusal: new words, new time
    env.clock.advance(minutes=1)
    await env.step(times=3)
    [_, accepted] = env.slot_status()["conditions"]
    assert (accepted["reason"], accepted["message"]) == ("NodeNotManaged", not_managed("pool=lab"))
    assert accepted["lastTransitionTime"] == format_time(env.clock.now)
    assert len(slot_status_writes(env)) == before + 1

    await env.lab.patch("nodes", "worker-01", {"metadata": {"labels": {"pool": "lab"}}})
    await env.step(times=3)
    assert env.slot_status()["conditions"] == [MAINTENANCE]  # ours gone, the other writer's kept
    assert env.slot_status()["powerState"] == "on"
    written = len(slot_status_writes(env))
    env.clock.advance(minutes=1)
    await env.step(times=3)
    assert len(slot_status_writes(env)) == written, "an accepted slot without the condition was written again"


async def test_a_joining_nodes_name_is_written_with_its_power_change_not_alone(pool):
    env = pool
    await env.claim()
    await env.step()
    await env.job_done("c1-startup")
    await env.step()
    assert env.claim_status()["phase"] == "booting"
    before = len(slot_status_writes(env))
    await env.node(ready=False)  # registered, not Ready yet: only nodeName would change
    await env.step()
    assert "nodeName" not in env.slot_status() and len(slot_status_writes(env)) == before
    await env.node(ready=True)
    await env.step()
    status = env.slot_status()
    assert (status["powerState"], status["nodeName"]) == ("on", "worker-01")


async def test_the_slots_shutdown_counter_is_reset_once_the_machine_is_observed_off(pool):
    env = pool
    held = format_time(env.clock.now.replace(year=2030))
    await env.lab.patch(SLOTS, "worker-01", {"status": {"shutdown": {"attempts": 2, "heldUntil": held}}},
                        subresource="status")
    await env.step()
    assert env.slot_status()["shutdown"] == {"attempts": 0}  # the hold is removed (null in the merge patch)
    before = len(slot_status_writes(env))
    await env.step()
    assert len(slot_status_writes(env)) == before  # a counter at zero is not written again


async def test_a_counter_reset_does_not_carry_a_joining_nodes_name_along(pool):
    env = pool
    await env.step()  # observed off
    await env.lab.patch(SLOTS, "worker-01", {"status": {"shutdown": {"attempts": 2}}}, subresource="status")
    # registered, not Ready, silent for longer than the grace (off for good: model.liveness): still off, only
    # nodeName would change
    await env.node(ready=False, at=env.clock.now - timedelta(minutes=1))
    await env.step()
    status = env.slot_status()
    assert status["shutdown"] == {"attempts": 0} and "nodeName" not in status, status


async def test_the_slots_shutdown_counter_is_reset_when_a_claim_takes_the_machine(pool):
    env = pool
    await env.node()  # on, with no claim: an unwanted machine, counted on the slot
    await env.lab.patch(SLOTS, "worker-01", {"status": {"powerState": "on", "shutdown": {"attempts": 1}}},
                        subresource="status")
    await env.claim()
    await env.step(times=4)
    assert env.claim_status()["phase"] in ("booting", "ready")
    assert env.slot_status()["shutdown"] == {"attempts": 0}


async def test_last_claim_of_a_failed_attempt_is_written_once(pool):
    env = pool
    await env.claim()
    await env.step()
    await env.job_done("c1-startup", "failed")
    await env.step(times=4)
    last = env.slot_status()["lastClaim"]
    assert (last["name"], last["phase"], last["attempt"]) == ("c1", "failed", 1), last
    assert last["reason"] == "StartupJobFailed", last
    before = len(slot_status_writes(env))
    await env.step(times=2)
    assert len(slot_status_writes(env)) == before


async def test_a_pass_over_a_slot_that_does_not_exist_writes_nothing(env):
    await env.group()
    result = await env.step("worker-09")
    assert result.wrote is False and result.wake is None
    assert env.writes() == []
