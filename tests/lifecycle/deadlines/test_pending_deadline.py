"""A pending claim whose deadline passes while its machine is on: failed DeadlineExceeded, forced off when
its Node is not usable (a boot that overran); a usable Node (maybe running pods) is left to the unwanted
machine's graceful shutdown (table row 11).

The seed: when the deadline passes "the machine is force-shut-down". No startup Job was created, so
the claim is not an attempt: the slot's lastClaim stays as it was.
"""
from __future__ import annotations

import json
from datetime import timedelta

import pytest

pytestmark = pytest.mark.lab


def job_vars(job):
    return json.loads(job["spec"]["template"]["metadata"]["annotations"]["infra.homecluster.dev/job-vars"])


async def test_pending_past_its_deadline_with_a_boot_that_overran_is_forced_off(env):
    # on, but not usable: Ready with the pool's readiness taint still on (a boot that overran)
    await env.group(nodeReadinessTaints=[{"key": "node.example/cni-not-ready"}])
    await env.slot()
    await env.node(taints=[{"key": "node.example/cni-not-ready", "effect": "NoSchedule"}])
    await env.claim("late", deadline=timedelta(seconds=-1))
    await env.step()
    status = env.claim_status("late")
    assert (status["phase"], status["reason"]) == ("failed", "DeadlineExceeded")
    assert not status.get("startupJob")
    assert status["shutdownAttempts"] == 1
    names = [j["metadata"]["name"] for j in env.jobs()]
    assert names == ["late-shutdown-1"], names  # no startup Job; one shutdown Job, counted on the claim
    assert job_vars(env.jobs()[0])["force"] is True
    assert "lastClaim" not in env.slot_status()  # no startup Job: not an attempt
    # the forced Job is the claim's: the finalizer was added before it was fired, so a delete waits for it
    from homecluster import names as hc
    claim = env.get("nodeclaims.infra.homecluster.dev", "late")
    assert hc.FINALIZER in claim["metadata"]["finalizers"]
    await env.lab.delete("nodeclaims.infra.homecluster.dev", "late")
    await env.step()
    env.lab.collector.run_once()  # the lab's garbage collector, now rather than raced
    assert env.get("jobs.batch", "late-shutdown-1", "homecluster-system") is not None
    await env.job_done("late-shutdown-1")
    await env.step()
    assert env.get("nodeclaims.infra.homecluster.dev", "late") is None


async def test_pending_past_its_deadline_with_a_usable_node_is_never_hard_powered_off(env):
    # a Ready, usable machine (powered on out of band while the operator was down, maybe running pods):
    # the claim fails with nothing fired by it; the machine is then unwanted (row 11): a GRACEFUL shutdown
    # with cordon and drain, counted on the slot
    await env.group()
    await env.slot()
    await env.node()
    await env.claim("late", deadline=timedelta(seconds=-1))
    await env.step()
    status = env.claim_status("late")
    assert (status["phase"], status["reason"]) == ("failed", "DeadlineExceeded")
    assert not status.get("startupJob") and not status.get("shutdownAttempts")
    jobs = env.jobs()
    assert [j["metadata"]["name"] for j in jobs] == ["worker-01-unwanted-1"], jobs
    assert job_vars(jobs[0])["force"] is False
    assert env.slot_status()["shutdown"]["attempts"] == 1
    assert "lastClaim" not in env.slot_status()


async def test_pending_past_its_deadline_with_the_machine_off_buys_nothing(env):
    await env.group()
    await env.slot()
    await env.claim("late", deadline=timedelta(seconds=-1))
    await env.step()
    assert env.claim_status("late")["reason"] == "DeadlineExceeded"
    assert env.jobs() == []
