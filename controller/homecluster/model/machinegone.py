"""The MachineGone clock of a ready claim.

A ready claim owns a machine. If that machine is observed off (NodeReady is not True), nothing
fires at once -- a reboot is allowed to heal -- but a clock starts: status.machineObservedOffAt is
stamped at the first off observation. When the machine comes back on the clock is cleared. When
it has been off for longer than one boot window the claim ends failed/MachineGone.

The clock lives only in the persisted timestamp, never in memory, so a controller restart does not
restart it: the next pass reads machineObservedOffAt and carries on counting from it.
"""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from enum import Enum
from typing import Any

from homecluster.model.objects import claim_phase, time_field
from homecluster.model.phases import ClaimPhase, PowerState, Reason
from homecluster.model.timestamps import format_time

Obj = Mapping[str, Any]


class ClockStep(str, Enum):
    """What a pass does with the clock."""

    NONE = "none"  # nothing to write: no clock and machine on, or the clock is running and not expired
    START = "start"  # persist status.machineObservedOffAt = now
    CLEAR = "clear"  # the machine is back: remove status.machineObservedOffAt
    EXPIRE = "expire"  # off longer than one boot window: the claim ends failed/MachineGone


@dataclass(frozen=True)
class MachineGoneVerdict:
    """The clock step, and the claim status fields it asks the Recorder to write (None: no write)."""

    step: ClockStep
    status_patch: dict[str, Any] | None = None
    reason: Reason | None = None
    expires_at: datetime | None = None  # when a running clock will expire, for scheduling a re-check


def machine_gone(claim: Obj, power: PowerState, now: datetime, window: timedelta) -> MachineGoneVerdict:
    """Advance the MachineGone clock of `claim` given the observed power at `now`.

    `window` is one boot window (deadlines.boot_window(group, settings)). Only a ready claim has a
    clock; for any other phase this is NONE. "Longer than one boot window" is strict: at exactly
    observedOffAt + window the claim is still waiting.
    """
    if claim_phase(claim) != ClaimPhase.READY:
        return MachineGoneVerdict(ClockStep.NONE)
    off_since = time_field(claim, "status", "machineObservedOffAt")
    if power == PowerState.ON:
        if off_since is None:
            return MachineGoneVerdict(ClockStep.NONE)
        return MachineGoneVerdict(ClockStep.CLEAR, {"machineObservedOffAt": None})
    if off_since is None:
        return MachineGoneVerdict(ClockStep.START, {"machineObservedOffAt": format_time(now)}, expires_at=now + window)
    if now - off_since > window:
        return MachineGoneVerdict(ClockStep.EXPIRE, reason=Reason.MACHINE_GONE)
    return MachineGoneVerdict(ClockStep.NONE, expires_at=off_since + window)
