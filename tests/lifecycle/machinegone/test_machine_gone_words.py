"""machinegone.tick: the MachineGone clock's writes, its wake-up, and the Events a user reads.

Off -> MachineObservedOff (Warning) and status.machineObservedOffAt; back -> MachineBack (Normal) and
the clock cleared; each observation its own Event; past one boot window -> failed/MachineGone naming
the moment the machine was first seen off.
"""
from __future__ import annotations

from datetime import timedelta

import pytest

from homecluster.model.timestamps import format_time

pytestmark = pytest.mark.lab
CLAIMS = "nodeclaims.infra.homecluster.dev"
PREFIX = 'NodeClaim "c1" on slot "worker-01", attempt 1: '
OFF = "the machine is observed off; it fails as MachineGone unless it is back within one boot window"
BACK = "the machine is back on; the MachineGone clock is cleared"


def said(env) -> list[tuple[str, str, str]]:
    evs = [e for e in env.lab.list("events", "default") if e["involvedObject"]["name"] == "c1"
           and e["reason"] in ("MachineObservedOff", "MachineBack", "MachineGone")]
    evs.sort(key=lambda e: int(e["metadata"]["resourceVersion"]))
    return [(e["reason"], e["type"], e["message"].removeprefix(PREFIX)) for e in evs]


async def test_machine_gone_clock_events_wake_and_expiry(pool):
    env = pool
    await env.ready_claim()
    window = env.ctx.settings.boot_floor
    env.clock.advance(seconds=3)
    await env.node(ready=False)
    result = await env.step()
    first_off = env.clock.now
    assert env.claim_status()["machineObservedOffAt"] == format_time(first_off)
    assert env.claim_status()["phase"] == "ready"
    assert result.wake == first_off + window  # the pass wakes when the clock would expire
    assert said(env) == [("MachineObservedOff", "Warning", OFF)]
    await env.step()  # observed off again: no second write, no second Event
    assert said(env) == [("MachineObservedOff", "Warning", OFF)]
    env.clock.advance(seconds=4)
    await env.node(ready=True)
    await env.step()
    assert "machineObservedOffAt" not in env.claim_status()
    assert said(env)[1:] == [("MachineBack", "Normal", BACK)]
    env.clock.advance(seconds=5)
    await env.node(ready=False)  # a second time: its own Events
    await env.step()
    second_off = env.clock.now
    assert env.claim_status()["machineObservedOffAt"] == format_time(second_off)
    env.clock.advance(seconds=2)
    await env.node(ready=True)
    await env.step()
    assert [r for r, _, _ in said(env)] == ["MachineObservedOff", "MachineBack"] * 2
    env.clock.advance(seconds=1)
    await env.node(ready=False)
    await env.step()
    last_off = env.clock.now
    env.clock.advance(seconds=window.total_seconds() + 1)
    await env.step()
    status = env.claim_status()
    gone = (f'the machine of slot "worker-01" has been observed off for longer than one boot window '
            f'(since {format_time(last_off)})')
    assert (status["phase"], status["reason"], status["message"]) == ("failed", "MachineGone", gone)
    assert said(env)[-1] == ("MachineGone", "Warning", gone)
    assert len(said(env)) == 6
