"""The boot budget of a claim (spec.deadlineAt) and the sub-deadlines of one boot.

    deadlineAt = requestedAt + max(boot floor, group.spec.maxNodeProvisionTime)

The floor (12m10s with default settings) is the sum of every deadline one attempt can consume in
series; the group's maxNodeProvisionTime raises the budget but never lowers it below the floor,
because the autoscaler is told that same number and a claim that dies before it is a slot the
autoscaler is still waiting for.

The deadline bounds the boot, not the machine's life: it applies to pending (an empty phase
included) and booting only. The booting -> ready write clears spec.deadlineAt, and a ready claim
still carrying it (a manager that died between the two writes) is inert because of that scope.
A claim without spec.deadlineAt never expires.

Each sub-deadline ends the attempt with its own reason; spec.deadlineAt is the umbrella that
catches everything else, including a controller that was down for the whole boot.
"""
from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime, timedelta
from typing import Any

from homecluster.durations import DurationError, parse_duration
from homecluster.limits import MAX_PROVISION_TIME, clamp_duration
from homecluster.model.objects import claim_phase, describe, dig, time_field
from homecluster.model.phases import ClaimPhase, Reason, effective_phase
from homecluster.model.settings import Settings
from homecluster.model.timestamps import parse_time

Obj = Mapping[str, Any]

_BOOT_PHASES = frozenset({ClaimPhase.PENDING, ClaimPhase.BOOTING})


class GroupSpecError(ValueError):
    """A Group field the model cannot read; the message names the Group, the field and the fix."""


class SlotSpecError(ValueError):
    """A slot field the model cannot read; the message names the slot, the field and the fix."""


def max_node_provision_time(group: Obj | None) -> timedelta | None:
    """group.spec.maxNodeProvisionTime as a timedelta, None when unset; at most limits.MAX_PROVISION_TIME
    (24h), which the CRD enforces too (a Group stored before that maximum is read clamped)."""
    return _duration_field(group, "Group", GroupSpecError, "spec", "maxNodeProvisionTime")


def _duration_field(obj: Obj | None, kind: str, error: type[ValueError], *path: str) -> timedelta | None:
    """The duration at `path` of `obj`, None when unset, at most limits.MAX_PROVISION_TIME; `error` names the
    object and the field when it cannot be read."""
    raw = dig(obj, *path)
    if raw in (None, ""):
        return None
    try:
        return clamp_duration(parse_duration(raw), MAX_PROVISION_TIME)
    except DurationError as exc:
        raise error(f"{describe(obj, kind)} {'.'.join(path)}: {exc}") from None


def boot_window(group: Obj | None, settings: Settings) -> timedelta:
    """One boot window: max(settings.boot_floor, group.spec.maxNodeProvisionTime)."""
    floor = settings.boot_floor
    declared = max_node_provision_time(group)
    return floor if declared is None else max(floor, declared)


def deadline_at(requested_at: datetime | str, group: Obj | None, settings: Settings) -> datetime:
    """spec.deadlineAt for a claim requested at `requested_at`: requestedAt + boot_window."""
    start = parse_time(requested_at, field="spec.requestedAt")
    if start is None:
        raise ValueError("spec.requestedAt is required to compute spec.deadlineAt")
    return start + boot_window(group, settings)


# what the startup Job spends besides the power step and the boot wait, all counted in its activeDeadlineSeconds:
# the pod's scheduling and start (and a pull of the runner image not yet on the node), ansible-runner's start (5-8 s,
# 40 s seen on 2 busy cores), the play's other tasks, the Job controller's lag in seeing the pod end
BOOT_JOB_MARGIN = timedelta(seconds=60)


def boot_check_timeout(slot: Obj | None) -> timedelta | None:
    """The slot's boot budget, spec.bootCheck.timeout: how long its machine may take from the start of the
    power-on until its OS answers on the boot check port (the power step, the POST, the OS boot). None when
    unset; at most limits.MAX_PROVISION_TIME."""
    return _duration_field(slot, "slot", SlotSpecError, "spec", "bootCheck", "timeout")


def startup_job_timeout(slot: Obj | None, settings: Settings) -> timedelta:
    """The startup Job's activeDeadlineSeconds and its StartupJobTimedOut clock on this slot: the slot's boot
    budget plus BOOT_JOB_MARGIN, else settings.startup_job_timeout. An unreadable budget reads as unset here
    (the startup Job's builder refuses it, naming the field: `startup_budget_refusal`)."""
    try:
        declared = boot_check_timeout(slot)
    except SlotSpecError:
        declared = None
    return settings.startup_job_timeout if declared is None else declared + BOOT_JOB_MARGIN


def startup_budget_refusal(slot: Obj | None, group: Obj | None, settings: Settings) -> str | None:
    """Why the slot's startup Job cannot be given its boot budget, or None. The budget must fit within the claim's
    boot budget (boot_window) together with every later stage the boot floor counts (the poll, the
    registration wait, the readiness gate, the uncordon retry, the slack), so a claim is never out of time
    while its startup Job is still within its own."""
    declared = boot_check_timeout(slot)  # raises SlotSpecError naming the field
    if declared is None:
        return None
    room = boot_window(group, settings) - (settings.boot_floor - settings.startup_job_timeout)
    if declared + BOOT_JOB_MARGIN <= room:
        return None
    return (f"{describe(slot, 'slot')} spec.bootCheck.timeout {dig(slot, 'spec', 'bootCheck', 'timeout')} does not fit "
            f"the claim's boot budget: with the later stages of a boot the startup Job may take at most "
            f"{int(room.total_seconds())} s, which is {int(BOOT_JOB_MARGIN.total_seconds())} s more than the boot "
            f"budget; lower spec.bootCheck.timeout or raise the Group's spec.maxNodeProvisionTime by the difference")


def deadline_applies(phase: ClaimPhase | str | None) -> bool:
    """True for pending (an empty phase counts) and booting: the boot window. Never ready or terminal."""
    return effective_phase(phase) in _BOOT_PHASES


def deadline_passed(claim: Obj, now: datetime) -> bool:
    """The claim's spec.deadlineAt is reached while the claim is still in its boot window.

    False when the claim has no spec.deadlineAt (a hand-made claim never expires), and False for a
    ready or terminal claim even if the field is still there (the guard is scoped to the boot).
    """
    if not deadline_applies(claim_phase(claim)):
        return False
    deadline = time_field(claim, "spec", "deadlineAt")
    return deadline is not None and now >= deadline


def startup_job_timed_out(claim: Obj, now: datetime, settings: Settings,
                          startup_timeout: timedelta | None = None) -> Reason | None:
    """StartupJobTimedOut: booting, the startup Job was created (status.bootStartedAt) longer than
    its timeout ago (`startup_timeout`, the slot's: startup_job_timeout(slot); default
    settings.startup_job_timeout) and has not succeeded (no status.startupSucceededAt), nor has the
    machine registered meanwhile (no status.registeredAt)."""
    if claim_phase(claim) != ClaimPhase.BOOTING:
        return None
    if time_field(claim, "status", "startupSucceededAt") or time_field(claim, "status", "registeredAt"):
        return None  # the Job finished, or the machine joined while it was still being polled
    started = time_field(claim, "status", "bootStartedAt")
    if started is not None and now >= started + (startup_timeout or settings.startup_job_timeout):
        return Reason.STARTUP_JOB_TIMED_OUT
    return None


def registration_timed_out(claim: Obj, now: datetime, settings: Settings) -> Reason | None:
    """RegistrationTimedOut: booting, the startup Job succeeded (status.startupSucceededAt) longer than
    registration_wait ago and no corev1 Node was seen yet (no status.registeredAt)."""
    if claim_phase(claim) != ClaimPhase.BOOTING or time_field(claim, "status", "registeredAt"):
        return None
    succeeded = time_field(claim, "status", "startupSucceededAt")
    if succeeded is not None and now >= succeeded + settings.registration_wait:
        return Reason.REGISTRATION_TIMED_OUT
    return None


def readiness_gate_timed_out(claim: Obj, now: datetime, settings: Settings) -> Reason | None:
    """ReadinessGateTimedOut: still booting readiness_gate after the Node was first seen
    (status.registeredAt). Once ready, the gate has passed and this never fires."""
    if claim_phase(claim) != ClaimPhase.BOOTING:
        return None
    registered = time_field(claim, "status", "registeredAt")
    if registered is not None and now >= registered + settings.readiness_gate:
        return Reason.READINESS_GATE_TIMED_OUT
    return None


def boot_timeout(claim: Obj, now: datetime, settings: Settings,
                 startup_timeout: timedelta | None = None, *, gate_looked: bool = True) -> Reason | None:
    """The reason the claim's boot has run out of time, or None.

    The sub-deadline of the stage the boot is in is named first (it says more about what went
    wrong); DeadlineExceeded is the umbrella when no stage-specific one applies. `startup_timeout`: the
    slot's startup Job timeout (startup_job_timeout(slot)), default settings.startup_job_timeout.

    `gate_looked=False`: the joined Node still carries something of ours for the gate to lift (it has not had
    its look: the operator was down, or no event came within the gate's window). The readiness gate's clock
    cannot end the boot before the gate has looked once; the umbrella spec.deadlineAt still can.
    """
    reason = startup_job_timed_out(claim, now, settings, startup_timeout)
    if reason is not None:
        return reason
    checks = (registration_timed_out, readiness_gate_timed_out) if gate_looked else (registration_timed_out,)
    for check in checks:
        reason = check(claim, now, settings)
        if reason is not None:
            return reason
    return Reason.DEADLINE_EXCEEDED if deadline_passed(claim, now) else None


def next_boot_check(claim: Obj, settings: Settings, startup_timeout: timedelta | None = None) -> datetime | None:
    """The earliest moment one of boot_timeout's clocks can fire, for scheduling a re-check.

    None when no clock is running (not in the boot window, or nothing stamped yet).
    """
    phase = claim_phase(claim)
    if phase not in _BOOT_PHASES:
        return None
    moments = [time_field(claim, "spec", "deadlineAt")]
    if phase == ClaimPhase.BOOTING:
        registered = time_field(claim, "status", "registeredAt")
        succeeded = time_field(claim, "status", "startupSucceededAt")
        started = time_field(claim, "status", "bootStartedAt")
        if registered is not None:
            moments.append(registered + settings.readiness_gate)
        elif succeeded is not None:
            moments.append(succeeded + settings.registration_wait)
        elif started is not None:
            moments.append(started + (startup_timeout or settings.startup_job_timeout))
    present = [m for m in moments if m is not None]
    return min(present) if present else None
