"""A shutdown Job is never lost while its pod may still be powering the machine off (review of the merged
shutdown rules): a claim keeps its finalizer while one of its own Jobs runs, so the garbage collector cannot
delete that Job and let a newer claim launch under it (docs/controller.md, "a claim waits pending while any
shutdown Job of its slot has not ended").

The lab's garbage collector is run by hand (`collect`) so that "the Job would be gone" is decided, not raced.
"""
from __future__ import annotations

import asyncio

from datetime import timedelta

import pytest

from homecluster import names

pytestmark = pytest.mark.lab
CLAIMS = "nodeclaims.infra.homecluster.dev"
NS = "homecluster-system"


def collect(env) -> None:
    """One pass of the lab's garbage collector, now (it also runs every 50 ms on its own)."""
    env.lab.collector.run_once()


def finalizers(env, claim: str) -> list[str]:
    return (env.get(CLAIMS, claim) or {}).get("metadata", {}).get("finalizers") or []


async def test_a_deleting_claim_superseded_while_its_shutdown_runs_keeps_the_job(pool):
    env = pool
    await env.ready_claim()
    await env.lab.delete(CLAIMS, "c1")  # the reversal fires its graceful shutdown
    await env.step()
    assert env.get("jobs.batch", "c1-shutdown-1", NS) is not None
    await env.claim("c2")  # a newer claim (a webhook that was down): c1 is superseded while its Job runs
    await env.step()
    collect(env)
    await env.step()
    assert env.get("jobs.batch", "c1-shutdown-1", NS) is not None, "the running shutdown Job was collected"
    assert names.FINALIZER in finalizers(env, "c1"), "released while its shutdown Job runs"
    assert env.claim_status("c1")["reason"] == "Superseded"
    assert env.claim_status("c2")["phase"] == "pending"
    assert "c2-startup" not in {j["metadata"]["name"] for j in env.jobs()}
    # the shutdown lands: c1 is released (the ended-claim release), then c2 launches after the grace
    await env.job_done("c1-shutdown-1")
    await env.node(ready=False)
    await env.step()
    collect(env)
    assert env.get(CLAIMS, "c1") is None
    env.clock.advance(seconds=env.ctx.settings.job_poll_interval.total_seconds())
    await env.step()
    assert env.claim_status("c2")["phase"] == "booting"


async def foreign_job(env, name: str) -> None:
    """A Job under the name a shutdown needs, owned by nothing of ours (a leftover, or planted)."""
    await env.lab.create({"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": name, "namespace": NS},
                          "spec": {"template": {"spec": {"restartPolicy": "Never",
                                                         "containers": [{"name": "x", "image": "evil:1"}]}}}})


def events(env, involved: str, reason: str) -> list[dict]:
    return [e for e in env.lab.list("events", "default")
            if e["involvedObject"]["name"] == involved and e["reason"] == reason]


async def test_a_foreign_job_under_the_unwanted_shutdowns_name_is_said_on_the_slot(pool):
    env = pool
    await foreign_job(env, "worker-01-unwanted-1")
    await env.node()  # on, and no claim wants it (row 2): its shutdown would take that name
    result = await env.step()  # no exception: the pass is not failed (it was a retry-as-bug loop)
    assert result.wake == env.clock.now + env.ctx.settings.shutdown_holdoff
    [said] = events(env, "worker-01", "ForeignJob")
    assert said["involvedObject"]["kind"] == "Node" and said["type"] == "Warning"
    assert "homecluster-system/worker-01-unwanted-1" in said["message"] and "no owner" in said["message"]
    [job] = env.jobs()
    assert job["spec"]["template"]["spec"]["containers"][0]["image"] == "evil:1"  # not adopted, not deleted
    assert not (env.slot_status().get("shutdown") or {}).get("attempts")  # nothing was fired


async def test_a_foreign_job_under_a_failed_boots_shutdown_name_still_records_the_failure(pool):
    env = pool
    await foreign_job(env, "c1-shutdown-1")
    await env.claim("c1")
    await env.step()
    await env.job_done("c1-startup", "failed")
    await env.step()  # the failed boot's forced shutdown meets the foreign Job: the failure lands without it
    status = env.claim_status("c1")
    assert (status["phase"], status["reason"]) == ("failed", "StartupJobFailed"), status
    assert not status.get("shutdownAttempts") and not status.get("shutdownJob")
    message = status["conditions"][-1]["message"]
    assert "no forced shutdown" in message and "homecluster-system/c1-shutdown-1" in message, message
    [said] = events(env, "c1", "ForeignJob")
    assert "no owner" in said["message"]
    assert env.get("jobs.batch", "c1-shutdown-1", NS)["spec"]["template"]["spec"]["containers"][0]["image"] == "evil:1"


async def test_a_claim_taking_the_machine_resets_the_slots_shutdown_count(pool):
    # an unwanted machine's shutdown fails (the machine is never seen off), then a claim takes the machine:
    # the slot's count must not carry into the next unwanted episode
    env = pool
    await env.node()
    await env.step()
    await env.job_done("worker-01-unwanted-1", "failed")
    await env.claim("c1")
    await env.step()
    assert env.claim_status("c1")["phase"] == "pending"  # within the grace after the failed shutdown
    assert env.slot_status()["shutdown"]["attempts"] == 1  # pending bought nothing: still the episode
    env.clock.advance(seconds=env.ctx.settings.job_poll_interval.total_seconds())
    await env.step()
    assert env.claim_status("c1")["phase"] in ("booting", "ready")
    assert env.slot_status()["shutdown"]["attempts"] == 0, env.slot_status()["shutdown"]
    assert not env.slot_status()["shutdown"].get("heldUntil")


async def test_a_shutdown_pod_that_outlived_its_job_holds_the_launch(pool):
    # A person deletes the running shutdown Job (kubectl's Background propagation): the Job leaves the store at
    # once while its pod is still being killed. Played here by deleting the Job with Orphan propagation (the lab
    # kills no pods: the pod staying Running is the terminating pod); the pod carries the Job's template labels.
    from homecluster.lifecycle.slotpass import run_pass
    env = pool
    await env.node()
    await env.step()
    [job] = env.jobs()
    labels = {**job["spec"]["template"]["metadata"]["labels"], "job-name": job["metadata"]["name"]}
    pod = "worker-01-unwanted-1-x7k2p"
    await env.lab.create({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": pod, "namespace": NS,
                                                                          "labels": labels},
                          "spec": {"restartPolicy": "Never", "containers": [{"name": "runner", "image": "runner:test"}]}})
    await env.lab.patch("pods", pod, {"status": {"phase": "Running"}}, namespace=NS, subresource="status")
    await env.lab.delete("jobs.batch", job["metadata"]["name"], namespace=NS, propagation="Orphan")
    # as on kube-apiserver, an Orphan delete holds the Job (finalizer `orphan`) until the collector has freed its
    # pods from it: wait for the Job to leave the store, the moment the test is about
    for _ in range(200):
        if env.lab.get("jobs.batch", job["metadata"]["name"], NS) is None:
            break
        await asyncio.sleep(0.05)
    assert env.lab.get("jobs.batch", job["metadata"]["name"], NS) is None, "the collector never released the Job"
    await env.claim("c1")
    await env.step()
    assert env.jobs() == [], "the startup began while a shutdown pod may still power the machine off"
    assert env.claim_status("c1")["phase"] == "pending"
    assert pod in env.claim_status("c1")["message"]
    [said] = [e for e in env.lab.list("events", "default")
              if e["involvedObject"]["name"] == "c1" and e["reason"] == "WaitingForShutdown"]
    assert pod in said["message"]
    await env.refill()
    waiting = await run_pass(env.ctx, "worker-01")  # a pod's end is not watched: the pass asks to look again
    assert not waiting.wrote and waiting.wake == env.clock.now + env.ctx.settings.job_poll_interval
    # the pod ends (the power command was sent or not): the launch goes ahead
    await env.lab.patch("pods", pod, {"status": {"phase": "Succeeded"}}, namespace=NS, subresource="status")
    await env.step()
    assert env.claim_status("c1")["startupJob"] == "c1-startup"


async def test_only_this_slots_shutdown_pods_hold_its_launch(pool):
    """Another slot's shutdown pod, or a startup pod of this slot, still running in the Jobs' namespace with
    no Job, holds nothing: the launch looks for this slot's shutdown pods by their labels."""
    env = pool
    others = {"worker-02-shutdown-1-a1b2c": {names.LABEL_SLOT: "worker-02", names.LABEL_JOB_KIND: "shutdown"},
              "c0-startup-d3e4f": {names.LABEL_SLOT: "worker-01", names.LABEL_JOB_KIND: "startup"}}
    for pod, labels in others.items():
        await env.lab.create({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": pod, "namespace": NS,
                                                                              "labels": labels},
                              "spec": {"restartPolicy": "Never",
                                       "containers": [{"name": "runner", "image": "runner:test"}]}})
        await env.lab.patch("pods", pod, {"status": {"phase": "Running"}}, namespace=NS, subresource="status")
    await env.claim("c1")
    await env.step(times=2)
    status = env.claim_status("c1")
    assert (status["phase"], status.get("startupJob")) == ("booting", "c1-startup"), status
