"""Failed boots: each stage's timeout, the umbrella deadline, the forced shutdown, the attempt streak."""
from __future__ import annotations

from datetime import timedelta

import pytest

from homecluster.model.timestamps import parse_time

pytestmark = pytest.mark.lab

CLAIMS = "nodeclaims.infra.homecluster.dev"
SLOTS = "nodes.infra.homecluster.dev"
NS = "homecluster-system"


async def booting(env, name: str = "c1"):
    await env.claim(name)
    await env.step()
    assert env.claim_status(name)["phase"] == "booting"


def shutdown_jobs(env):
    return [j for j in env.jobs() if j["metadata"]["labels"]["infra.homecluster.dev/job-kind"] == "shutdown"]


def job_vars(job):
    import json
    return json.loads(job["spec"]["template"]["metadata"]["annotations"]["infra.homecluster.dev/job-vars"])


async def test_startup_job_failed_fires_forced_shutdown(pool):
    env = pool
    await booting(env)
    await env.job_done("c1-startup", "failed")
    await env.step()
    status = env.claim_status()
    assert (status["phase"], status["reason"]) == ("failed", "StartupJobFailed")
    assert status["shutdownAttempts"] == 1
    [job] = shutdown_jobs(env)
    assert job["metadata"]["name"] == "c1-shutdown-1"
    assert job_vars(job)["force"] is True
    assert env.slot_status()["lastClaim"]["phase"] == "failed"
    assert env.slot_status()["lastClaim"]["attempt"] == 1
    assert env.slot_status()["phase"] == "off"


def said(env, name: str = "c1") -> str:
    """The message of the claim's latest condition: what `kubectl describe` shows a person."""
    return env.claim_status(name)["conditions"][-1]["message"]


async def test_startup_job_timed_out(pool):
    env = pool
    await booting(env)
    await env.job_done("c1-startup", "timed_out")
    await env.step()
    assert env.claim_status()["reason"] == "StartupJobTimedOut"
    assert said(env) == "startup Job c1-startup timed out: DeadlineExceeded: timed_out"  # the Job's own words


async def test_registration_wait_then_readiness_gate(pool):
    env = pool
    await booting(env)
    await env.job_done("c1-startup")
    env.clock.advance(seconds=29)
    await env.step()
    assert env.claim_status()["phase"] == "booting"
    env.clock.advance(seconds=2)
    await env.step()
    assert env.claim_status()["reason"] == "RegistrationTimedOut"
    assert said(env) == "the startup Job succeeded but no corev1 Node joined within the registration wait"


async def test_readiness_gate_times_out_on_a_readiness_taint_and_never_lifts_a_person_cordon(env):
    await env.group(nodeReadinessTaints=[{"key": "node.cilium.io/agent-not-ready"}])
    await env.slot()
    await booting(env)
    await env.job_done("c1-startup")
    await env.node(unschedulable=True, taints=[{"key": "node.cilium.io/agent-not-ready", "effect": "NoSchedule"}])
    await env.step()
    assert env.claim_status()["phase"] == "booting"
    node = env.get("nodes", "worker-01")
    assert node["spec"]["unschedulable"] is True  # a person's cordon (no mark) stays
    env.clock.advance(seconds=61)
    await env.step()
    assert env.claim_status()["reason"] == "ReadinessGateTimedOut"
    assert said(env) == ('the Node joined but did not become usable within the readiness gate (corev1 Node '
                         '"worker-01" carries the readiness taint node.cilium.io/agent-not-ready:NoSchedule)')
    # the machine is on: the forced shutdown was fired and counted on the failed claim
    assert env.claim_status()["shutdownAttempts"] == 1
    assert env.slot_status()["phase"] == "draining"  # failed + on: row 11


async def test_gate_lifts_our_own_cordon(pool):
    env = pool
    await booting(env)
    await env.job_done("c1-startup")
    from homecluster import names
    await env.node(unschedulable=True, annotations={names.ANNOTATION_CORDONED_BY: names.CORDONED_BY_VALUE})
    await env.step()
    assert env.claim_status()["phase"] == "ready"
    node = env.get("nodes", "worker-01")
    assert not node["spec"].get("unschedulable")
    assert names.ANNOTATION_CORDONED_BY not in (node["metadata"].get("annotations") or {})


async def test_the_gate_has_its_look_before_its_clock_can_end_the_boot(pool):
    """The first pass to see the joined Node may come after registeredAt + readiness gate (the operator was
    restarting, or no event came in the gate's window): the gate lifts what is ours first, and a Node usable
    then is ready. Before: ReadinessGateTimedOut with our own cordon still on the Node, never lifted (CI of
    stop 29, test_shutdown_race: the first pass that read the machine on came 4 s after its Ready)."""
    env = pool
    await booting(env)
    await env.job_done("c1-startup")
    from homecluster import names
    await env.node(unschedulable=True, annotations={names.ANNOTATION_CORDONED_BY: names.CORDONED_BY_VALUE})
    env.clock.advance(seconds=61)  # past the 60 s readiness gate, no pass in between
    await env.step()
    assert env.claim_status()["phase"] == "ready", env.claim_status()
    assert not env.get("nodes", "worker-01")["spec"].get("unschedulable")
    assert not shutdown_jobs(env)


async def test_after_its_look_the_gates_clock_ends_the_boot_of_a_node_still_unusable(env):
    """The look is one look: our cordon lifted, a readiness taint (not ours) still on, the clock spent -> the
    boot fails ReadinessGateTimedOut on the next pass, naming the taint."""
    await env.group(nodeReadinessTaints=[{"key": "node.cilium.io/agent-not-ready"}])
    await env.slot()
    await booting(env)
    await env.job_done("c1-startup")
    from homecluster import names
    await env.node(unschedulable=True, annotations={names.ANNOTATION_CORDONED_BY: names.CORDONED_BY_VALUE},
                   taints=[{"key": "node.cilium.io/agent-not-ready", "effect": "NoSchedule"}])
    env.clock.advance(seconds=61)
    await env.step()
    assert env.claim_status()["reason"] == "ReadinessGateTimedOut"
    assert said(env).endswith('(corev1 Node "worker-01" carries the readiness taint '
                              'node.cilium.io/agent-not-ready:NoSchedule)')
    assert not env.get("nodes", "worker-01")["spec"].get("unschedulable")  # ours was lifted in its look


async def test_umbrella_deadline_while_booting_stops_the_startup_job(pool):
    env = pool
    from datetime import timedelta
    await env.claim("c1", deadline=timedelta(seconds=30))  # tighter than the 60s startup Job timeout
    await env.step()
    assert env.claim_status()["phase"] == "booting"
    env.clock.advance(seconds=29)
    await env.step()
    assert env.claim_status()["phase"] == "booting"
    env.clock.advance(seconds=2)
    await env.step()
    status = env.claim_status()
    assert (status["phase"], status["reason"]) == ("failed", "DeadlineExceeded")
    assert said(env) == "spec.deadlineAt passed before the machine was ready"
    names_left = {j["metadata"]["name"] for j in env.jobs()}
    assert "c1-startup" not in names_left  # the still-running startup Job was deleted
    assert "c1-shutdown-1" in names_left
    assert job_vars(env.lab.get("jobs.batch", "c1-shutdown-1", "homecluster-system"))["force"] is True


async def test_three_failed_boots_then_attempt_limit_then_a_landed_boot_resets(pool):
    env = pool
    for n in (1, 2, 3):
        name = f"c{n}"
        await booting(env, name)
        assert env.claim_status(name)["attempt"] == n
        await env.job_done(f"{name}-startup", "failed")
        await env.step()
        assert env.claim_status(name)["reason"] == "StartupJobFailed"
        assert env.slot_status()["lastClaim"]["attempt"] == n
        await env.job_done(f"{name}-shutdown-1")  # the forced shutdown ends
        env.clock.advance(seconds=10)  # past its grace: the next claim may launch
    jobs_before = len(env.jobs())
    env.clock.advance(seconds=10)
    await env.claim("c4")
    await env.step()
    status = env.claim_status("c4")
    assert (status["attempt"], status["phase"], status["reason"]) == (4, "failed", "AttemptLimitExceeded")
    assert len(env.jobs()) == jobs_before  # nothing created


async def test_a_boot_that_lands_resets_the_streak(pool):
    env = pool
    for n in (1, 2):
        await booting(env, f"c{n}")
        await env.job_done(f"c{n}-startup", "failed")
        await env.step()
        await env.job_done(f"c{n}-shutdown-1")
        env.clock.advance(seconds=10)
    await booting(env, "c3")
    assert env.claim_status("c3")["attempt"] == 3
    await env.job_done("c3-startup")
    await env.node()
    await env.step()
    assert env.claim_status("c3")["phase"] == "ready"
    await env.lab.delete(CLAIMS, "c3")
    await env.step()  # cordon + shutdown Job
    await env.job_done("c3-shutdown-1")
    await env.node(ready=False)
    await env.step()
    assert env.get(CLAIMS, "c3") is None  # completed, lastClaim written, finalizer released, gone
    last = env.slot_status()["lastClaim"]
    assert (last["name"], last["phase"], last["reason"], last["reachedReady"]) == ("c3", "completed", "Released", True)
    await env.claim("c4")
    await env.step()
    assert env.claim_status("c4")["attempt"] == 1


async def test_a_failed_streak_continues_past_a_cancel(pool):
    env = pool
    await booting(env, "c1")
    await env.job_done("c1-startup", "failed")
    await env.step()
    await env.job_done("c1-shutdown-1")
    env.clock.advance(seconds=10)
    await env.claim("c2")
    await env.refill()
    from homecluster.lifecycle.slotpass import run_pass
    await run_pass(env.ctx, "worker-01")  # seed only
    assert env.claim_status("c2")["attempt"] == 2
    await env.lab.delete(CLAIMS, "c2")  # a cancel: no finalizer yet, gone at once
    assert env.get(CLAIMS, "c2") is None
    await env.claim("c3")
    await env.step()
    assert env.claim_status("c3")["attempt"] == 2  # the cancel was not an attempt


async def test_a_startup_job_still_running_past_the_startup_job_timeout_fails_the_boot(pool):
    # the operator's own bound (the Job's activeDeadlineSeconds never fired, or the Job controller lags)
    env = pool
    await booting(env)
    env.clock.advance(seconds=env.ctx.settings.startup_job_timeout.total_seconds() + 1)
    await env.step()
    status = env.claim_status()
    assert (status["phase"], status["reason"]) == ("failed", "StartupJobTimedOut"), status
    assert said(env) == "the startup Job did not finish within the startup Job timeout"


async def test_a_slots_own_boot_budget_is_when_a_running_startup_job_is_looked_at_again(env):
    """lifecycle.deadlines.next_check: the StartupJobTimedOut clock of a slot with spec.bootCheck.timeout runs
    for that budget plus the margin (its startup Job's activeDeadlineSeconds), not the operator's default, and
    the pass asks to be woken exactly when it can run out."""
    await env.group(maxNodeProvisionTime="10m")  # room for the slot's budget (SHORT: startup_job_timeout 60 s)
    await env.slot()
    await env.lab.patch(SLOTS, "worker-01", {"spec": {"bootCheck": {"timeout": "100s"}}})
    await booting(env)
    started = parse_time(env.claim_status()["bootStartedAt"])
    assert env.get("jobs.batch", "c1-startup", NS)["spec"]["activeDeadlineSeconds"] == 160
    await env.job_pod("c1-startup-aaaaa", "Running")  # its pod started: nothing left to look at but the clocks
    env.clock.advance(seconds=10)
    result = await env.step()
    assert env.claim_status()["phase"] == "booting"
    assert result.wake == started + timedelta(seconds=160)  # the slot's 100 s and the 60 s margin, not 60 s
