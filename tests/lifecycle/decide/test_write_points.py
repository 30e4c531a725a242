"""Durability at every write point (issue 23, items 4, 5 and 6): a crash (or a delete) between two writes of one
step leaves state the next pass reads the same way, and a Job someone else holds is an Event and a wait.

A crash is played by writing back the claim status the step had before its last write (the Jobs it created
stay, as they would); the pass then runs again, as a restarted operator's would.
"""
from __future__ import annotations

import pytest

from homecluster.jobs import owned_by

pytestmark = pytest.mark.lab
CLAIMS = "nodeclaims.infra.homecluster.dev"
NS = "homecluster-system"
OPERATOR = "homecluster-operator"


def events(env, involved: str, reason: str) -> list[dict]:
    return [e for e in env.lab.list("events", "default")
            if e["involvedObject"]["name"] == involved and e["reason"] == reason]


def created(env) -> int:
    return env.lab.audit.count("jobs", verbs=["create"], user_agent=OPERATOR)


async def past_grace(env) -> None:
    env.clock.advance(seconds=env.ctx.settings.job_poll_interval.total_seconds() + 1)


async def test_a_claim_named_like_its_slot_gets_its_own_shutdown_job(pool):
    env = pool
    await env.node()  # on, and no claim wants it: the slot's own shutdown
    await env.step()
    [slot_job] = env.jobs()
    await env.job_done(slot_job["metadata"]["name"])
    await env.node(ready=False)
    await past_grace(env)
    await env.step()
    await env.ready_claim("worker-01")  # a hand-made claim named like its slot
    await env.lab.delete(CLAIMS, "worker-01")
    await env.step()  # the reversal's shutdown: not the slot's finished Job (kept by its TTL), never a wedged pass
    mine = env.get("jobs.batch", "worker-01-shutdown-1", NS)
    assert mine is not None and owned_by(mine, env.get(CLAIMS, "worker-01")["metadata"]["uid"])
    assert slot_job["metadata"]["name"] == "worker-01-unwanted-1"
    assert env.claim_status("worker-01")["shutdownAttempts"] == 1


async def test_a_foreign_job_in_the_reversal_is_an_event_and_a_wait(pool):
    env = pool
    await env.ready_claim()
    await env.lab.create({"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "c1-shutdown-1", "namespace": NS},
                          "spec": {"template": {"spec": {"restartPolicy": "Never",
                                                         "containers": [{"name": "x", "image": "evil:1"}]}}}})
    await env.lab.delete(CLAIMS, "c1")
    result = await env.step()  # no exception: the slot's pass goes on
    assert result.wake == env.clock.now + env.ctx.settings.job_poll_interval
    [said] = events(env, "c1", "ForeignJob")
    assert said["type"] == "Warning" and "homecluster-system/c1-shutdown-1" in said["message"]
    assert env.claim_status()["message"].startswith("the shutdown waits: Job homecluster-system/c1-shutdown-1")
    assert env.slot_status()["phase"] != "ready", env.slot_status()  # the slot status is written, not frozen
    assert env.get("jobs.batch", "c1-shutdown-1", NS)["spec"]["template"]["spec"]["containers"][0]["image"] \
        == "evil:1"  # neither adopted nor deleted
    await env.lab.delete("jobs.batch", "c1-shutdown-1", namespace=NS, propagation="Background")  # a person removes it: the shutdown fires
    await env.step()
    assert owned_by(env.get("jobs.batch", "c1-shutdown-1", NS), env.get(CLAIMS, "c1")["metadata"]["uid"])


@pytest.mark.parametrize("ended", [False, True], ids=["running", "ended"])
async def test_a_crash_between_the_forced_shutdown_and_the_failed_write_keeps_the_count(pool, ended):
    env = pool
    await env.claim()
    await env.step()
    before = dict(env.claim_status())
    await env.job_done("c1-startup", "failed")
    await env.step()
    assert (env.claim_status()["phase"], env.claim_status()["shutdownJob"]) == ("failed", "c1-shutdown-1")
    # the crash: the forced shutdown Job was created, the failed write (with its count) never landed
    await env.lab.patch(CLAIMS, "c1", {"status": {k: before.get(k) for k in (
        "phase", "reason", "message", "finishedAt", "shutdownAttempts", "shutdownJob", "shutdownHeldUntil",
        "conditions")}}, subresource="status")
    assert "shutdownAttempts" not in env.claim_status()
    if ended:
        await env.job_done("c1-shutdown-1", "failed")
    await env.step()
    status = env.claim_status()
    assert (status["phase"], status["reason"]) == ("failed", "StartupJobFailed"), status
    assert (status.get("shutdownAttempts"), status.get("shutdownJob")) == (1, "c1-shutdown-1"), status
    assert created(env) == 2  # c1-startup, c1-shutdown-1: counted, not fired again


async def test_a_claim_deleted_before_its_booting_write_is_an_attempt(pool):
    env = pool
    await env.claim("c0")  # a failed boot first: the streak is at 1
    await env.step()
    await env.job_done("c0-startup", "failed")
    await env.step()
    await env.job_done("c0-shutdown-1")
    await past_grace(env)
    await env.step()
    assert env.slot_status()["lastClaim"]["name"] == "c0"
    await env.claim("c1")
    await env.step()
    await env.step()
    assert env.claim_status("c1")["attempt"] == 2
    # the delete lands between the startup Job's create and the booting write (DecreaseTargetSize)
    await env.lab.patch(CLAIMS, "c1", {"status": {"phase": "pending", "startupJob": None, "bootStartedAt": None,
                                                  "reason": None, "message": None}}, subresource="status")
    await env.lab.delete(CLAIMS, "c1")
    await env.step()
    await env.job_done("c1-shutdown-1")
    await past_grace(env)
    await env.step()
    assert env.get(CLAIMS, "c1") is None
    last = env.slot_status()["lastClaim"]
    assert (last["name"], last["phase"], last["attempt"]) == ("c1", "completed", 2), last
    await env.claim("c2")
    await env.step()
    assert env.claim_status("c2")["attempt"] == 1  # the streak restarts at 1 after an episode that ended completed


async def test_a_crash_between_the_reversals_shutdown_and_its_count_keeps_the_count(pool):
    env = pool
    await env.ready_claim()
    await env.lab.delete(CLAIMS, "c1")
    await env.step()
    assert env.claim_status()["shutdownAttempts"] == 1
    # the crash: the graceful shutdown Job was created, its count never written; the Job then ends (machine on)
    await env.lab.patch(CLAIMS, "c1", {"status": {"shutdownAttempts": None, "shutdownJob": None}},
                        subresource="status")
    await env.job_done("c1-shutdown-1", "failed")
    await past_grace(env)
    await env.step()  # the ended Job is counted as the first; the machine is still on, so the second fires
    status = env.claim_status()
    assert (status.get("shutdownAttempts"), status.get("shutdownJob")) == (2, "c1-shutdown-2"), status
    assert env.lab.audit.count("jobs", verbs=["delete"], user_agent=OPERATOR) == 0  # not deleted as stale
    assert created(env) == 3  # c1-startup, c1-shutdown-1, c1-shutdown-2: the first was not fired again


async def test_a_planted_jobs_owner_is_said_on_one_bounded_line(pool):
    """The owner a foreign Job names is the planter's text (the API server bounds none of an ownerReference's
    fields): it goes into the claim's status and Event on one line, bounded."""
    env = pool
    await env.ready_claim()
    keeper = await env.lab.create({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "keeper",
                                                                                          "namespace": NS}})
    owner = {"apiVersion": "v1", "kind": "ConfigMap\nINFO forged " + "k" * 5000, "name": "keeper",
             "uid": keeper["metadata"]["uid"], "controller": True}
    await env.lab.create({"apiVersion": "batch/v1", "kind": "Job", "metadata": {
        "name": "c1-shutdown-1", "namespace": NS, "ownerReferences": [owner]},
        "spec": {"template": {"spec": {"restartPolicy": "Never", "containers": [{"name": "x", "image": "evil:1"}]}}}})
    await env.lab.delete(CLAIMS, "c1")
    await env.step()
    message = env.claim_status()["message"]
    assert "\n" not in message and len(message) < 1000, len(message)
    assert "belongs to ConfigMap INFO forged kkk" in message
