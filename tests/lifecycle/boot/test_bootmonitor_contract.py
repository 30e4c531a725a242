"""lifecycle.bootmonitor against the lab API server: the ready write's words, the gate's re-check, and which
ending of the startup Job still fails a boot.

The tests play the Job controller (the startup Job's status, or its deletion), the kubelet (the Node)
and the clock; each pass's `wake` is the moment the slot asks to be looked at again.
"""
from __future__ import annotations

import dataclasses
from datetime import timedelta

import pytest

from homecluster.model.timestamps import format_time, parse_time

pytestmark = pytest.mark.lab
NS = "homecluster-system"
OPERATOR = "homecluster-operator"
TAINT = "node.cilium.io/agent-not-ready"


async def test_a_joined_usable_node_moves_the_claim_to_ready_with_its_registration_time_and_words(env):
    await env.booting()
    env.clock.advance(seconds=10)
    await env.job_done("c1-startup")
    joined = env.clock.now - timedelta(seconds=3)  # the kubelet's clock: before the operator saw it
    await env.node(at=joined)
    result = await env.step()
    status = env.claim_status()
    assert (status["phase"], status["message"]) == ("ready", 'corev1 Node "worker-01" joined and is usable'), status
    assert status["registeredAt"] == format_time(joined)
    assert result.wake is None or result.wake > env.clock.now + timedelta(seconds=5)


async def test_a_joined_node_behind_the_gate_is_looked_at_again_within_the_retry_ceiling_at_most_2s(env):
    await env.booting(nodeReadinessTaints=[{"key": TAINT}])
    await env.job_done("c1-startup")
    await env.node(taints=[{"key": TAINT, "effect": "NoSchedule"}])
    result = await env.step()
    assert env.claim_status()["phase"] == "booting"
    assert result.wake == env.clock.now + timedelta(seconds=2)  # SHORT's ceiling is 2 s
    env.ctx.settings = dataclasses.replace(env.ctx.settings, uncordon_retry_ceiling=timedelta(seconds=1))
    result = await env.step()
    assert result.wake == env.clock.now + timedelta(seconds=1)
    env.ctx.settings = dataclasses.replace(env.ctx.settings, uncordon_retry_ceiling=timedelta(seconds=10))
    result = await env.step()
    assert result.wake == env.clock.now + timedelta(seconds=2)  # never later than 2 s
    env.clock.advance(seconds=58)  # 2 s before the readiness gate (60 s) ends: its clock is the nearer wake
    result = await env.step()
    assert env.claim_status()["phase"] == "booting"
    assert result.wake == env.clock.now + timedelta(seconds=2)
    env.clock.advance(seconds=61)
    env.ctx.settings = dataclasses.replace(env.ctx.settings, readiness_gate=timedelta(seconds=120))
    result = await env.step()
    assert result.wake == env.clock.now + timedelta(seconds=1)  # the gate's own clock (joined + 120 s) is nearer


async def test_a_startup_job_that_fails_after_the_node_joined_does_not_fail_the_boot(env):
    await env.booting(nodeReadinessTaints=[{"key": TAINT}])
    await env.node(taints=[{"key": TAINT, "effect": "NoSchedule"}])
    await env.step()
    await env.job_done("c1-startup", "failed")  # e.g. its last task failed after the power-on
    await env.step()
    status = env.claim_status()
    assert status["phase"] == "booting" and not status.get("reason"), status
    await env.node(taints=[])
    await env.step()
    assert env.claim_status()["phase"] == "ready"


@pytest.mark.parametrize("outcome,reason,words", [
    ("failed", "StartupJobFailed", "startup Job c1-startup failed: BackoffLimitExceeded: failed"),
    ("timed_out", "StartupJobTimedOut", "startup Job c1-startup timed out: DeadlineExceeded: timed_out")])
async def test_a_startup_job_that_ends_badly_before_the_node_joined_fails_the_boot_in_the_jobs_words(
        env, outcome, reason, words):
    await env.booting()
    await env.job_done("c1-startup", outcome)
    await env.step()
    status = env.claim_status()
    assert (status["phase"], status["reason"], status["message"]) == ("failed", reason, words), status


async def test_a_startup_job_without_words_fails_the_boot_with_its_outcome(env):
    await env.booting()
    stamp = format_time(env.clock.now)
    await env.lab.patch("jobs.batch", "c1-startup", {"status": {"conditions": [
        {"type": "Failed", "status": "True", "lastTransitionTime": stamp}], "failed": 1, "startTime": stamp}},
        namespace=NS, subresource="status")
    await env.step()
    status = env.claim_status()
    assert (status["reason"], status["message"]) == ("StartupJobFailed", "startup Job c1-startup failed: failed"), status


async def test_a_startup_job_that_is_gone_is_not_asked_about_and_the_boot_waits_for_its_clock(env):
    await env.booting()
    started = env.claim_status()["bootStartedAt"]
    await env.lab.delete("jobs.batch", "c1-startup", namespace=NS, propagation="Background")  # gone at once
    assert env.get("jobs.batch", "c1-startup", NS) is None
    env.lab.audit.clear()
    result = await env.step()
    assert env.claim_status()["phase"] == "booting"
    assert env.lab.audit.count("pods", verbs=["list"], user_agent=OPERATOR) == 0
    assert result.wake == parse_time(started) + env.ctx.settings.startup_job_timeout  # no pod re-check
