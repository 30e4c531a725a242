"""The reversal's edges: what `complete`, `slot_gone`, `committed` and the never-joined branch of `reverse`
write and say, and what they must leave alone.
"""
from __future__ import annotations

import logging

import pytest

from homecluster import names
from homecluster.lifecycle.slotpass import run_pass

pytestmark = pytest.mark.lab
CLAIMS = "nodeclaims.infra.homecluster.dev"
SLOTS = "nodes.infra.homecluster.dev"
NS = "homecluster-system"
OPERATOR = "homecluster-operator"
PREFIX = 'NodeClaim "c1" on slot "worker-01", attempt 1: '


def events(env, reason: str) -> list[dict]:
    return [e for e in env.lab.list("events", "default")
            if e["involvedObject"]["name"] == "c1" and e["reason"] == reason]


def shutdowns(env) -> list[str]:
    return sorted(j["metadata"]["name"] for j in env.jobs() if j["metadata"]["labels"][names.LABEL_JOB_KIND] == "shutdown")


async def test_complete_says_released_and_the_machine_is_off(pool):
    env = pool
    await env.ready_claim()
    await env.lab.delete(CLAIMS, "c1")
    await env.step()
    await env.job_done("c1-shutdown-1")
    await env.node(ready=False)
    await env.step()
    assert env.get(CLAIMS, "c1") is None
    [said] = events(env, "Released")
    assert said["type"] == "Normal"
    assert said["message"] == PREFIX + 'the machine of slot "worker-01" is off; the claim is released'


async def test_a_never_joined_claims_forced_shutdown_is_fired_once(pool):
    env = pool
    await env.claim()
    await env.step()
    await env.lab.delete(CLAIMS, "c1")
    await env.step()
    assert shutdowns(env) == ["c1-shutdown-1"]
    await env.job_done("c1-shutdown-1", "failed")  # it ended; the machine never showed up on
    env.clock.advance(seconds=env.ctx.settings.job_poll_interval.total_seconds() + 1)  # past the grace
    await env.step()
    # not fired again: shutdownAttempts says one was (read from the audit: the claim's Jobs go with it)
    assert env.lab.audit.count("jobs", verbs=["create"], user_agent=OPERATOR) == 2  # c1-startup, c1-shutdown-1
    assert env.get(CLAIMS, "c1") is None
    assert [e["message"] for e in events(env, "Released")] == [
        PREFIX + 'the machine of slot "worker-01" is off; the claim is released']


async def test_slot_gone_leaves_a_finished_startup_job_to_the_garbage_collector(pool):
    env = pool
    await env.claim()
    await env.step()
    await env.job_done("c1-startup")  # succeeded; the machine has not joined
    await env.step()
    await env.slot_gone_by_hand()  # the operator was down, or the finalizer removed by hand
    await env.lab.delete(CLAIMS, "c1")
    await env.step()
    assert env.get(CLAIMS, "c1") is None
    assert env.lab.audit.select("jobs", verbs=["delete"], user_agent=OPERATOR) == []  # not running: not ours to stop
    [said] = events(env, "SlotNotFound")
    assert said["message"] == PREFIX + ('slot "worker-01" (spec.slotRef) no longer exists, so there is no machine '
                                        "to power off; the claim is released")


async def test_a_pending_claim_naming_a_startup_job_is_committed_not_canceled(pool):
    env = pool
    await env.claim()
    await env.refill()
    await run_pass(env.ctx, "worker-01")  # seeded, still pending
    await env.lab.patch(CLAIMS, "c1", {"metadata": {"finalizers": [names.FINALIZER]}})
    # status names a startup Job while the phase is still pending (written by hand, or by an older operator)
    await env.lab.patch(CLAIMS, "c1", {"status": {"startupJob": "c1-startup"}}, subresource="status")
    await env.lab.delete(CLAIMS, "c1")
    await env.step()
    assert events(env, "Canceled") == []
    assert shutdowns(env) == ["c1-shutdown-1"]  # a Job may have been bought: powered off, forced
    assert env.get(CLAIMS, "c1") is not None


async def test_a_ready_boot_without_a_deadline_makes_no_spec_write(pool, logged):
    env = pool
    await env.claim(deadline=None)
    await env.step()
    await env.job_done("c1-startup")
    await env.node()
    with logged(env.ctx.log, logging.INFO) as records:
        await env.step()
    assert env.claim_status()["phase"] == "ready"
    spec_writes = [e for e in env.writes() if e.resource == "nodeclaims" and e.subresource == ""]
    assert len(spec_writes) == 1  # the finalizer only: there is no deadline to clear
    assert not [r for r in records if "deadlineAt" in r.getMessage()]



async def test_a_pending_claim_whose_startup_job_exists_is_committed_not_canceled(pool):
    env = pool
    await env.claim()
    await env.step()
    # the state a crash between the startup Job's create and the booting write leaves: the Job, a pending claim
    await env.lab.patch(CLAIMS, "c1", {"status": {"phase": "pending", "startupJob": None, "bootStartedAt": None,
                                                  "reason": None, "message": None}}, subresource="status")
    assert "startupJob" not in env.claim_status() and env.get("jobs.batch", "c1-startup", NS) is not None
    await env.lab.delete(CLAIMS, "c1")
    await env.step()
    # a Job may have powered the machine on: the startup Job is stopped and a forced shutdown fired, and the
    # claim waits for it -- not canceled once its startup Job is gone (that released the finalizer, and the
    # garbage collector took the running shutdown Job along with the claim)
    assert [e.name for e in env.lab.audit.select("jobs", verbs=["delete"], user_agent=OPERATOR)] == ["c1-startup"]
    assert env.lab.audit.count("jobs", verbs=["create"], user_agent=OPERATOR) == 2  # c1-startup, c1-shutdown-1
    assert events(env, "Canceled") == []
    assert env.get(CLAIMS, "c1") is not None and env.get("jobs.batch", "c1-shutdown-1", NS) is not None
    await env.job_done("c1-shutdown-1")
    await env.step()
    assert env.get(CLAIMS, "c1") is None
    assert [e["message"] for e in events(env, "Released")] == [
        PREFIX + 'the machine of slot "worker-01" is off; the claim is released']


async def test_a_ready_claim_whose_machine_is_off_is_released_without_a_shutdown(pool):
    env = pool
    await env.ready_claim()
    await env.node(ready=False)  # the machine went off (MachineGone's clock runs), then the claim is deleted
    await env.step()
    await env.lab.delete(CLAIMS, "c1")
    await env.step()
    assert env.get(CLAIMS, "c1") is None
    assert env.lab.audit.count("jobs", verbs=["create"], user_agent=OPERATOR) == 1  # its startup Job only
    assert len(events(env, "Released")) == 1


async def test_the_reversal_looks_again_one_poll_later_while_its_shutdown_runs(pool):
    env = pool
    await env.ready_claim()
    await env.lab.delete(CLAIMS, "c1")
    await env.step()
    await env.node(ready=False)  # off, but the shutdown Job has not ended
    result = await env.step()
    assert env.get(CLAIMS, "c1") is not None
    assert result.wake == env.clock.now + env.ctx.settings.job_poll_interval


async def test_a_never_joined_claims_finished_startup_job_is_not_deleted(pool):
    env = pool
    await env.claim()
    await env.step()
    await env.job_done("c1-startup")  # it ended; the machine never joined
    await env.step()
    await env.lab.delete(CLAIMS, "c1")
    await env.step()
    assert env.lab.audit.select("jobs", verbs=["delete"], user_agent=OPERATOR) == []  # only a running one is stopped
    assert env.get("jobs.batch", "c1-shutdown-1", NS) is not None  # the forced shutdown still fires
