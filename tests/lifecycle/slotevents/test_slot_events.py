"""Events on slots, posted by the real pass against the lab's API server: power observed on/off and the
shutdown hold-off, each once per change -- a pass that observes nothing new posts nothing."""
from __future__ import annotations

import pytest
from support.pool import newest_shutdown

pytestmark = pytest.mark.lab


def slot_events(env, slot: str = "worker-01") -> list[tuple[str, str, str]]:
    """(reason, type, message) of every Event about the slot, oldest first."""
    found = [e for e in env.lab.list("events", "default")
             if e["involvedObject"]["kind"] == "Node" and e["involvedObject"]["name"] == slot
             and e["involvedObject"]["apiVersion"] == "infra.homecluster.dev/v2alpha1"]
    found.sort(key=lambda e: int(e["metadata"]["resourceVersion"]))
    return [(e["reason"], e["type"], e["message"]) for e in found]


async def test_power_observed_on_and_off_once_per_change(env):
    await env.group()
    await env.slot()
    await env.step()
    assert [r for r, _, _ in slot_events(env)] == ["PowerObservedOff"]
    await env.step()
    await env.step()
    assert len(slot_events(env)) == 1, "a pass that observed nothing new posted an Event"

    await env.claim("c1")
    await env.step()
    await env.job_done("c1-startup")
    await env.node()
    await env.step(times=3)
    assert env.claim_status("c1")["phase"] == "ready"
    await env.step()
    reasons = [r for r, _, _ in slot_events(env)]
    assert reasons == ["PowerObservedOff", "PowerObservedOn"], reasons
    assert slot_events(env)[-1][1:] == ("Normal", 'slot "worker-01": the machine is observed on: its Kubernetes '
                                                  "Node is Ready")

    await env.node(ready=False)  # the machine went away under a ready claim
    await env.step()
    await env.step()
    reasons = [r for r, _, _ in slot_events(env)]
    assert reasons == ["PowerObservedOff", "PowerObservedOn", "PowerObservedOff"], reasons
    assert "its Kubernetes Node is not Ready, or gone" in slot_events(env)[-1][2]


async def test_shutdown_held_off_once(env):
    await env.group()
    await env.slot()
    await env.node()  # on, and no claim wants it: shut down, counted on the slot
    await env.step()
    limit = env.ctx.settings.shutdown_attempt_limit
    for _ in range(limit):
        await env.job_done(newest_shutdown(env), "failed")  # each ends with the machine still on
        env.clock.advance(seconds=6)
        await env.step()
    held = [e for e in slot_events(env) if e[0] == "ShutdownHeldOff"]
    assert len(held) == 1, slot_events(env)
    reason, kind, message = held[0]
    assert kind == "Warning"
    assert f"{limit} shutdown Jobs did not power the machine off (the last, worker-01-unwanted-{limit}" in message
    assert f'no shutdown before {env.slot_status()["shutdown"]["heldUntil"]}' in message
    env.clock.advance(seconds=30)  # inside the hold-off: passes run, nothing changes
    await env.step()
    await env.step()
    assert len([e for e in slot_events(env) if e[0] == "ShutdownHeldOff"]) == 1
