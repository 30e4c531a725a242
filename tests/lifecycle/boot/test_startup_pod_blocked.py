"""A startup Job's pod that cannot start: StartupPodBlocked only once the kubelet's failure has persisted.

The real pass against the lab API server; the tests play the kubelet (the pod's status, its Warning
Events, as a real kubelet's event recorder writes them: one Event per reason and message, whose count
and lastTimestamp grow with each failed retry) and the clock. SHORT keeps the default settle time (30 s).
"""
from __future__ import annotations

import asyncio
import logging
from datetime import timedelta

import pytest

from homecluster.model.timestamps import format_time, parse_time

pytestmark = pytest.mark.lab
NS = "homecluster-system"
OPERATOR = "homecluster-operator"
MESSAGE = 'MountVolume.SetUp failed for volume "credentials" : secret "worker-01-bmc" not found'


async def booting(env, name: str = "c1") -> None:
    await env.group()
    await env.slot()
    await env.claim(name)
    await env.step()
    assert env.claim_status(name)["phase"] == "booting"


async def pending_pod(env, job: str = "c1-startup", phase: str = "Pending") -> dict:
    pod = await env.lab.create({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": f"{job}-x7k2p", "namespace": NS, "labels": {"job-name": job}},
        "spec": {"containers": [{"name": "ansible-runner", "image": "runner:test"}]}})
    await set_phase(env, pod, phase)
    return pod


async def set_phase(env, pod: dict, phase: str) -> None:
    state = {"waiting": {"reason": "ContainerCreating"}} if phase == "Pending" else {"running": {}}
    await env.lab.patch("pods", pod["metadata"]["name"], {"status": {"phase": phase, "containerStatuses": [
        {"name": "ansible-runner", "ready": phase == "Running", "restartCount": 0, "image": "runner:test",
         "imageID": "", "state": state}]}}, namespace=NS, subresource="status")


async def failed_mount(env, pod: dict, *, count: int, span: float) -> None:
    """The kubelet's FailedMount Event on `pod`: `count` failures from its creation over `span` seconds."""
    first = parse_time(pod["metadata"]["creationTimestamp"])
    name = f"{pod['metadata']['name']}.fm"
    body = {"count": count, "lastTimestamp": format_time(first + timedelta(seconds=span))}
    if env.get("events", name, NS) is None:
        await env.lab.create({
            "apiVersion": "v1", "kind": "Event", "metadata": {"name": name, "namespace": NS},
            "involvedObject": {"apiVersion": "v1", "kind": "Pod", "namespace": NS, "name": pod["metadata"]["name"],
                               "uid": pod["metadata"].get("uid", "")},
            "type": "Warning", "reason": "FailedMount", "message": MESSAGE,
            "firstTimestamp": format_time(first), **body})
    else:
        await env.lab.patch("events", name, body, namespace=NS)
    env.clock.now = max(env.clock.now, first + timedelta(seconds=span + 1))


async def test_a_single_failed_mount_is_no_blocker_but_one_the_kubelet_kept_repeating_is(env):
    await booting(env)
    pod = await pending_pod(env)
    await failed_mount(env, pod, count=1, span=0)  # "failed to sync secret cache", or a Secret still on its way
    await env.step()
    assert env.claim_status("c1")["phase"] == "booting", env.claim_status("c1")
    await failed_mount(env, pod, count=3, span=6)  # still failing, but not for the settle time yet
    await env.step()
    assert env.claim_status("c1")["phase"] == "booting", env.claim_status("c1")

    await failed_mount(env, pod, count=7, span=35)
    await env.step()
    status = env.claim_status("c1")
    assert (status["phase"], status["reason"]) == ("failed", "StartupPodBlocked"), status
    assert MESSAGE in status["message"] and f"must exist in namespace {NS}" in status["message"], status
    assert not [j for j in env.jobs() if j["metadata"]["name"] == "c1-startup"]


async def test_the_events_of_the_one_pending_pod_are_read_and_a_started_pod_is_not_asked_again(env):
    await booting(env)
    pod = await pending_pod(env)
    env.lab.audit.clear()
    result = await env.step()
    reads = env.lab.audit.select("events", verbs=["list"], user_agent=OPERATOR)
    assert reads and all(e.namespace == NS and e.field_selector ==
                         f"involvedObject.kind=Pod,involvedObject.name={pod['metadata']['name']}" for e in reads), \
        [(e.namespace, e.field_selector) for e in reads]
    assert result.wake is not None and result.wake <= env.clock.now + timedelta(seconds=5)  # looks again soon

    await set_phase(env, pod, "Running")
    await env.step()
    env.lab.audit.clear()
    env.clock.advance(seconds=6)
    await env.step()
    env.clock.advance(seconds=6)
    await env.step()
    assert env.lab.audit.count("pods", verbs=["list"], user_agent=OPERATOR) == 0
    assert env.lab.audit.count("events", verbs=["list"], user_agent=OPERATOR) == 0
    assert env.claim_status("c1")["phase"] == "booting"


async def test_a_refused_pod_read_does_not_fail_the_pass_and_the_jobs_deadline_still_ends_it(env):
    await booting(env)
    await pending_pod(env)
    env.lab.faults.fail_next("pods", count=1, code=403, verbs=["list"])
    await env.step()  # no exception: the rest of the pass ran
    assert [e.code for e in env.lab.audit.select("pods", verbs=["list"], user_agent=OPERATOR)][-1] == 403
    assert env.claim_status("c1")["phase"] == "booting"
    env.lab.audit.clear()
    env.clock.advance(seconds=6)
    await env.step()
    assert env.lab.audit.count("pods", verbs=["list"], user_agent=OPERATOR) == 0  # logged once, not asked again
    await env.job_done("c1-startup", "timed_out")
    await env.step()
    assert env.claim_status("c1")["reason"] == "StartupJobTimedOut"


async def test_a_running_shutdown_job_whose_pod_cannot_start_is_deleted_and_the_claim_boots(env, logged):
    """hold_launch: a shutdown Job that can never start powers nothing off; it no longer holds a new claim
    for its whole shutdown_job_timeout."""
    await env.group()
    await env.slot()
    await env.node()  # on, and no claim wants it (row 2): its shutdown fires
    await env.step()
    [job] = [j for j in env.jobs() if "-unwanted-" in j["metadata"]["name"]]
    shutdown = job["metadata"]["name"]
    await env.claim("c1")
    await env.step()
    assert env.claim_status("c1")["phase"] == "pending"

    pod = await pending_pod(env, shutdown)
    await env.lab.patch("pods", pod["metadata"]["name"], {"metadata": {"ownerReferences": [
        {"apiVersion": "batch/v1", "kind": "Job", "name": shutdown, "uid": job["metadata"]["uid"],
         "controller": True, "blockOwnerDeletion": True}]}}, namespace=NS)
    await failed_mount(env, pod, count=1, span=0)  # a hiccup: the claim keeps waiting, the Job stays
    await env.step()
    assert env.claim_status("c1")["phase"] == "pending" and env.get("jobs.batch", shutdown, NS) is not None

    await failed_mount(env, pod, count=7, span=35)
    with logged(env.ctx.log, logging.WARNING) as records:
        await env.step()
    [said] = [e for e in env.lab.list("events", "default")
              if e["involvedObject"]["name"] == "c1" and e["reason"] == "ShutdownPodBlocked"]
    assert said["type"] == "Warning" and said["message"] == (
        f'NodeClaim "c1" on slot "worker-01", attempt 1: shutdown Job {shutdown} of slot "worker-01" cannot start its pod {pod["metadata"]["name"]}: FailedMount: '
        f"{MESSAGE}. It powered nothing off and was deleted; the startup goes ahead once its pod is gone (a Secret "
        f"the slot names must exist in namespace {NS})"), said
    # the operator's log says it too, with the claim's identity beside it (ClaimAdapter)
    text = said["message"].split(": ", 1)[1]
    # (the claim's identity is a prefix in text logs, a field in JSON logs: only the text is pinned)
    warned = [r.getMessage() for r in records if r.levelno == logging.WARNING and text in r.getMessage()]
    assert len(warned) == 1 and warned[0].endswith(f": {text}") or warned == [text], warned
    deletes = [e for e in env.lab.audit.select("jobs", verbs=["delete"], user_agent=OPERATOR) if e.name == shutdown]
    assert deletes, "the blocked shutdown Job was not deleted"
    for _ in range(100):  # the lab's garbage collector removes the pod, then the Job (Foreground)
        if env.get("jobs.batch", shutdown, NS) is None:
            break
        await asyncio.sleep(0.05)
    assert env.get("pods", pod["metadata"]["name"], NS) is None and env.get("jobs.batch", shutdown, NS) is None
    await env.step()
    status = env.claim_status("c1")
    # launched (the Node is up, so it may already be ready) well within the shutdown Job's 60 s timeout
    assert status["phase"] in ("booting", "ready") and status.get("startupJob") == "c1-startup", status


async def test_a_blocked_startup_pod_deletes_its_job_and_says_so_word_for_word(env):
    await booting(env)
    pod = await pending_pod(env)
    await failed_mount(env, pod, count=7, span=35)
    await env.step()
    status = env.claim_status("c1")
    head = f"startup Job c1-startup cannot start its pod {pod['metadata']['name']}: "
    tail = (f". The machine was not touched; fix what the message names (a Secret the slot's credentialsSecretRef "
            f"names must exist in namespace {NS}), and the next claim boots it")
    assert status["message"].startswith(head) and status["message"].endswith(tail), status["message"]
    assert MESSAGE in status["message"]
    deletes = env.lab.audit.select("jobs", verbs=["delete"], user_agent=OPERATOR)
    assert [e.name for e in deletes] == ["c1-startup"]
    [said] = [e for e in env.lab.list("events", "default")
              if e["involvedObject"]["name"] == "c1" and e["reason"] == "StartupPodBlocked"]
    assert said["type"] == "Warning"
    assert said["message"] == f'NodeClaim "c1" on slot "worker-01", attempt 1: {status["message"]}'
