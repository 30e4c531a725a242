"""MachineGone: a ready claim whose machine is observed off ends failed after one boot window.

The clock is status.machineObservedOffAt (model.machinegone): stamped at the first observation, cleared
when the machine is back, so a reboot heals and a restart of the controller does not restart it.
Expiry records failed/MachineGone; the terminal-claim rule then shuts the machine down if it comes
back on.
"""
from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any

from homecluster.lifecycle.facts import Facts
from homecluster.lifecycle.recorder import Recorder
from homecluster.model.deadlines import boot_window
from homecluster.model.machinegone import ClockStep, machine_gone
from homecluster.model.phases import ClaimPhase
from homecluster.lifecycle.context import Context

Obj = Mapping[str, Any]


async def tick(ctx: Context, facts: Facts, claim: Obj) -> tuple[Obj, datetime | None]:
    """Advance the clock; returns the claim and when the running clock expires (None: no clock)."""
    verdict = machine_gone(claim, facts.power, facts.now, boot_window(facts.group, ctx.settings))
    rec = Recorder(ctx)
    if verdict.step == ClockStep.EXPIRE:
        text = (f'the machine of slot "{facts.slot_name}" has been observed off for longer than one boot window '
                f'(since {(claim.get("status") or {}).get("machineObservedOffAt")})')
        return await rec.move(claim, ClaimPhase.FAILED, verdict.reason, text), None
    if verdict.step in (ClockStep.START, ClockStep.CLEAR):
        claim = await rec.patch_status(claim, verdict.status_patch or {})
        what = "MachineObservedOff" if verdict.step == ClockStep.START else "MachineBack"
        text = ("the machine is observed off; it fails as MachineGone unless it is back within one boot window"
                if verdict.step == ClockStep.START else "the machine is back on; the MachineGone clock is cleared")
        await rec.event(claim, what, text, warning=verdict.step == ClockStep.START,
                        key=f"{what}-{(claim.get('status') or {}).get('machineObservedOffAt') or facts.now.isoformat()}")
    return claim, verdict.expires_at
