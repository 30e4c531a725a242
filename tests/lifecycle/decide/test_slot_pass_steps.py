"""lifecycle.slotpass.run_pass, one pass at a time against the lab API server: what a pass decides (the
decision table row it reports, whether it wrote, when it wants to look again), that the readiness gate's
Node is what the rest of the same pass reads, and that a refused action still leaves the slot's status
current -- unless the refusal was a conflict, which re-runs the pass at once.
"""
from __future__ import annotations

import pytest
from support import objects

from homecluster import names
from homecluster.kube.client import ApiError, Conflict
from homecluster.lifecycle.slotpass import PassResult, run_pass
from homecluster.model.timestamps import format_time

pytestmark = pytest.mark.lab

SLOTS = "nodes.infra.homecluster.dev"


def node_patches(env) -> list:
    return [e for e in env.writes() if e.resource == "nodes" and e.group == "" and e.verb == "patch"]


async def one_pass(env) -> PassResult:
    await env.refill()
    return await run_pass(env.ctx, "worker-01")


async def test_each_pass_reports_its_row_whether_it_wrote_and_when_to_look_again(pool):
    env = pool
    assert await one_pass(env) == PassResult(None, True, 1)  # a free slot, off: its status is written once
    assert await one_pass(env) == PassResult(None, False, 1)  # then nothing
    await env.claim()
    assert await one_pass(env) == PassResult(None, True, None)  # the seed stops the pass: no row
    assert env.claim_status()["attempt"] == 1 and env.jobs() == []
    launched = await one_pass(env)
    assert (launched.wrote, launched.row) == (True, 3) and [j["metadata"]["name"] for j in env.jobs()] == ["c1-startup"]
    await env.job_done("c1-startup")
    await env.step()
    booting = await one_pass(env)
    assert env.claim_status()["phase"] == "booting"
    assert (booting.wrote, booting.row) == (False, 5) and booting.wake is not None and booting.wake > env.clock.now
    await env.node()
    await env.step()
    steady = await one_pass(env)
    assert env.claim_status()["phase"] == "ready"
    assert (steady.wrote, steady.row) == (False, 6)


async def test_the_gate_opens_in_the_pass_and_the_same_pass_reads_the_opened_node(pool):
    env = pool
    await env.ready_claim()
    patches = len(node_patches(env))
    await env.node(unschedulable=True, annotations={names.ANNOTATION_CORDONED_BY: names.CORDONED_BY_VALUE})
    result = await one_pass(env)
    assert (result.wrote, result.row) == (True, 7)
    node = env.get("nodes", "worker-01")
    assert not node["spec"].get("unschedulable") and len(node_patches(env)) == patches + 1
    assert env.slot_status()["phase"] == "ready"  # the slot status step read the Node the gate left
    again = await one_pass(env)
    assert again == PassResult(again.wake, False, 6) and len(node_patches(env)) == patches + 1


async def test_no_gate_patch_while_the_claim_is_ready_and_the_machine_usable_or_off(pool):
    env = pool
    await env.ready_claim()
    patches = len(node_patches(env))
    await env.lab.patch("nodes", "worker-01", {"spec": {"providerID": None}})  # nothing else of ours to change
    await env.step()
    assert len(node_patches(env)) == patches  # usable (row 6): the gate is not run
    await env.node(ready=False)
    result = await one_pass(env)
    assert result.row == 8 and len(node_patches(env)) == patches


async def launch_refused(env, code: int) -> None:
    """A seeded claim whose slot status a stale writer left wrong; the next Job create is refused with `code`."""
    await env.claim()
    await one_pass(env)  # seed
    assert env.slot_status()["phase"] == "pending"
    await env.lab.patch(SLOTS, "worker-01", {"status": {"phase": "off"}}, subresource="status")
    env.lab.faults.fail_next("jobs.batch", count=1, code=code, verbs=["create"])


async def test_a_refused_job_create_still_leaves_the_slot_status_current(pool):
    env = pool
    await launch_refused(env, 403)
    with pytest.raises(ApiError) as raised:
        await one_pass(env)
    assert raised.value.status == 403 and env.jobs() == []
    assert env.slot_status()["phase"] == "pending"  # rewritten from what is observed before the retry


async def test_a_conflict_re_runs_the_pass_without_writing_the_slot(pool):
    env = pool
    await launch_refused(env, 409)
    with pytest.raises(Conflict):
        await one_pass(env)
    assert env.slot_status()["phase"] == "off"  # left for the pass that re-runs at once
    await env.step()
    assert env.slot_status()["phase"] == "booting" and [j["metadata"]["name"] for j in env.jobs()] == ["c1-startup"]


async def test_the_refusal_is_raised_even_when_the_status_write_fails_too(pool):
    env = pool
    await launch_refused(env, 403)
    env.lab.faults.fail_next("nodes.infra.homecluster.dev", count=1, code=500, verbs=["patch"])
    with pytest.raises(ApiError) as raised:
        await one_pass(env)
    assert raised.value.status == 403  # the Job's refusal, not the status write's
    assert env.slot_status()["phase"] == "off"


async def test_a_claim_deleted_before_its_first_pass_is_cancelled_without_being_stamped(pool):
    env = pool
    await env.lab.create(objects.claim("c1", requested_at="2026-01-01T00:00:00Z", labelled=True,
                                       finalizers=[names.FINALIZER]))
    await env.lab.delete("nodeclaims.infra.homecluster.dev", "c1")
    await env.step(times=4)
    assert env.get("nodeclaims.infra.homecluster.dev", "c1") is None and env.jobs() == []
    claim_status_writes = [e for e in env.writes() if e.resource == "nodeclaims" and e.subresource == "status"]
    assert len(claim_status_writes) == 1, claim_status_writes  # the cancel alone: no attempt is stamped first


async def test_a_claim_that_ended_unrecorded_reaches_last_claim_before_the_next_claim_is_seeded(pool):
    # c0 failed after buying a boot, but the pass that failed it never wrote the slot's lastClaim (its status
    # write was refused, the operator restarted, ...): the next pass records it first, so c1 continues the streak.
    env = pool
    await env.claim("c0")
    stamp = format_time(env.clock.now)
    await env.lab.patch("nodeclaims.infra.homecluster.dev", "c0", {"status": {
        "phase": "failed", "reason": "StartupJobFailed", "attempt": 1, "startupJob": "c0-startup",
        "bootStartedAt": stamp, "finishedAt": stamp}}, subresource="status")
    await env.claim("c1")
    assert await one_pass(env) == PassResult(None, True, None)  # the seed stops the pass
    assert env.slot_status()["lastClaim"]["name"] == "c0"
    assert env.claim_status("c1")["attempt"] == 2
