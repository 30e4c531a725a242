"""lifecycle.deadlines.fail_boot on the lab's API server: what a failed boot stops, fires and says.

A boot out of time stops its running startup Job, fires the forced shutdown counted on the claim, and lands
`failed` naming both; a startup Job that already ended is left for the record. A Job under the forced
shutdown's name that belongs to someone else is not adopted: the claim fails without the shutdown and its
message says why, whole.
"""
from __future__ import annotations

from datetime import timedelta

import pytest

pytestmark = pytest.mark.lab
NS = "homecluster-system"
CLAIMS = "nodeclaims.infra.homecluster.dev"
DEADLINE = "spec.deadlineAt passed before the machine was ready"
PREFIX = 'NodeClaim "c1" on slot "worker-01", attempt 1: '


def job_names(env) -> list[str]:
    return sorted(j["metadata"]["name"] for j in env.jobs())


async def test_a_boot_out_of_time_stops_its_job_and_fires_the_forced_shutdown(pool):
    env = pool
    await env.claim("c1", deadline=timedelta(seconds=30))
    await env.step()
    assert job_names(env) == ["c1-startup"]
    env.clock.advance(seconds=31)
    before = len(env.writes())
    await env.step()
    status = env.claim_status()
    assert (status["phase"], status["reason"], status["message"]) == ("failed", "DeadlineExceeded", DEADLINE)
    # the failure and the shutdown's count land in ONE status write, refused by nobody
    assert [(w.verb, w.subresource, w.code) for w in env.writes()[before:] if w.resource == "nodeclaims"] == [
        ("patch", "status", 200)]
    assert (status["shutdownJob"], status["shutdownAttempts"]) == ("c1-shutdown-1", 1)
    assert job_names(env) == ["c1-shutdown-1"]  # the running startup Job is gone: it cannot power on later
    [job] = env.jobs()
    assert job["metadata"]["labels"]["infra.homecluster.dev/job-kind"] == "shutdown"


async def test_a_startup_job_that_already_ended_is_kept(pool):
    env = pool
    await env.claim("c1", deadline=timedelta(seconds=30))
    await env.step()
    await env.job_done("c1-startup", "failed")
    await env.step()
    status = env.claim_status()
    assert status["phase"] == "failed", status
    assert status["shutdownJob"] == "c1-shutdown-1"
    assert job_names(env) == ["c1-shutdown-1", "c1-startup"]  # an ended Job is the record, not deleted


async def test_a_foreign_job_at_the_forced_shutdowns_name_is_named_in_the_failure(pool):
    env = pool
    keeper = await env.lab.create({"apiVersion": "v1", "kind": "ConfigMap",
                                   "metadata": {"name": "keeper", "namespace": NS}, "data": {}})
    await env.lab.create({"apiVersion": "batch/v1", "kind": "Job", "metadata": {
        "name": "c1-shutdown-1", "namespace": NS,
        "ownerReferences": [{"apiVersion": "v1", "kind": "ConfigMap", "name": "keeper",
                             "uid": keeper["metadata"]["uid"], "controller": True}]},
        "spec": {"template": {"spec": {"restartPolicy": "Never", "containers": [{"name": "x", "image": "other:1"}]}}}})
    claim = await env.claim("c1", deadline=timedelta(seconds=30))
    await env.step()
    env.clock.advance(seconds=31)
    await env.step()
    foreign = (f'Job {NS}/c1-shutdown-1 already exists and belongs to ConfigMap "keeper" '
               f'(uid {keeper["metadata"]["uid"]}), not to this step\'s owner (uid {claim["metadata"]["uid"]}); '
               f"it was not adopted. Delete that Job if it is a leftover")
    message = f"{DEADLINE}; no forced shutdown was fired: {foreign}"
    status = env.claim_status()
    assert (status["phase"], status["reason"], status["message"]) == ("failed", "DeadlineExceeded", message)
    assert "shutdownJob" not in status and "shutdownAttempts" not in status
    assert status["conditions"][0]["message"] == message
    [job] = env.jobs()  # the startup Job stopped; the foreign Job neither adopted nor deleted
    assert (job["metadata"]["name"], job["spec"]["template"]["spec"]["containers"][0]["image"]) == (
        "c1-shutdown-1", "other:1")
    said = [(e["type"], e["message"]) for e in env.lab.list("events", "default")
            if e["involvedObject"]["name"] == "c1" and e["reason"] == "DeadlineExceeded"]
    assert said == [("Warning", PREFIX + message)]
