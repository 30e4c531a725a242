"""shutdown.fire's contract, read from what reaches the API server: the shutdown Job it creates (the machine it
drains, forced or graceful, the group, the Nodes its pod keeps off), when the pass asks to look again, a left-over
Job of our own under the name it needs (deleted, never adopted), and the ForeignJob Event on a claim.
"""
from __future__ import annotations

import json

import pytest

from homecluster import names
from homecluster.lifecycle.slotpass import run_pass
from homecluster.model.timestamps import parse_time

pytestmark = pytest.mark.lab
CLAIMS = "nodeclaims.infra.homecluster.dev"
SLOTS = "nodes.infra.homecluster.dev"
NS = "homecluster-system"


def job(env, name: str) -> dict:
    found = env.get("jobs.batch", name, NS)
    assert found is not None, f"no Job {name}"
    return found


def job_vars(found: dict) -> dict:
    return json.loads(found["spec"]["template"]["metadata"]["annotations"]["infra.homecluster.dev/job-vars"])


def avoided(found: dict) -> list[str]:
    affinity = found["spec"]["template"]["spec"]["affinity"]["nodeAffinity"]
    [term] = affinity["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"]
    return [f["values"][0] for f in term["matchFields"]]


async def fire_reversal(env) -> None:
    """c1 ready on worker-01, then deleted: the reversal's pass fires c1-shutdown-1 (run by hand, no refill loop)."""
    await env.ready_claim()
    await env.lab.delete(CLAIMS, "c1")


async def test_the_reversals_job_drains_the_slots_node_and_keeps_off_every_slots_machine(pool):
    env = pool
    # worker-02's machine registered under another name (found by providerID); worker-03 declares a control-plane
    # Node, which the Jobs may still use (the boundary never takes it as a slot's machine)
    await env.slot("worker-02")
    await env.lab.create({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "box-7"},
                          "spec": {"providerID": "homecluster://worker-02"}})
    await env.lab.create({"apiVersion": "infra.homecluster.dev/v2alpha1", "kind": "Node",
                          "metadata": {"name": "worker-03"},
                          "spec": {"groupRef": "workers", "nodeName": "cp-1", "power": {"method": "ipmi", "ipmi": {
                              "address": "127.0.0.1", "port": 6231, "credentialsSecretRef": {"name": "w3-bmc"}}}}})
    await env.lab.create({"apiVersion": "v1", "kind": "Node",
                          "metadata": {"name": "cp-1", "labels": {"node-role.kubernetes.io/control-plane": ""}}})
    await fire_reversal(env)
    await env.step()
    fired = job(env, "c1-shutdown-1")
    said = job_vars(fired)
    assert (said["force"], said["node_name"], said["group"], said["attempt"]) == (False, "worker-01", "workers", 1)
    assert fired["spec"]["template"]["metadata"]["labels"][names.LABEL_GROUP] == "workers"
    assert avoided(fired) == ["worker-01", "box-7", "worker-02"]
    status = env.claim_status()
    assert (status["shutdownAttempts"], status["shutdownJob"]) == (1, "c1-shutdown-1")


async def test_a_never_joined_claims_job_is_forced(pool):
    env = pool
    await env.claim()
    await env.step()
    await env.lab.delete(CLAIMS, "c1")
    await env.step()
    said = job_vars(job(env, "c1-shutdown-1"))
    assert (said["force"], said["attempt"]) == (True, 1)
    assert env.claim_status()["shutdownJob"] == "c1-shutdown-1"


async def test_the_pass_that_fires_looks_again_one_poll_later(pool):
    env = pool
    await fire_reversal(env)
    await env.refill()
    result = await run_pass(env.ctx, "worker-01")
    assert job(env, "c1-shutdown-1")
    assert result.wake == env.clock.now + env.ctx.settings.job_poll_interval


async def test_a_held_off_reversal_looks_again_when_the_hold_ends(pool):
    env = pool
    await fire_reversal(env)
    await env.step()
    limit = env.ctx.settings.shutdown_attempt_limit
    for n in range(1, limit):
        await env.job_done(f"c1-shutdown-{n}", "failed")
        env.clock.advance(seconds=6)
        await env.step()
    ended = env.clock.advance(seconds=10)
    await env.job_done(f"c1-shutdown-{limit}", "failed", at=ended)
    env.clock.advance(seconds=6)
    await env.refill()
    result = await run_pass(env.ctx, "worker-01")  # the hold is measured from the end of the last Job
    until = ended + env.ctx.settings.shutdown_holdoff
    assert parse_time(env.claim_status()["shutdownHeldUntil"]) == until
    assert result.wake == until
    await env.refill()
    again = await run_pass(env.ctx, "worker-01")  # held: nothing fired, and the wake is the hold's end
    assert not again.wrote and again.wake == until
    assert env.get("jobs.batch", f"c1-shutdown-{limit + 1}", NS) is None
    assert not [e for e in env.lab.audit.writes() if e.code == 409], "a write was refused for a stale copy"


async def test_a_finished_job_of_our_own_under_the_needed_name_is_deleted_not_adopted(pool):
    env = pool
    await env.node()  # on, and no claim wants it: worker-01-unwanted-1
    await env.step()
    first = job(env, "worker-01-unwanted-1")["metadata"]["uid"]
    await env.job_done("worker-01-unwanted-1")
    await env.node(ready=False)  # it landed: the slot's count is settled back to 0
    env.clock.advance(seconds=6)
    await env.step()
    assert not env.slot_status()["shutdown"].get("attempts")
    await env.node(ready=True)  # on again, unwanted: the next episode needs worker-01-unwanted-1 again
    env.clock.advance(seconds=6)
    await env.step(times=3)
    again = job(env, "worker-01-unwanted-1")
    assert again["metadata"]["uid"] != first, "the finished Job of the last episode was adopted as this one's"
    assert not again.get("status", {}).get("conditions"), "the new shutdown Job is running"
    assert env.slot_status()["shutdown"]["attempts"] == 1


async def test_a_foreign_job_on_a_failed_boots_shutdown_is_a_warning_on_the_claim(pool):
    env = pool
    await env.lab.create({"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "c1-shutdown-1", "namespace": NS},
                          "spec": {"template": {"spec": {"restartPolicy": "Never",
                                                         "containers": [{"name": "x", "image": "evil:1"}]}}}})
    await env.claim()
    await env.step()
    await env.job_done("c1-startup", "failed")
    await env.step()
    [said] = [e for e in env.lab.list("events", "default")
              if e["involvedObject"]["name"] == "c1" and e["reason"] == "ForeignJob"]
    assert said["type"] == "Warning"
    assert said["message"].startswith('NodeClaim "c1" on slot "worker-01", attempt 1: Job homecluster-system/'
                                      'c1-shutdown-1 already exists and belongs to ')


async def test_an_unwanted_machines_job_is_graceful(pool):
    env = pool
    await env.node()  # on, and no claim wants it
    await env.step()
    said = job_vars(job(env, "worker-01-unwanted-1"))
    assert (said["force"], said["node_name"], said["claim"]) == (False, "worker-01", None)


async def test_a_claim_waiting_for_a_job_then_for_its_pod_is_told_each_time(pool):
    # an unwanted machine's shutdown Job runs when c1 comes: c1 waits for it; then a person deletes that Job
    # while its pod is still being killed: c1 waits for the pod. Two waits, two Events (one per thing waited for).
    import asyncio
    env = pool
    await env.node()
    await env.step()
    [fired] = env.jobs()
    await env.claim()
    await env.step()
    name = fired["metadata"]["name"]
    pod = f"{name}-x7k2p"
    labels = {**fired["spec"]["template"]["metadata"]["labels"], "job-name": name}
    await env.lab.create({"apiVersion": "v1", "kind": "Pod",
                          "metadata": {"name": pod, "namespace": NS, "labels": labels},
                          "spec": {"restartPolicy": "Never", "containers": [{"name": "runner", "image": "runner:test"}]}})
    await env.lab.patch("pods", pod, {"status": {"phase": "Running"}}, namespace=NS, subresource="status")
    await env.lab.delete("jobs.batch", name, namespace=NS, propagation="Orphan")
    for _ in range(200):  # the lab's collector frees the pod from the Job, then the Job leaves the store
        if env.lab.get("jobs.batch", name, NS) is None:
            break
        await asyncio.sleep(0.05)
    await env.step()
    waits = [e["message"] for e in env.lab.list("events", "default")
             if e["involvedObject"]["name"] == "c1" and e["reason"] == "WaitingForShutdown"]
    assert len(waits) == 2 and name in waits[0] + waits[1] and pod in waits[0] + waits[1], waits
    assert env.claim_status()["phase"] == "pending"
