"""The 30-minute hold-off after the bound of failed shutdowns survives a NotReady blip.

Flaky machines are the ones that blip. The hold ends only when it runs out, when a claim takes the machine,
or when the machine is seen off for good (model.liveness): its kubelet has said nothing -- no Lease renewal,
no status post -- since the last shutdown that succeeded, or for longer than the Lease's grace (40 s).
"""
from __future__ import annotations

import pytest

pytestmark = pytest.mark.lab


def shutdown_jobs(env) -> list[str]:  # the slot's own shutdowns: <slot>-unwanted-<n>
    return sorted(j["metadata"]["name"] for j in env.jobs() if "-unwanted-" in j["metadata"]["name"])


def job_creates(env) -> int:
    """Jobs the operator created, from the lab's audit log (a Job may since be collected with its claim)."""
    return sum(1 for e in env.writes() if e.verb == "create" and e.resource == "jobs" and e.code < 300)


async def held_off(env, lease: bool) -> dict:
    """worker-01 on and unwanted; the bound of shutdown Jobs fails; the slot is held off."""
    if lease:
        await env.lease()
    await env.node()
    await env.step()
    for n in range(1, env.ctx.settings.shutdown_attempt_limit + 1):
        await env.job_done(shutdown_jobs(env)[-1], "failed")
        env.clock.advance(seconds=6)
        if lease:
            await env.lease()
        await env.step()
    held = env.slot_status()["shutdown"]
    assert held["attempts"] == env.ctx.settings.shutdown_attempt_limit and held["heldUntil"]
    return held


async def blip(env, lease: bool) -> None:
    """10 s NotReady (the kubelet posts it, and renews its Lease all along), then Ready again."""
    await env.node(ready=False)
    await env.step()
    for _ in range(2):
        env.clock.advance(seconds=5)
        if lease:
            await env.lease()
        await env.step()
    await env.node()
    env.clock.advance(seconds=10)
    if lease:
        await env.lease()
    await env.step(times=3)


@pytest.mark.parametrize("lease", [True, False], ids=["with-lease", "ready-only"])
async def test_a_notready_blip_during_the_hold_keeps_the_hold(pool, lease):
    env = pool
    held = await held_off(env, lease)
    created = job_creates(env)
    await blip(env, lease)
    assert job_creates(env) == created, f"a shutdown Job fired inside the hold-off after a NotReady blip: " \
                                        f"{shutdown_jobs(env)}"
    assert env.slot_status()["shutdown"] == held, "the blip reset the shutdown counter and its hold"


@pytest.mark.parametrize("lease", [True, False], ids=["with-lease", "ready-only"])
async def test_a_machine_silent_past_the_grace_is_off_for_good_and_ends_the_hold(pool, lease):
    env = pool
    await held_off(env, lease)
    await env.node(ready=False)
    env.clock.advance(seconds=30)  # the last word 30 s ago: not yet for good
    await env.step()
    assert env.slot_status()["shutdown"]["attempts"] == env.ctx.settings.shutdown_attempt_limit
    env.clock.advance(seconds=15)  # past the 40 s grace with nothing said
    await env.step()
    assert env.slot_status()["shutdown"] == {"attempts": 0}  # the hold is gone
    assert env.slot_status()["powerState"] == "off"


async def test_the_hold_ends_when_a_claim_takes_the_machine(pool):
    env = pool
    await held_off(env, lease=True)
    await env.claim("c1")
    await env.step(times=3)
    assert env.claim_status("c1")["phase"] in ("booting", "ready")
    assert env.slot_status()["shutdown"] == {"attempts": 0}  # the hold is gone
