"""A running shutdown Job never powers off the machine a newer claim bought (issue 11, item 1).

The rule (lifecycle.shutdown.hold_launch): a live claim whose slot has a shutdown Job that has not ended
stays pending -- nothing bought, its deadline counting -- until the Job has ended and one grace
(job_poll_interval) has passed. Checked for each kind of shutdown: an unwanted machine's (row 2), a failed
boot's forced one, and a held-off retry (which never fires once a live claim exists).
"""
from __future__ import annotations

import dataclasses

import pytest

from homecluster import names
from homecluster.lifecycle.slotpass import run_pass

pytestmark = pytest.mark.lab
CLAIMS = "nodeclaims.infra.homecluster.dev"
SHUTDOWN = "shutdown"


def shutdown_jobs(env) -> list[dict]:
    return [j for j in env.jobs() if j["metadata"]["labels"][names.LABEL_JOB_KIND] == SHUTDOWN]


def job_names(env) -> set[str]:
    return {j["metadata"]["name"] for j in env.jobs()}


def events_of(env, claim: str, reason: str) -> list[dict]:
    return [e for e in env.lab.list("events", "default")
            if e["involvedObject"]["name"] == claim and e["reason"] == reason]


def created_after_end(env, startup: str, shutdown: str) -> bool:
    """The startup Job (not written since its create) was created after the shutdown Job's last write (its
    end): resourceVersions are one counter for the whole store."""
    def rv(name: str) -> int:
        return int(env.get("jobs.batch", name, "homecluster-system")["metadata"]["resourceVersion"])
    return rv(startup) > rv(shutdown)


async def test_unwanted_machine_shutdown_then_a_claim_waits_for_it_to_end(pool):
    env = pool
    await env.node()  # on, and no claim wants it (row 2): its shutdown fires
    await env.step()
    [job] = shutdown_jobs(env)
    shutdown = job["metadata"]["name"]
    # the drain makes pods Pending; the autoscaler asks for this slot
    await env.claim("c1")
    await env.step()
    assert env.claim_status("c1")["phase"] == "pending"
    assert "c1-startup" not in job_names(env), "the startup began while the shutdown Job still runs"
    [said] = events_of(env, "c1", "WaitingForShutdown")
    assert shutdown in said["message"] and shutdown in env.claim_status("c1")["message"]
    env.clock.advance(seconds=20)  # the Job keeps running: still pending, still nothing bought
    await env.refill()
    waiting = await run_pass(env.ctx, "worker-01")
    assert not waiting.wrote, "a pass that only waits wrote something (it would re-run at once, forever)"
    assert waiting.wake == env.clock.now + env.ctx.settings.job_poll_interval
    assert env.claim_status("c1")["phase"] == "pending" and "c1-startup" not in job_names(env)
    assert len(events_of(env, "c1", "WaitingForShutdown")) == 1
    # the shutdown lands; within one grace the claim still waits (the Node's NotReady may trail the BMC)
    await env.job_done(shutdown)
    await env.node(ready=False)
    await env.step()
    assert env.claim_status("c1")["phase"] == "pending"
    env.clock.advance(seconds=env.ctx.settings.job_poll_interval.total_seconds())
    await env.step()
    status = env.claim_status("c1")
    assert status["phase"] == "booting" and status["startupJob"] == "c1-startup"
    # the startup Job was created after the shutdown Job had ended
    assert created_after_end(env, "c1-startup", shutdown)
    # and it boots to ready with no further shutdown
    await env.job_done("c1-startup")
    await env.node()
    await env.step()
    assert env.claim_status("c1")["phase"] == "ready"
    assert len(shutdown_jobs(env)) == 1


async def test_failed_boots_forced_shutdown_then_the_next_claim_waits_for_it(pool):
    env = pool
    await env.claim("c1")
    await env.step()
    await env.job_done("c1-startup", "failed")
    await env.step()
    assert env.claim_status("c1")["phase"] == "failed"
    assert env.get("jobs.batch", "c1-shutdown-1", "homecluster-system") is not None  # forced, still running
    await env.claim("c2")
    await env.step()
    assert env.claim_status("c2")["phase"] == "pending"
    assert env.claim_status("c2")["attempt"] == 2
    assert "c2-startup" not in job_names(env), "the startup began while the forced shutdown still runs"
    assert events_of(env, "c2", "WaitingForShutdown")
    await env.job_done("c1-shutdown-1")
    env.clock.advance(seconds=env.ctx.settings.job_poll_interval.total_seconds())
    await env.step()
    assert env.claim_status("c2")["phase"] == "booting"
    assert created_after_end(env, "c2-startup", "c1-shutdown-1")


async def test_a_held_off_shutdown_never_fires_once_a_claim_owns_the_slot(pool):
    env = pool
    await env.node()  # an unwanted machine whose shutdown never lands: the bound, then the hold-off
    await env.step()
    for _ in range(env.ctx.settings.shutdown_attempt_limit):
        await env.job_done(shutdown_jobs(env)[-1]["metadata"]["name"], "failed")
        env.clock.advance(seconds=6)
        await env.step()
    assert env.slot_status()["shutdown"]["heldUntil"]
    fired = len(shutdown_jobs(env))
    # nothing runs during the hold-off: a claim launches at once (powering on a machine that is on), and
    # the machine, already joined, is ready
    await env.claim("c1")
    await env.step()
    assert env.claim_status("c1")["startupJob"] == "c1-startup"
    assert env.claim_status("c1")["phase"] == "ready"
    # the hold-off passes: the retry is not fired (a live claim wants the machine)
    env.clock.advance(seconds=env.ctx.settings.shutdown_holdoff.total_seconds() + 60)
    await env.job_done("c1-startup")
    await env.step()
    assert env.claim_status("c1")["phase"] == "ready"
    assert len(shutdown_jobs(env)) == fired


async def test_a_waiting_claims_deadline_keeps_counting(pool):
    from datetime import timedelta
    env = pool
    await env.node()  # an unwanted machine: its shutdown runs
    await env.step()
    await env.claim("c1", deadline=timedelta(seconds=30))
    await env.step()
    assert env.claim_status("c1")["phase"] == "pending"
    env.clock.advance(seconds=31)  # the shutdown Job still runs past the claim's budget
    await env.step()
    status = env.claim_status("c1")
    assert (status["phase"], status["reason"]) == ("failed", "DeadlineExceeded")
    assert "c1-startup" not in job_names(env)  # nothing was bought


async def test_a_restarted_operator_writes_nothing_to_say_again_that_a_claim_waits(pool):
    """lifecycle.shutdown._say_waiting: the claim's status.message already says it waits for that Job, so a
    restarted operator (no memory of the Events it posted) writes nothing, not even the Event again: a pass
    that writes is re-run at once."""
    env = pool
    await env.node()  # on, and no claim wants it (row 2): its shutdown fires
    await env.step()
    [job] = shutdown_jobs(env)
    await env.claim("c1")
    await env.step()
    assert job["metadata"]["name"] in env.claim_status("c1")["message"]
    assert len(events_of(env, "c1", "WaitingForShutdown")) == 1
    restarted = dataclasses.replace(env.ctx, jobs_timed={}, events_posted={}, foreign_jobs={})
    env.clock.advance(seconds=20)  # the Job keeps running
    await env.refill()
    env.lab.audit.clear()
    waiting = await run_pass(restarted, "worker-01")
    assert not waiting.wrote and env.writes() == [], [(e.verb, e.resource, e.name) for e in env.writes()]
    assert env.claim_status("c1")["phase"] == "pending"
