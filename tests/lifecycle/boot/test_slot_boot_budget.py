"""The slot's boot budget at operator level (issue 23, item 7): a slot whose machine takes longer to boot than
the operator's startup Job timeout says so in spec.bootCheck.timeout, and neither its startup Job nor the
StartupJobTimedOut clock cuts the boot short; a budget the claim's cannot hold fails before anything is bought."""
from __future__ import annotations

import pytest

pytestmark = pytest.mark.lab
SLOTS = "nodes.infra.homecluster.dev"
NS = "homecluster-system"


async def test_a_slow_booting_slot_gets_its_own_startup_job_timeout(env):
    # SHORT: startup_job_timeout 60s; boot floor 167 s, so the Group's 10m leaves the startup Job 493 s
    await env.group(maxNodeProvisionTime="10m")
    await env.slot()
    await env.lab.patch(SLOTS, "worker-01", {"spec": {"bootCheck": {"timeout": "100s"}}})
    await env.claim()
    await env.step()
    job = env.get("jobs.batch", "c1-startup", NS)
    assert job["spec"]["activeDeadlineSeconds"] == 160  # the slot's 100 s and the 60 s margin
    env.clock.advance(seconds=61)  # past the operator's 60 s: the slot's budget still runs
    await env.step()
    assert env.claim_status()["phase"] == "booting", env.claim_status()
    env.clock.advance(seconds=100)
    await env.step()
    assert (env.claim_status()["phase"], env.claim_status()["reason"]) == ("failed", "StartupJobTimedOut")


async def test_a_slot_budget_the_claims_cannot_hold_buys_nothing(pool):
    env = pool
    await env.lab.patch(SLOTS, "worker-01", {"spec": {"bootCheck": {"timeout": "5m"}}})  # the floor is 167 s
    await env.claim()
    await env.step()
    status = env.claim_status()
    assert (status["phase"], status["reason"]) == ("failed", "StartupJobFailed"), status
    assert "spec.bootCheck.timeout 5m does not fit the claim's boot budget" in status["message"]
    assert env.jobs() == [] and "startupJob" not in status  # nothing bought: not an attempt
