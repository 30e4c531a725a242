"""Launch and boot: seed, pending, booting, the Job monitor, the registration wait, the gate, ready."""
from __future__ import annotations

import pytest

from homecluster import names

pytestmark = pytest.mark.lab


async def setup_pool(env, claim: bool = True):
    await env.group()
    await env.slot()
    if claim:
        await env.claim()


async def test_seed_is_a_pass_of_its_own_and_the_slot_reports_pending(env):
    await setup_pool(env)
    await env.refill()
    from homecluster.lifecycle.slotpass import run_pass
    result = await run_pass(env.ctx, "worker-01")
    assert result.wrote
    assert env.claim_status() ["attempt"] == 1
    assert env.claim_status()["phase"] == "pending"
    assert env.slot_status()["phase"] == "pending"
    assert env.slot_status()["claim"] == "c1"
    assert env.jobs() == []  # nothing bought in the seeding pass


async def test_launch_creates_finalizer_job_and_booting(env):
    await setup_pool(env)
    await env.step()
    status = env.claim_status()
    assert status["phase"] == "booting"
    assert status["startupJob"] == "c1-startup"
    assert status["bootStartedAt"]
    claim = env.get("nodeclaims.infra.homecluster.dev", "c1")
    assert names.FINALIZER in claim["metadata"]["finalizers"]
    [job] = env.jobs()
    assert job["metadata"]["name"] == "c1-startup"
    assert job["metadata"]["ownerReferences"][0]["uid"] == claim["metadata"]["uid"]
    assert env.slot_status()["phase"] == "booting"


async def test_full_boot_to_ready_clears_deadline_after_status(env):
    await setup_pool(env)
    await env.step()
    await env.job_done("c1-startup")
    await env.step()
    assert env.claim_status()["phase"] == "booting"  # the Job succeeded, the Node has not joined yet
    await env.node(taints=[{"key": "ToBeDeletedByClusterAutoscaler", "effect": "NoSchedule"}])
    await env.step()
    status = env.claim_status()
    assert status["phase"] == "ready", status
    claim = env.get("nodeclaims.infra.homecluster.dev", "c1")
    assert "deadlineAt" not in claim["spec"]
    node = env.get("nodes", "worker-01")
    assert node["spec"]["providerID"] == "homecluster://worker-01"
    assert not node["spec"].get("taints")
    assert env.slot_status()["phase"] == "ready"
    assert env.slot_status()["powerState"] == "on"
    # audit order: the ready status write lands before the spec write that clears the deadline
    claim_writes = [(e.subresource, e.verb) for e in env.writes() if e.resource == "nodeclaims"]
    ready_at = max(i for i, w in enumerate(claim_writes) if w == ("status", "patch"))
    clear_at = max(i for i, w in enumerate(claim_writes) if w == ("", "patch"))
    assert clear_at > ready_at
    ready = [c for c in status["conditions"] if c["type"] == "Ready"]
    assert ready and ready[0]["status"] == "True"


async def test_crash_between_ready_and_deadline_clear_heals(env):
    await setup_pool(env)
    await env.step()
    await env.job_done("c1-startup")
    await env.node()
    await env.refill()
    # play the crash: land the ready write by hand, as the dead manager's first write would have
    await env.lab.patch("nodeclaims.infra.homecluster.dev", "c1", {"status": {"phase": "ready"}},
                        subresource="status")
    claim = env.get("nodeclaims.infra.homecluster.dev", "c1")
    assert claim["spec"].get("deadlineAt")
    env.clock.advance(minutes=30)  # way past the deadline: inert for a ready claim
    await env.step()
    claim = env.get("nodeclaims.infra.homecluster.dev", "c1")
    assert claim["status"]["phase"] == "ready"
    assert "deadlineAt" not in claim["spec"]


async def test_launch_is_idempotent_after_a_crash_between_job_and_booting(env):
    await setup_pool(env)
    await env.step()  # seed
    # the Job exists, the claim is still pending (the crash came after the create)
    await env.lab.patch("nodeclaims.infra.homecluster.dev", "c1", {"status": {"phase": "pending"}},
                        subresource="status")
    before = len(env.jobs())
    await env.step()
    assert len(env.jobs()) == before == 1
    assert env.claim_status()["phase"] == "booting"


async def test_pending_claim_on_a_machine_already_on_is_launched(env):
    await setup_pool(env)
    await env.node()  # the machine is on before the claim is launched (table row 4)
    await env.refill()
    from homecluster.lifecycle.slotpass import run_pass
    await run_pass(env.ctx, "worker-01")  # seed
    assert env.slot_status()["phase"] == "booting"  # row 4: pending + on reports booting
    await env.step()
    assert env.claim_status()["phase"] == "ready"
    assert len(env.jobs()) == 1


async def test_missing_slot_group_and_attempt_limit(env):
    await env.claim("c-noslot", slot="nowhere")
    await env.step("nowhere")
    assert env.claim_status("c-noslot")["phase"] == "failed"
    assert env.claim_status("c-noslot")["reason"] == "SlotNotFound"
    await env.slot("lonely", group="nogroup")
    await env.claim("c-nogroup", slot="lonely")
    await env.step("lonely")
    assert env.claim_status("c-nogroup")["reason"] == "GroupNotFound"
    assert env.jobs() == []


async def test_deadline_passed_while_pending(env):
    await setup_pool(env)
    await env.step()  # seed + launch happen in one step; use a claim whose deadline is already gone instead
    await env.claim("c2", slot="worker-02", deadline=None)
    await env.slot("worker-02")
    await env.lab.patch("nodeclaims.infra.homecluster.dev", "c2", {"spec": {"deadlineAt": "2026-03-04T09:00:00Z"}})
    await env.step("worker-02")
    assert env.claim_status("c2")["reason"] == "DeadlineExceeded"
    assert not [j for j in env.jobs() if j["metadata"]["name"].startswith("c2")]
