"""Deletes (reversal, cancel), supersede, MachineGone, unwanted machines and their hold-off, TTL."""
from __future__ import annotations

import asyncio
import json
import logging

import pytest

from homecluster import names

pytestmark = pytest.mark.lab
CLAIMS = "nodeclaims.infra.homecluster.dev"


def force_of(job):
    return json.loads(job["spec"]["template"]["metadata"]["annotations"][
        "infra.homecluster.dev/job-vars"])["force"]


async def test_delete_of_ready_claim_cordons_shuts_down_completes(pool, logged):
    env = pool
    await env.ready_claim()
    await env.lab.delete(CLAIMS, "c1")
    await env.step()
    node = env.get("nodes", "worker-01")
    assert node["spec"]["unschedulable"] is True
    assert node["metadata"]["annotations"][names.ANNOTATION_CORDONED_BY] == names.CORDONED_BY_VALUE
    job = env.lab.get("jobs.batch", "c1-shutdown-1", "homecluster-system")
    assert job is not None and force_of(job) is False
    assert env.claim_status()["shutdownAttempts"] == 1
    assert env.slot_status()["phase"] == "draining"
    # the machine goes off but the Job has not ended: wait
    await env.node(ready=False)
    await env.step()
    assert env.get(CLAIMS, "c1") is not None
    await env.job_done("c1-shutdown-1")
    with logged(env.ctx.log, logging.INFO) as records:
        await env.step()
    assert env.get(CLAIMS, "c1") is None
    assert env.slot_status()["lastClaim"]["reason"] == "Released"
    said = [r.getMessage() for r in records if "lastClaim" in r.getMessage()]
    assert said == ['slot "worker-01": lastClaim is now c1 (completed, attempt 1)'], said
    assert env.slot_status()["phase"] == "off"
    # lastClaim was written before the finalizer was released: compare the two in the server's event history
    assert lastclaim_rv(env, "c1") < finalizer_release_rv(env, "c1")


def lastclaim_rv(env, claim: str, slot: str = "worker-01") -> int:
    """The resourceVersion at which the slot's lastClaim first named `claim`."""
    key = env.lab.resource("nodes.infra.homecluster.dev").key
    return min(e.rv for e in env.lab.store.events_since(key, 0) if e.obj["metadata"]["name"] == slot
               and ((e.obj.get("status") or {}).get("lastClaim") or {}).get("name") == claim)


def finalizer_release_rv(env, claim: str) -> int:
    """The resourceVersion at which our finalizer left the claim marked for deletion (the last one let it go)."""
    key = env.lab.resource(CLAIMS).key
    return min(e.rv for e in env.lab.store.events_since(key, 0) if e.obj["metadata"]["name"] == claim
               and (e.type == "DELETED" or (e.obj["metadata"].get("deletionTimestamp")
                                            and names.FINALIZER not in (e.obj["metadata"].get("finalizers") or []))))


async def test_delete_of_pending_claim_is_gone_at_once(pool):
    env = pool
    await env.claim()
    await env.refill()
    await env.lab.delete(CLAIMS, "c1")
    assert env.get(CLAIMS, "c1") is None
    await env.step()
    assert env.jobs() == []


async def test_delete_of_booting_claim_never_joined_forces_shutdown(pool):
    env = pool
    await env.claim()
    await env.step()
    await env.lab.delete(CLAIMS, "c1")
    await env.step()
    names_now = {j["metadata"]["name"] for j in env.jobs()}
    assert "c1-startup" not in names_now
    job = env.lab.get("jobs.batch", "c1-shutdown-1", "homecluster-system")
    assert force_of(job) is True
    assert env.get(CLAIMS, "c1") is not None
    await env.job_done("c1-shutdown-1")
    await env.step()
    assert env.get(CLAIMS, "c1") is None


async def test_superseded_when_two_live_claims(pool):
    env = pool
    await env.claim("old")
    await env.step()
    env.clock.advance(seconds=2)
    await asyncio.sleep(1.05)  # creationTimestamp has one-second resolution: make "new" strictly newer
    await env.claim("new")
    await env.step()
    assert (env.claim_status("old")["phase"], env.claim_status("old")["reason"]) == ("failed", "Superseded")
    # its own startup Job still runs: the finalizer stays, so a delete cannot have that Job collected partway
    assert names.FINALIZER in (env.get(CLAIMS, "old")["metadata"].get("finalizers") or [])
    assert env.claim_status("new")["phase"] == "booting"
    assert env.slot_status()["claim"] == "new"
    assert (env.slot_status().get("lastClaim") or {}).get("name") != "old"
    await env.lab.delete(CLAIMS, "old")
    await env.step()
    assert env.get(CLAIMS, "old") is not None
    await env.job_done("old-startup")  # ended: the ended-claim release lets it go
    await env.step()
    assert env.get(CLAIMS, "old") is None


async def test_a_superseded_claim_with_no_job_running_lets_go_of_its_finalizer_at_once(pool):
    env = pool
    await env.claim("old")
    await env.step()
    await env.job_done("old-startup")  # its startup Job ended: nothing of its own runs
    await env.step()
    await asyncio.sleep(1.05)  # creationTimestamp has one-second resolution: make "new" strictly newer
    await env.claim("new")
    await env.step()
    assert (env.claim_status("old")["phase"], env.claim_status("old")["reason"]) == ("failed", "Superseded")
    # not deleted, yet nothing holds it: the same pass drops our finalizer, so a later delete is not kept waiting
    assert names.FINALIZER not in (env.get(CLAIMS, "old")["metadata"].get("finalizers") or [])
    assert env.claim_status("new")["phase"] == "booting"


async def test_machine_gone_clock_starts_clears_and_expires(pool):
    env = pool
    await env.ready_claim()
    await env.node(ready=False)
    await env.step()
    assert env.claim_status()["machineObservedOffAt"]
    assert env.slot_status()["phase"] == "booting"  # row 8
    await env.node(ready=True)
    await env.step()
    assert "machineObservedOffAt" not in env.claim_status()
    await env.node(ready=False)
    await env.step()
    window = env.ctx.settings.boot_floor
    env.clock.advance(seconds=window.total_seconds())
    await env.step()
    assert env.claim_status()["phase"] == "ready"  # exactly one window: still waiting
    env.clock.advance(seconds=2)
    await env.step()
    assert (env.claim_status()["phase"], env.claim_status()["reason"]) == ("failed", "MachineGone")
    assert env.slot_status()["lastClaim"]["reachedReady"] is True


async def test_unwanted_machine_is_shut_down_and_held_off_past_the_bound(pool):
    env = pool
    await env.node()  # on, and no claim wants it (row 2)
    await env.step()
    assert env.slot_status()["phase"] == "draining"
    limit = env.ctx.settings.shutdown_attempt_limit
    for n in range(1, limit + 1):
        jobs = [j for j in env.jobs() if j["metadata"]["labels"][names.LABEL_JOB_KIND] == "shutdown"]
        assert len(jobs) == n
        assert env.slot_status()["shutdown"]["attempts"] == n
        await env.job_done(jobs[-1]["metadata"]["name"], "failed")  # the shutdown never lands
        env.clock.advance(seconds=6)  # past the grace of one job_poll_interval
        await env.step()
    held = env.slot_status()["shutdown"]
    assert held["attempts"] == limit and held["heldUntil"]
    assert len([j for j in env.jobs() if "unwanted" in j["metadata"]["name"]]) == limit  # held: no new Job
    env.clock.advance(seconds=env.ctx.settings.shutdown_holdoff.total_seconds())
    await env.step()
    assert env.slot_status()["shutdown"]["attempts"] == limit + 1  # one per shutdown Job: the count goes on
    fresh = env.lab.get("jobs.batch", f"worker-01-unwanted-{limit + 1}", "homecluster-system")
    assert fresh is not None and not (fresh.get("status") or {}).get("conditions")
    await env.node(ready=False)
    await env.job_done(f"worker-01-unwanted-{limit + 1}")  # it landed: nothing said since (model.liveness)
    await env.step()
    assert env.slot_status()["shutdown"]["attempts"] == 0  # off for good: settled
    assert env.slot_status()["phase"] == "off"
    # the next episode of the same machine starts at 1 again: the finished Job of the earlier episode that
    # holds the name is replaced, not mistaken for this one
    await env.node()
    env.clock.advance(seconds=6)
    await env.job_done(f"worker-01-unwanted-{limit + 1}")
    env.clock.advance(seconds=6)
    await env.step()
    assert env.slot_status()["shutdown"]["attempts"] == 1
    again = env.lab.get("jobs.batch", "worker-01-unwanted-1", "homecluster-system")
    assert again is not None and not (again.get("status") or {}).get("conditions")


async def test_terminal_claims_are_collected_after_ttl(pool):
    env = pool
    await env.claim()
    await env.step()
    await env.job_done("c1-startup", "failed")
    await env.step()
    assert env.claim_status()["phase"] == "failed"
    env.clock.advance(seconds=599)
    await env.step()
    assert env.get(CLAIMS, "c1") is not None
    env.clock.advance(seconds=2)
    await env.step()
    # the failed boot's forced shutdown still runs: collecting the claim would delete it partway
    assert env.get(CLAIMS, "c1") is not None and not env.get(CLAIMS, "c1")["metadata"].get("deletionTimestamp")
    await env.job_done("c1-shutdown-1", "succeeded")
    await env.step()
    assert env.get(CLAIMS, "c1") is None or env.get(CLAIMS, "c1")["metadata"].get("deletionTimestamp")
    assert env.slot_status()["lastClaim"]["name"] == "c1"


async def test_deleted_failed_claim_goes_while_a_newer_claims_machine_is_on(pool):
    """An ended claim's finalizer waits only for its own Jobs, never for a machine a newer claim owns."""
    env = pool
    await env.claim("c1")
    await env.step()
    await env.job_done("c1-startup", "failed")
    await env.step()
    assert env.claim_status("c1")["phase"] == "failed"
    await env.job_done("c1-shutdown-1")  # its own forced shutdown ends
    env.clock.advance(seconds=10)
    await env.ready_claim("c2")
    assert env.slot_status()["powerState"] == "on"
    await env.lab.delete(CLAIMS, "c1")  # the TTL, the autoscaler or a person
    await env.step()
    assert env.get(CLAIMS, "c1") is None
    assert env.claim_status("c2")["phase"] == "ready"
    assert env.slot_status()["lastClaim"]["name"] == "c1"


async def test_deleted_failed_claim_waits_for_its_own_forced_shutdown(pool):
    env = pool
    await env.claim("c1")
    await env.step()
    await env.job_done("c1-startup", "failed")
    await env.step()
    await env.lab.delete(CLAIMS, "c1")
    await env.step()
    assert env.get(CLAIMS, "c1")["metadata"]["deletionTimestamp"]  # c1-shutdown-1 still runs: kept
    assert env.lab.get("jobs.batch", "c1-shutdown-1", "homecluster-system") is not None
    await env.job_done("c1-shutdown-1")
    await env.step()
    assert env.get(CLAIMS, "c1") is None


async def test_booting_claim_deleted_after_its_slot_is_gone_completes(pool):
    env = pool
    await env.claim("c1")
    await env.step()
    assert env.claim_status("c1")["phase"] == "booting"
    await env.slot_gone_by_hand()  # the operator was down, or the finalizer removed by hand
    await env.lab.delete(CLAIMS, "c1")
    await env.step()
    assert env.get(CLAIMS, "c1") is None  # completed and released: a delete is never refused
    assert env.lab.get("jobs.batch", "c1-startup", "homecluster-system") is None  # nothing left to power on
    # deleted by the operator itself (Background: its pod goes too), not left to the claim's garbage collection
    deletes = env.lab.audit.select("jobs", verbs=["delete"], user_agent="homecluster-operator")
    assert [e.name for e in deletes] == ["c1-startup"]
    moves = [e for e in env.lab.list("events", "default")
             if e["involvedObject"]["name"] == "c1" and e["reason"] == "SlotNotFound"]
    assert len(moves) == 1 and moves[0]["type"] == "Normal"  # completed, not failed
    assert moves[0]["message"] == ('NodeClaim "c1" on slot "worker-01", attempt 1: slot "worker-01" (spec.slotRef) no longer exists, so there is no machine to '
                                   "power off; the claim is released")
