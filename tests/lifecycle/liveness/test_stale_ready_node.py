"""A Node still reading Ready after its machine was powered off has not joined for a new boot.

A real kubelet posts nothing when its machine is switched off: the Node keeps `Ready=True` until the node
lifecycle controller marks it Unknown, after its grace period (40-50 s on a default cluster). A claim that
launches in that window must not take the old report for its own machine's join (found on the real control
plane by the shutdown race: a claim went ready 0.1 s after its startup Job was created, on a machine that was
off). The boot monitor reads a Node whose Ready condition began before the slot's last successful shutdown
Job ended as a report from before that power-off, until the startup Job has succeeded (the machine answered
its boot port after the power-on), and takes the join from then: docs/controller.md, "Stage clocks without
extra writes".
"""
from __future__ import annotations

from datetime import timedelta

import pytest

from homecluster import names

pytestmark = pytest.mark.lab


def shutdown_job(env) -> dict:
    [job] = [j for j in env.jobs() if j["metadata"]["labels"][names.LABEL_JOB_KIND] == "shutdown"]
    return job


async def powered_off_by_a_shutdown(env, outcome: str = "succeeded") -> None:
    """worker-01 on and unwanted, shut down by its Job; its Node keeps the Ready report from before (no
    kubelet posts NotReady). A `failed` Job leaves the machine on."""
    await env.node()  # Ready since now
    await env.step()
    job = shutdown_job(env)
    env.clock.advance(seconds=20)
    await env.job_done(job["metadata"]["name"], outcome)
    env.clock.advance(seconds=6)  # past the launch's grace (one job_poll_interval)


async def test_a_ready_report_from_before_the_power_off_is_not_the_new_boots_join(pool):
    env = pool
    await powered_off_by_a_shutdown(env)
    await env.claim("c1")
    await env.step(times=3)
    assert env.claim_status("c1")["phase"] == "booting"
    assert env.get("jobs.batch", "c1-startup", "homecluster-system") is not None
    env.clock.advance(seconds=3)
    await env.step(times=3)
    status = env.claim_status("c1")
    assert status["phase"] == "booting", "the claim went ready on a Node report older than the power-off"
    assert "registeredAt" not in status and "readyAt" not in status

    # the startup Job powers the machine on and sees it answer: now the Node's Ready is this boot's
    booted = env.clock.advance(seconds=30)
    await env.job_done("c1-startup")
    await env.step(times=3)
    status = env.claim_status("c1")
    assert status["phase"] == "ready"
    # joined when the startup Job saw the machine answer, not at the old report: the readiness gate's clock
    # starts there, after the whole startup
    stamp = booted.strftime("%Y-%m-%dT%H:%M:%SZ")
    assert (status["registeredAt"], status["readyAt"]) == (stamp, stamp)


async def test_after_a_failed_shutdown_a_ready_node_is_taken_at_once(pool):
    """A shutdown Job that failed is no evidence the machine went off: its Node's Ready is believed, and a
    claim on it goes ready without waiting for its startup Job (which may itself fail on a BMC that is down,
    and a failed boot would force the healthy machine off)."""
    env = pool
    await powered_off_by_a_shutdown(env, "failed")
    await env.claim("c1")
    await env.step(times=3)
    status = env.claim_status("c1")
    assert status["phase"] == "ready"
    assert env.get("jobs.batch", "c1-startup", "homecluster-system")["status"].get("succeeded") is None


async def test_a_node_that_went_ready_again_after_the_power_off_has_joined_before_the_job_ends(pool):
    env = pool
    await powered_off_by_a_shutdown(env)
    await env.claim("c1")
    await env.step(times=3)
    assert env.claim_status("c1")["phase"] == "booting"
    env.clock.advance(seconds=5)
    await env.node(ready=False)  # the node lifecycle controller's Unknown, or the kubelet's NotReady
    env.clock.advance(seconds=20)
    await env.node()  # the machine came up and its kubelet posted Ready: a transition after the power-off
    await env.step(times=3)
    assert env.claim_status("c1")["phase"] == "ready", "a Node that joined while the startup Job ran was not taken"


async def test_without_a_shutdown_on_record_a_ready_node_is_taken_at_once(pool):
    """Row 4 of the table: a pending claim whose machine is already on (and never shut down) goes ready
    as soon as its Node is usable, without waiting for the startup Job."""
    env = pool
    await env.claim("c1")
    await env.step()
    assert env.claim_status("c1")["phase"] == "booting"
    env.clock.advance(seconds=2)
    await env.node()
    await env.step(times=3)
    assert env.claim_status("c1")["phase"] == "ready"
    assert env.get("jobs.batch", "c1-startup", "homecluster-system")["status"].get("succeeded") is None


async def test_the_old_report_fails_the_boot_only_by_its_clocks(pool):
    """The stale report never counts: a startup Job that never succeeds ends the boot as StartupJobTimedOut,
    not as ready, and not as a readiness gate timeout on a Node that never joined."""
    env = pool
    await powered_off_by_a_shutdown(env)
    await env.claim("c1", deadline=timedelta(minutes=5))
    await env.step(times=3)
    env.clock.advance(seconds=61)
    await env.job_done("c1-startup", outcome="timed_out")
    await env.step(times=3)
    status = env.claim_status("c1")
    assert (status["phase"], status["reason"]) == ("failed", "StartupJobTimedOut")
