"""Only a claim whose startup Job was created is an attempt (model.attempts.counts_as_attempt).

A claim that fails before buying a machine -- GroupNotFound, a startup Job refused for a bad slot
spec, DeadlineExceeded while still pending -- ends failed with its own reason and is not written to
the slot's lastClaim, so it neither extends nor resets the streak. Each test first builds a streak of
one real failed boot, so "does not move" is told apart from "restarts at 1".
"""
from __future__ import annotations

from datetime import timedelta

import pytest

from homecluster.model.timestamps import format_time, parse_time

pytestmark = pytest.mark.lab

CLAIMS = "nodeclaims.infra.homecluster.dev"
SLOTS = "nodes.infra.homecluster.dev"
NS = "homecluster-system"


@pytest.fixture
async def failed_once(env):
    """A pool whose slot has one failed boot on record: lastClaim = c0, attempt 1, failed."""
    await env.group()
    await env.slot()
    await env.claim("c0")
    await env.step()
    assert env.claim_status("c0")["phase"] == "booting"
    await env.job_done("c0-startup", "failed")
    await env.step()
    await env.job_done("c0-shutdown-1")
    env.clock.advance(seconds=10)
    await env.step()
    assert (env.slot_status()["lastClaim"]["name"], env.slot_status()["lastClaim"]["attempt"]) == ("c0", 1)
    return env


async def assert_streak_unmoved(env, failed: str, reason: str):
    """`failed` ended with `reason`, created no Job, left lastClaim on c0, and the next claim is attempt 2."""
    status = env.claim_status(failed)
    assert (status["phase"], status["reason"], status["attempt"]) == ("failed", reason, 2), status
    assert not status.get("startupJob")
    assert not [j for j in env.jobs() if j["metadata"]["name"].startswith(failed)]
    assert env.slot_status()["lastClaim"]["name"] == "c0"
    env.clock.advance(seconds=10)
    await env.claim("next")
    await env.step()
    assert env.claim_status("next")["attempt"] == 2  # c0's failure + 1: the refused claim was not an attempt


async def test_group_not_found_does_not_move_the_streak(failed_once):
    env = failed_once
    await env.lab.patch(SLOTS, "worker-01", {"spec": {"groupRef": "typo"}})
    await env.claim("c1")
    await env.step()
    await env.lab.patch(SLOTS, "worker-01", {"spec": {"groupRef": "workers"}})
    await assert_streak_unmoved(env, "c1", "GroupNotFound")
    assert env.claim_status("next")["phase"] == "booting"


async def test_a_startup_job_refused_for_a_bad_slot_spec_does_not_move_the_streak(failed_once):
    env = failed_once
    ipmi = {"address": "127.0.0.1", "port": 6230,
            "credentialsSecretRef": {"name": "worker-01-bmc", "namespace": "elsewhere"}}
    await env.lab.patch(SLOTS, "worker-01", {"spec": {"power": {"ipmi": ipmi}}})
    await env.claim("c1")
    await env.step()
    assert "cannot build the startup Job" in env.claim_status("c1")["message"]
    ipmi["credentialsSecretRef"]["namespace"] = None
    await env.lab.patch(SLOTS, "worker-01", {"spec": {"power": {"ipmi": ipmi}}})
    await assert_streak_unmoved(env, "c1", "StartupJobFailed")
    assert env.claim_status("next")["phase"] == "booting"


async def test_deadline_exceeded_while_pending_does_not_move_the_streak(failed_once):
    env = failed_once
    await env.claim("c1", deadline=timedelta(seconds=-1))  # its budget is spent before the first pass
    await env.step()
    await assert_streak_unmoved(env, "c1", "DeadlineExceeded")


async def test_a_typo_no_longer_locks_a_slot_out(env):
    """Four claims refused for a missing Group, then the Group is created: the next claim boots as attempt 1."""
    await env.group()
    await env.slot(group="wrokers")
    for n in range(1, 5):
        await env.claim(f"typo{n}")
        await env.step()
        status = env.claim_status(f"typo{n}")
        assert (status["reason"], status["attempt"]) == ("GroupNotFound", 1)
        env.clock.advance(seconds=1)
    assert "lastClaim" not in env.slot_status()
    await env.lab.patch(SLOTS, "worker-01", {"spec": {"groupRef": "workers"}})
    await env.claim("fixed")
    await env.step()
    status = env.claim_status("fixed")
    assert (status["phase"], status["attempt"]) == ("booting", 1)


async def blocked_pod(env, job: str, *, span: float = 40.0, count: int = 5) -> dict:
    """Play the kubelet: the Job's pod waits in ContainerCreating, and a Warning FailedMount Event on it was
    repeated `count` times over `span` seconds (the credentials Secret is missing)."""
    pod = await env.lab.create({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": f"{job}-x7k2p", "namespace": NS, "labels": {"job-name": job}},
        "spec": {"containers": [{"name": "ansible-runner", "image": "runner:test"}]}})
    waiting = {"reason": "ContainerCreating"}
    await env.lab.patch("pods", pod["metadata"]["name"], {"status": {"phase": "Pending", "containerStatuses": [
        {"name": "ansible-runner", "ready": False, "restartCount": 0, "image": "runner:test", "imageID": "",
         "state": {"waiting": waiting}}]}}, namespace=NS, subresource="status")
    first = parse_time(pod["metadata"]["creationTimestamp"])
    await env.lab.create({
        "apiVersion": "v1", "kind": "Event", "metadata": {"name": f"{pod['metadata']['name']}.fm", "namespace": NS},
        "involvedObject": {"apiVersion": "v1", "kind": "Pod", "namespace": NS, "name": pod["metadata"]["name"],
                           "uid": pod["metadata"].get("uid", "")},
        "type": "Warning", "reason": "FailedMount", "count": count,
        "message": 'MountVolume.SetUp failed for volume "credentials" : secret "worker-01-bmc" not found',
        "firstTimestamp": format_time(first), "lastTimestamp": format_time(first + timedelta(seconds=span))})
    env.clock.now = max(env.clock.now, first + timedelta(seconds=span + 1))
    return pod


async def test_a_startup_pod_that_never_started_does_not_move_the_streak(failed_once):
    """StartupPodBlocked: the Job was created (status.startupJob), but its pod never ran: nothing was powered."""
    env = failed_once
    await env.claim("c1")
    await env.step()
    assert env.claim_status("c1")["phase"] == "booting"
    await blocked_pod(env, "c1-startup")
    await env.step()
    status = env.claim_status("c1")
    assert (status["phase"], status["reason"], status["attempt"]) == ("failed", "StartupPodBlocked", 2), status
    assert env.slot_status()["lastClaim"]["name"] == "c0"
    env.clock.advance(seconds=10)
    await env.claim("next")
    await env.step()
    assert env.claim_status("next")["attempt"] == 2  # c0's failure + 1: the blocked claim was not an attempt
