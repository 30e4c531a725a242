"""lifecycle.launch against the lab API server: the words of each refusal, and what a landed launch writes.

A pending claim that cannot launch fails before anything is bought, with a message that names what is
missing and the fix; the claim's condition carries the same words. The tests play the clock and the
slot's history (status.lastClaim).
"""
from __future__ import annotations

from datetime import timedelta

import pytest

from homecluster.model.timestamps import format_time

pytestmark = pytest.mark.lab
CLAIMS = "nodeclaims.infra.homecluster.dev"
SLOTS = "nodes.infra.homecluster.dev"


def failed(env, name: str = "c1") -> tuple[str, str]:
    status = env.claim_status(name)
    assert status["phase"] == "failed", status
    [cond] = [c for c in status["conditions"] if c.get("reason") == status["reason"]]
    assert cond["message"] == status["message"], status
    return status["reason"], status["message"]


async def test_a_claim_on_a_slot_that_does_not_exist_names_the_slot_and_the_fix(env):
    await env.claim(slot="worker-09")
    await env.step("worker-09")
    assert failed(env) == ("SlotNotFound", 'slot "worker-09" (spec.slotRef) does not exist; create the Node '
                                           '"worker-09" or delete this claim')
    assert env.jobs() == []


async def test_a_slot_whose_group_does_not_exist_names_the_group_and_the_fix(env):
    await env.slot(group="nogroup")
    await env.claim()
    await env.step()
    assert failed(env) == ("GroupNotFound", 'slot "worker-01" names the Group "nogroup" (spec.groupRef), which does '
                                            'not exist; create it or fix the slot')
    assert env.jobs() == []


async def test_a_claim_past_the_attempt_bound_says_its_attempt_the_bound_and_the_fix(pool):
    env = pool
    await env.lab.patch(SLOTS, "worker-01", {"status": {"lastClaim": {
        "name": "c0", "attempt": 3, "phase": "failed", "reason": "StartupJobFailed", "reachedReady": False,
        "finishedAt": format_time(env.clock.now - timedelta(minutes=5))}}}, subresource="status")
    await env.claim()
    await env.step()
    assert env.claim_status()["attempt"] == 4
    assert failed(env) == ("AttemptLimitExceeded", (
        'attempt 4 is past the bound of 3 failed boots in a row on slot "worker-01"; nothing was started. Fix the '
        "machine, then the next claim starts at attempt 1 once a boot lands (or delete the slot's status.lastClaim)"))
    assert env.jobs() == []


async def test_a_claim_whose_deadline_passed_while_pending_names_its_deadline(pool):
    env = pool
    await env.claim(deadline=timedelta(seconds=-1))
    await env.step()
    deadline = env.get(CLAIMS, "c1")["spec"]["deadlineAt"]
    assert failed(env) == ("DeadlineExceeded", f"spec.deadlineAt {deadline} passed before a boot started")
    assert env.jobs() == []


def launches(env, group: str = "workers") -> tuple[float, float]:
    """(count, sum) of homecluster_launch_attempt for `group`: one sample per boot started, valued its attempt."""
    reg = env.ctx.metrics.registry
    return (reg.get_sample_value("homecluster_launch_attempt_count", {"group": group}) or 0.0,
            reg.get_sample_value("homecluster_launch_attempt_sum", {"group": group}) or 0.0)


async def test_a_landed_launch_says_its_job_and_slot_stamps_the_controllers_clock_and_is_counted_once(pool):
    env = pool
    await env.lab.patch(SLOTS, "worker-01", {"status": {"lastClaim": {
        "name": "c0", "attempt": 1, "phase": "failed", "reason": "StartupJobFailed", "reachedReady": False,
        "finishedAt": format_time(env.clock.now - timedelta(minutes=5))}}}, subresource="status")
    await env.claim()
    await env.step()
    status = env.claim_status()
    assert (status["phase"], status["attempt"], status["startupJob"]) == ("booting", 2, "c1-startup"), status
    assert status["message"] == 'startup Job c1-startup powers on slot "worker-01"'
    assert status["bootStartedAt"] == format_time(env.clock.now)
    assert launches(env) == (1.0, 2.0)
    env.clock.advance(seconds=1)
    await env.step()  # booting already: no second count
    assert launches(env) == (1.0, 2.0)


async def test_a_claim_whose_job_was_created_before_a_crash_is_not_refused_but_moved_to_booting(pool):
    """The boot was committed (its Job exists) before the deadline check could refuse it: the move finishes,
    and the boot's own deadline ends it, in the boot's words."""
    from homecluster import names
    from homecluster.lifecycle.slotpass import run_pass
    env = pool
    await env.claim()
    await env.refill()
    await run_pass(env.ctx, "worker-01")  # seeded, pending
    claim = env.get(CLAIMS, "c1")
    await env.lab.create({"apiVersion": "batch/v1", "kind": "Job", "metadata": {
        "name": "c1-startup", "namespace": "homecluster-system",
        "labels": {names.LABEL_SLOT: "worker-01", names.LABEL_JOB_KIND: "startup",
                   names.LABEL_MANAGED_BY: names.MANAGED_BY, names.LABEL_CLAIM: "c1"},
        "ownerReferences": [{"apiVersion": claim["apiVersion"], "kind": "NodeClaim", "name": "c1",
                             "uid": claim["metadata"]["uid"], "controller": True}]},
        "spec": {"template": {"spec": {"restartPolicy": "Never", "containers": [{"name": "x", "image": "runner:test"}]}}}})
    env.clock.advance(minutes=6)  # past spec.deadlineAt
    await env.refill()
    await run_pass(env.ctx, "worker-01")
    status = env.claim_status()
    assert (status["phase"], status["startupJob"]) == ("booting", "c1-startup"), status
    assert names.FINALIZER in env.get(CLAIMS, "c1")["metadata"]["finalizers"]
