"""lifecycle.jobio against the lab API server: what a lifecycle Job's end records, and what a create meets.

observe_job_end: a finished Job's run time goes to homecluster_job_duration_seconds once, labelled with
its kind and outcome (the Job's own startTime to its completionTime, or to its Failed condition's time);
a running Job is not timed yet. create_job: the Job it writes is the builder's body in the Jobs'
namespace; a create that meets its own Job (409) reads it back and goes on without a second write.
The tests play the Job controller (the Job's status) and the clock.
"""
from __future__ import annotations

from datetime import timedelta

import pytest

from homecluster.lifecycle import jobio
from homecluster.model.timestamps import format_time

pytestmark = pytest.mark.lab
NS = "homecluster-system"
OPERATOR = "homecluster-operator"
HISTOGRAM = "homecluster_job_duration_seconds"


def timed(env, kind: str, outcome: str) -> tuple[float, float]:
    """(count, sum) of the Job duration histogram's series for `kind` and `outcome`."""
    labels = {"kind": kind, "outcome": outcome}
    registry = env.ctx.metrics.registry
    count = registry.get_sample_value(f"{HISTOGRAM}_count", labels) or 0.0
    total = registry.get_sample_value(f"{HISTOGRAM}_sum", labels) or 0.0
    return count, total


async def end_job(env, name: str, outcome: str, *, ran: float) -> None:
    """Play the Job controller: the Job started `ran` seconds ago and ends now, as `outcome`."""
    start, end = format_time(env.clock.now - timedelta(seconds=ran)), format_time(env.clock.now)
    if outcome == "succeeded":
        status = {"conditions": [{"type": "Complete", "status": "True", "lastTransitionTime": end}],
                  "succeeded": 1, "startTime": start, "completionTime": end}
    else:
        reason = "DeadlineExceeded" if outcome == "timed_out" else "BackoffLimitExceeded"
        status = {"conditions": [{"type": "Failed", "status": "True", "reason": reason, "message": "x",
                                  "lastTransitionTime": end}], "failed": 1, "startTime": start}
    await env.lab.patch("jobs.batch", name, {"status": status}, namespace=NS, subresource="status")


async def test_a_succeeded_startup_job_is_timed_once_from_its_start_to_its_completion(env):
    await env.booting()
    env.clock.advance(seconds=10)
    await env.lab.patch("jobs.batch", "c1-startup", {"status": {"startTime": format_time(env.clock.now),
                                                                "active": 1}}, namespace=NS, subresource="status")
    await env.step()  # running: not timed, and not remembered as timed
    assert timed(env, "startup", "succeeded") == (0.0, 0.0) and env.ctx.jobs_timed == {}
    env.clock.advance(seconds=42)
    await end_job(env, "c1-startup", "succeeded", ran=42)
    await env.step()
    assert timed(env, "startup", "succeeded") == (1.0, 42.0)
    uid = env.get("jobs.batch", "c1-startup", NS)["metadata"]["uid"]
    assert list(env.ctx.jobs_timed) == [uid]
    env.clock.advance(seconds=1)
    await env.step()  # the same Job seen again (every pass until the Node joins): not timed twice
    await env.step()
    assert timed(env, "startup", "succeeded") == (1.0, 42.0)
    assert timed(env, "startup", "failed") == (0.0, 0.0)


@pytest.mark.parametrize("outcome", ["failed", "timed_out"])
async def test_a_failed_startup_job_is_timed_to_its_failed_condition_under_its_outcome(env, outcome):
    await env.booting()
    env.clock.advance(seconds=20)
    await end_job(env, "c1-startup", outcome, ran=17)
    await env.step()
    assert env.claim_status()["phase"] == "failed"
    assert timed(env, "startup", outcome) == (1.0, 17.0)
    assert timed(env, "startup", "succeeded") == (0.0, 0.0)


async def test_a_job_with_no_start_time_is_remembered_but_not_timed(env):
    await env.booting()
    await env.lab.patch("jobs.batch", "c1-startup", {"status": {"conditions": [
        {"type": "Complete", "status": "True", "lastTransitionTime": format_time(env.clock.now)}], "succeeded": 1,
        "completionTime": format_time(env.clock.now)}}, namespace=NS, subresource="status")
    await env.step()
    assert timed(env, "startup", "succeeded") == (0.0, 0.0)
    assert len(env.ctx.jobs_timed) == 1


async def test_the_timed_uids_are_bounded_and_the_oldest_goes_first(env):
    await env.booting()
    env.ctx.jobs_timed.update((f"old-{i}", None) for i in range(jobio._TIMED_JOBS_KEPT))
    await end_job(env, "c1-startup", "succeeded", ran=5)
    await env.step()
    uid = env.get("jobs.batch", "c1-startup", NS)["metadata"]["uid"]
    assert len(env.ctx.jobs_timed) == jobio._TIMED_JOBS_KEPT == 4096
    assert "old-0" not in env.ctx.jobs_timed and "old-1" in env.ctx.jobs_timed
    assert list(env.ctx.jobs_timed)[-1] == uid
    assert timed(env, "startup", "succeeded") == (1.0, 5.0)


async def seeded(env) -> None:
    """worker-01's claim c1 seeded (attempt 1, pending) in a pass of its own; nothing bought yet."""
    from homecluster.lifecycle.slotpass import run_pass
    await env.group()
    await env.slot()
    await env.claim()
    await env.refill()
    await run_pass(env.ctx, "worker-01")
    assert env.claim_status()["phase"] == "pending" and env.jobs() == []


async def plant_startup_job(env, owner: dict) -> dict:
    """A Job under c1's startup name, controlled by `owner` (as if created before a crash, or by someone else),
    labelled as ours (so the operator's cache lists it)."""
    from homecluster import names
    labels = {names.LABEL_SLOT: "worker-01", names.LABEL_JOB_KIND: "startup", names.LABEL_MANAGED_BY: names.MANAGED_BY,
              names.LABEL_CLAIM: "c1"}
    ref = {"apiVersion": owner["apiVersion"], "kind": owner["kind"], "name": owner["metadata"]["name"],
           "uid": owner["metadata"]["uid"], "controller": True}
    return await env.lab.create({"apiVersion": "batch/v1", "kind": "Job", "metadata": {
        "name": "c1-startup", "namespace": NS, "labels": labels, "ownerReferences": [ref]},
        "spec": {"template": {"spec": {"restartPolicy": "Never", "containers": [{"name": "x", "image": "runner:test"}]}}}})


async def test_a_created_job_is_logged_and_held_in_the_cache_at_once(env, logged):
    import logging
    from homecluster.lifecycle.slotpass import run_pass
    await seeded(env)
    await env.refill()
    with logged(env.ctx.log, logging.INFO) as records:
        await run_pass(env.ctx, "worker-01")  # no refill after it: what the cache holds is what the pass put there
    job = env.get("jobs.batch", "c1-startup", NS)
    assert job is not None and env.claim_status()["startupJob"] == "c1-startup"
    held = env.ctx.store.job("c1-startup")
    assert held is not None and held["metadata"]["resourceVersion"] == job["metadata"]["resourceVersion"]
    assert f"created Job {NS}/c1-startup" in [r.getMessage() for r in records]
    creates = env.lab.audit.select("jobs", verbs=["create"], user_agent=OPERATOR)
    assert [(e.namespace, e.code) for e in creates] == [(NS, 201)]


async def test_a_create_that_meets_its_own_job_unseen_reads_it_back_and_boots(env):
    """Created before a crash, not yet in the cache: the 409 is success, the Job is read by name, once."""
    from homecluster.lifecycle.slotpass import run_pass
    await seeded(env)
    await env.refill()
    claim = env.get("nodeclaims.infra.homecluster.dev", "c1")
    planted = await plant_startup_job(env, claim)
    env.lab.audit.clear()
    await run_pass(env.ctx, "worker-01")
    assert [e.code for e in env.lab.audit.select("jobs", verbs=["create"], user_agent=OPERATOR)] == [409]
    gets = env.lab.audit.select("jobs", verbs=["get"], user_agent=OPERATOR)
    assert [(e.namespace, e.name) for e in gets] == [(NS, "c1-startup")]
    status = env.claim_status()
    assert (status["phase"], status["startupJob"]) == ("booting", "c1-startup"), status
    assert env.ctx.store.job("c1-startup")["metadata"]["uid"] == planted["metadata"]["uid"]
    assert [j["metadata"]["uid"] for j in env.jobs()] == [planted["metadata"]["uid"]]


async def test_a_create_that_meets_its_own_job_in_the_cache_does_not_read_it_again(env):
    await seeded(env)
    claim = env.get("nodeclaims.infra.homecluster.dev", "c1")
    await plant_startup_job(env, claim)
    env.lab.audit.clear()
    await env.step()
    assert [e.code for e in env.lab.audit.select("jobs", verbs=["create"], user_agent=OPERATOR)] == [409]
    assert [(e.verb, e.name) for e in env.lab.audit.select("jobs", verbs=["get"], user_agent=OPERATOR)] == []
    assert env.claim_status()["phase"] == "booting"


async def test_a_foreign_job_read_back_by_name_is_named_with_its_owner(env):
    from homecluster.lifecycle.slotpass import run_pass
    await seeded(env)
    await env.refill()
    other = await env.lab.create({"apiVersion": "v1", "kind": "ConfigMap",
                                  "metadata": {"name": "keeper", "namespace": NS}, "data": {}})
    await plant_startup_job(env, other)
    await run_pass(env.ctx, "worker-01")
    claim = env.get("nodeclaims.infra.homecluster.dev", "c1")
    status = env.claim_status()
    assert (status["phase"], status["reason"]) == ("failed", "StartupJobFailed"), status
    assert status["message"] == (
        f'Job {NS}/c1-startup already exists and belongs to ConfigMap "keeper" (uid {other["metadata"]["uid"]}), '
        f'not to this step\'s owner (uid {claim["metadata"]["uid"]}); it was not adopted. Delete that Job if it is '
        f"a leftover"), status
    assert env.lab.audit.count("jobs", verbs=["delete"], user_agent=OPERATOR) == 0


async def blocked_pod(env, job: dict) -> dict:
    """The startup Job's pod, owned by it, waiting on a bad image name: blocked at once (lifecycle.jobpods)."""
    name = f"{job['metadata']['name']}-x7k2p"
    pod = await env.lab.create({
        "apiVersion": "v1", "kind": "Pod", "metadata": {
            "name": name, "namespace": NS, "labels": {"job-name": job["metadata"]["name"]},
            "ownerReferences": [{"apiVersion": "batch/v1", "kind": "Job", "name": job["metadata"]["name"],
                                 "uid": job["metadata"]["uid"], "controller": True, "blockOwnerDeletion": True}]},
        "spec": {"containers": [{"name": "ansible-runner", "image": "runner:test"}]}})
    await env.lab.patch("pods", name, {"status": {"phase": "Pending", "containerStatuses": [
        {"name": "ansible-runner", "ready": False, "restartCount": 0, "image": "runner:test", "imageID": "",
         "state": {"waiting": {"reason": "InvalidImageName", "message": "bad"}}}]}}, namespace=NS,
        subresource="status")
    return pod


async def test_a_deleted_job_goes_at_once_and_its_pods_are_collected_after_it(env, logged):
    """Background propagation: not Foreground (the Job would wait for its pods), not Orphan (the pods would stay).
    The pod carries a finalizer of its own, so it outlives the Job's delete long enough to be looked at."""
    import asyncio
    import logging
    await env.booting()
    pod = await blocked_pod(env, env.get("jobs.batch", "c1-startup", NS))
    name = pod["metadata"]["name"]
    await env.lab.patch("pods", name, {"metadata": {"finalizers": ["example.com/hold"]}}, namespace=NS)
    with logged(env.ctx.log, logging.INFO) as records:
        await env.step()
    assert env.claim_status()["reason"] == "StartupPodBlocked"
    assert env.get("jobs.batch", "c1-startup", NS) is None  # gone at once, while its pod is still there
    assert f"deleted Job {NS}/c1-startup" in [r.getMessage() for r in records]
    for _ in range(200):  # the lab's garbage collector runs every 0.05 s
        if env.get("pods", name, NS)["metadata"].get("deletionTimestamp"):
            break
        await asyncio.sleep(0.05)
    assert env.get("pods", name, NS)["metadata"].get("deletionTimestamp"), "the Job's pod was not collected"
    await env.lab.patch("pods", name, {"metadata": {"finalizers": None}}, namespace=NS)


async def test_a_job_already_gone_when_deleted_is_no_error(env):
    await env.booting()
    await blocked_pod(env, env.get("jobs.batch", "c1-startup", NS))
    env.lab.faults.fail_next("jobs", count=1, code=404, verbs=["delete"])
    await env.step()
    status = env.claim_status()
    assert (status["phase"], status["reason"]) == ("failed", "StartupPodBlocked"), status
    assert [e.code for e in env.lab.audit.select("jobs", verbs=["delete"], user_agent=OPERATOR)] == [404]


async def test_a_job_whose_kind_label_was_removed_is_timed_as_unknown(env):
    await env.booting()
    await env.lab.patch("jobs.batch", "c1-startup", {"metadata": {"labels": {"infra.homecluster.dev/job-kind": None}}},
                        namespace=NS)
    await end_job(env, "c1-startup", "failed", ran=3)
    await env.step()
    assert timed(env, "unknown", "failed") == (1.0, 3.0)
    assert timed(env, "startup", "failed") == (0.0, 0.0)


async def test_a_startup_job_that_already_finished_when_met_again_is_kept_not_fired_twice(env):
    """Created, and finished, before the crash that lost the booting write: the 409 meets a finished Job of the
    claim's, which is its boot (only a shutdown's name met after its round is stale): kept, not deleted and
    created again (a second power-on)."""
    await seeded(env)
    claim = env.get("nodeclaims.infra.homecluster.dev", "c1")
    planted = await plant_startup_job(env, claim)
    await end_job(env, "c1-startup", "succeeded", ran=4)
    env.lab.audit.clear()
    await env.step()
    status = env.claim_status()
    assert (status["phase"], status["startupJob"]) == ("booting", "c1-startup"), status
    assert env.lab.audit.count("jobs", verbs=["delete"], user_agent=OPERATOR) == 0
    assert [j["metadata"]["uid"] for j in env.jobs()] == [planted["metadata"]["uid"]]
