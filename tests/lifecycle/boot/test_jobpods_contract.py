"""lifecycle.jobpods.look against the lab API server: when a running startup Job's pod is asked about, and how often.

A Job with no pod yet is asked again POD_RECHECK later; the Events read is for the one pending pod; a
Job whose pods have all left Pending (started or ended) is never asked again; a refused read is logged
once, with the Job and the error, and ends the looking; a read dropped on its way is logged and asked again.
The tests play the Job controller (the pods), the kubelet (their status) and the clock. (Each test's Job has
its own uid, so the module's memory of Jobs already looked at carries nothing from one test to the next.)
"""
from __future__ import annotations

import logging
from datetime import timedelta

import pytest

from homecluster.lifecycle import jobpods

pytestmark = pytest.mark.lab
NS = "homecluster-system"
OPERATOR = "homecluster-operator"


def reads(env, resource: str) -> list:
    return env.lab.audit.select(resource, verbs=["list"], user_agent=OPERATOR)


async def test_a_job_without_a_pod_yet_is_asked_again_after_the_recheck_and_its_events_are_not_read(env):
    await env.booting()
    env.lab.audit.clear()
    result = await env.step()
    assert [e.namespace for e in reads(env, "pods")] == [NS]
    assert reads(env, "events") == []  # no pending pod: nothing to ask the Events about
    assert result.wake == env.clock.now + jobpods.POD_RECHECK == env.clock.now + timedelta(seconds=5)
    env.clock.advance(seconds=5)
    env.lab.audit.clear()
    await env.step()
    assert len(reads(env, "pods")) == 1  # still no pod: asked again


async def test_the_events_read_are_the_pending_pods_beside_one_that_ended(env):
    await env.booting()
    await env.job_pod("c1-startup-aaaaa", "Failed")
    await env.job_pod("c1-startup-bbbbb", "Pending")
    await env.job_pod("other-zzzzz", "Pending", job="c2-startup")  # another Job's pod: not this Job's
    env.lab.audit.clear()
    result = await env.step()
    assert [e.field_selector for e in reads(env, "events")] == [
        "involvedObject.kind=Pod,involvedObject.name=c1-startup-bbbbb"]
    assert result.wake == env.clock.now + jobpods.POD_RECHECK
    assert env.claim_status()["phase"] == "booting"


async def test_a_job_whose_pods_all_ended_is_not_asked_again(env):
    await env.booting()
    await env.job_pod("c1-startup-aaaaa", "Failed")  # its retry not created yet: the Job still runs
    env.lab.audit.clear()
    result = await env.step()
    assert len(reads(env, "pods")) == 1 and reads(env, "events") == []
    assert result.wake != env.clock.now + jobpods.POD_RECHECK  # only the boot's own clocks wake it
    env.clock.advance(seconds=6)
    env.lab.audit.clear()
    await env.step()
    assert reads(env, "pods") == []


async def test_a_refused_events_read_is_logged_with_the_job_and_ends_the_looking(env, logged):
    await env.booting()
    await env.job_pod("c1-startup-bbbbb", "Pending")
    env.lab.faults.fail_next("events", count=1, code=403, verbs=["list"])
    with logged(logging.getLogger(jobpods.__name__), logging.WARNING) as records:
        result = await env.step()
    said = [r.getMessage() for r in records]
    assert len(said) == 1, said
    assert said[0].startswith(f"Job {NS}/c1-startup: cannot read its pod or the pod's Events to see why it has not "
                              f"started (") and said[0].endswith(
        "); not looking again, the Job's own deadline ends it"), said
    assert "403" in said[0], said
    assert result.wake != env.clock.now + jobpods.POD_RECHECK and env.claim_status()["phase"] == "booting"
    env.clock.advance(seconds=6)
    env.lab.audit.clear()
    await env.step()
    assert reads(env, "pods") == [] and reads(env, "events") == []


async def test_a_read_dropped_on_its_way_is_logged_and_asked_again_at_the_recheck(env, logged):
    """A dropped connection is no refusal: the pass goes on and the pod is asked about again POD_RECHECK later
    (before, only ApiError was caught: the whole pass failed on it)."""
    await env.booting()
    await env.job_pod("c1-startup-bbbbb", "Pending")
    env.lab.faults.fail_next("events", count=2, code="disconnect", verbs=["list"])  # aiohttp resends a GET once
    with logged(logging.getLogger(jobpods.__name__), logging.WARNING) as records:
        result = await env.step()
    said = [r.getMessage() for r in records]
    assert len(said) == 1 and said[0].startswith(
        f"Job {NS}/c1-startup: the read of its pod or the pod's Events failed (ServerDisconnectedError"), said
    assert said[0].endswith("; asking again in 5 s"), said
    assert result.wake == env.clock.now + jobpods.POD_RECHECK and env.claim_status()["phase"] == "booting"
    env.clock.advance(seconds=5)
    env.lab.audit.clear()
    await env.step()
    assert len(reads(env, "pods")) == 1 and len(reads(env, "events")) == 1  # asked again, all of it


async def test_a_job_whose_pod_started_is_not_asked_again_after_the_job_controller_updates_it(env):
    """The memory of Jobs already looked at is keyed on the Job (namespace, name, uid), not on its version: the
    Job controller's status writes (a new resourceVersion) do not make it asked about again."""
    await env.booting()
    await env.job_pod("c1-startup-aaaaa", "Running")
    env.lab.audit.clear()
    await env.step()
    assert len(reads(env, "pods")) == 1
    before = env.get("jobs.batch", "c1-startup", NS)["metadata"]["resourceVersion"]
    await env.lab.patch("jobs.batch", "c1-startup", {"status": {"active": 1, "ready": 1}}, namespace=NS,
                        subresource="status")  # play the Job controller: its pod is running and ready
    assert env.get("jobs.batch", "c1-startup", NS)["metadata"]["resourceVersion"] != before
    env.clock.advance(seconds=6)
    env.lab.audit.clear()
    await env.step()
    assert reads(env, "pods") == [] and env.claim_status()["phase"] == "booting"
