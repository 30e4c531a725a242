"""A Node still reading Ready after a shutdown that worked is off: liveness comes from the kubelet's Lease.

A switched-off kubelet renews nothing; its Node reads Ready until the node lifecycle controller marks it
Unknown (40-50 s on a default cluster), longer than the wait between shutdowns (one job_poll_interval). Every
"is the machine still up" -- the reversal, an unwanted machine, MachineGone, the boot monitor's join -- reads
the Lease in kube-node-lease (model.liveness): renewed since the last shutdown that succeeded, and within
its grace. Here the tests play the kubelet (Node and Lease) and the Job controller by hand.
"""
from __future__ import annotations

import pytest

pytestmark = pytest.mark.lab
NS = "homecluster-system"


def shutdown_jobs(env) -> list[str]:
    return sorted(j["metadata"]["name"] for j in env.jobs() if "-shutdown-" in j["metadata"]["name"] or "-unwanted-" in j["metadata"]["name"])


def job_creates(env) -> int:
    """Jobs the operator created, from the lab's audit log (a Job may since be collected with its claim)."""
    return sum(1 for e in env.writes() if e.verb == "create" and e.resource == "jobs" and e.code < 300)


async def ready_with_lease(env, name: str = "c1") -> None:
    await env.lease()
    await env.ready_claim(name)


async def powered_off(env, job: str) -> None:
    """The machine's kubelet renews once more, the machine goes off (nothing renewed after), then the
    shutdown Job that powered it off succeeds; the Node keeps reading Ready, as a real one does."""
    env.clock.advance(seconds=2)
    await env.lease()
    await env.step()
    env.clock.advance(seconds=3)
    await env.job_done(job)
    env.clock.advance(seconds=6)  # past one job_poll_interval: the next shutdown may be considered


async def off_after_one_shutdown(env, job: str) -> int:
    """`job` is the only shutdown Job; it powers the machine off and succeeds; the passes after it fire none
    (the Node still reads Ready). Returns how many Jobs the operator had created."""
    assert shutdown_jobs(env) == [job]
    created = job_creates(env)
    await powered_off(env, job)
    await env.step(times=3)
    assert job_creates(env) == created, f"a second shutdown fired at a machine that is off: {env.jobs()}"
    return created


async def test_a_deleted_claims_machine_off_with_its_node_still_ready_is_released_not_shut_down_again(pool):
    env = pool
    await ready_with_lease(env)
    await env.lab.delete("nodeclaims.infra.homecluster.dev", "c1")
    await env.step()
    created = await off_after_one_shutdown(env, "c1-shutdown-1")
    assert env.get("nodeclaims.infra.homecluster.dev", "c1") is None  # released: completed and gone
    assert env.slot_status()["powerState"] == "off"
    assert env.slot_status()["lastClaim"]["name"] == "c1"
    # its shutdown Job collected with the claim (the garbage collector may already have done it): the release
    # on the slot's lastClaim still dates the power-off, and the Node's stale Ready is still not "on"
    for job in shutdown_jobs(env):
        await env.lab.delete("jobs.batch", job, namespace=NS, propagation="Background")
    env.clock.advance(seconds=6)
    await env.step(times=3)
    assert job_creates(env) == created, f"the machine was taken as on once its shutdown Job was gone: {env.jobs()}"
    assert env.slot_status()["powerState"] == "off"


async def test_an_unwanted_machine_off_with_its_node_still_ready_gets_no_second_shutdown(pool):
    env = pool
    await env.lease()
    await env.node()
    await env.step()
    await off_after_one_shutdown(env, "worker-01-unwanted-1")
    status = env.slot_status()
    assert status["powerState"] == "off" and status["phase"] == "off"
    assert status["shutdown"]["attempts"] == 0  # it landed: off for good, the episode is over


async def test_a_machine_whose_kubelet_still_renews_after_the_shutdown_is_still_on(pool):
    """The other side: a shutdown Job that says it succeeded while the kubelet keeps renewing (a BMC that lied)
    leaves the machine on, so the next shutdown fires."""
    env = pool
    await env.lease()
    await env.node()
    await env.step()
    await powered_off(env, "worker-01-unwanted-1")
    await env.lease()  # renewed after the Job ended: the machine is up
    await env.step(times=3)
    assert shutdown_jobs(env) == ["worker-01-unwanted-1", "worker-01-unwanted-2"]


async def test_a_ready_claims_machine_silent_past_its_grace_starts_the_machine_gone_clock(pool):
    env = pool
    await ready_with_lease(env)
    env.clock.advance(seconds=30)
    await env.step()
    assert "machineObservedOffAt" not in env.claim_status()  # within the Lease's 40 s: still up
    env.clock.advance(seconds=15)
    await env.step()
    status = env.claim_status()
    assert status["phase"] == "ready" and status.get("machineObservedOffAt"), \
        "a machine whose kubelet is silent past its Lease's grace was still taken as on"
    await env.lease()  # it speaks again: back
    await env.step()
    assert "machineObservedOffAt" not in env.claim_status()


async def test_the_boot_monitor_does_not_take_a_ready_node_whose_lease_predates_the_power_off(pool):
    """The startup Job succeeded, but the kubelet has not renewed since the power-off: not joined yet (before,
    the join was taken at the Job's end); it joins when the kubelet renews."""
    env = pool
    await env.lease()
    await env.node()
    await env.step()
    await powered_off(env, "worker-01-unwanted-1")
    await env.step(times=3)
    await env.claim("c1")
    await env.step(times=3)
    env.clock.advance(seconds=3)
    await env.job_done("c1-startup")
    await env.step(times=3)
    assert env.claim_status()["phase"] == "booting", "joined on a Node report from before the power-off"
    env.clock.advance(seconds=2)
    await env.lease()
    await env.step(times=3)
    assert env.claim_status()["phase"] == "ready"
