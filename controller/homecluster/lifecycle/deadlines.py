"""When a boot runs out of time, and the healing of a ready claim that still carries its deadline.

Why every failed boot (spec.deadlineAt passed, or a stage's own timeout) is followed by a forced
shutdown is a reading of the specification (docs/controller.md). `fail_boot` stops a startup Job that
still runs (Background propagation: a pod still being killed may yet send its power-on; the slot stays, so
such a late power-on meets the unwanted-machine shutdown of row 11), fires the FORCED
shutdown Job counted on the claim's status.shutdownAttempts, then records the claim failed -- in that
order, so a pass re-run after a crash meets the same Job names (AlreadyExists is success) and lands the
same failure. A Job of the forced shutdown's name that is someone else's (jobio.ForeignJob) is
not adopted: the claim is recorded failed without the shutdown, the message and an Event naming that
Job and its owner (the machine, if on and unwanted, then gets row 11's shutdown); so is a forced shutdown that
cannot be built (JobSpecError: said on the slot, lifecycle.jobspec). The slot is then free, and the next claim
on it is attempt N+1.

The deadline bounds the boot only: a ready claim that still carries spec.deadlineAt (the manager
died between the ready write and the clear) gets it cleared by `heal_ready`.

This is the lifecycle half of the deadline rule; model.deadlines says when a clock has run out, `expire`
applies it to a booting claim (the stage's own words in the failure) and `next_check` says when to look again.
"""
from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any

from homecluster.lifecycle import shutdown
from homecluster.lifecycle.facts import Facts
from homecluster.lifecycle.jobio import ForeignJob, delete_job
from homecluster.lifecycle.recorder import Recorder
from homecluster.jobs import JobSpecError, job_outcome
from homecluster.model.deadlines import boot_timeout, next_boot_check, startup_job_timeout
from homecluster.model.objects import dig, name_of
from homecluster.model.phases import ClaimPhase, Reason
from homecluster.lifecycle.context import Context

Obj = Mapping[str, Any]


async def fail_boot(ctx: Context, facts: Facts, claim: Obj, reason: Reason, message: str) -> Obj:
    job = facts.startup_job(claim)
    if job is not None and job_outcome(job) == "running":
        await delete_job(ctx, name_of(job))
    extra: dict[str, Any] = {}
    if facts.slot is not None:
        # one shutdown at a time (a running one will power it off), unless it is this claim's own, fired before a
        # crash and not yet counted: then `fire` counts it (status.shutdownAttempts, shutdownJob), creating nothing
        if facts.running_shutdown() is None or shutdown.uncounted_job(facts, claim) is not None:
            try:
                extra = (await shutdown.fire(ctx, facts, claim, force=True, persist=False)).fields
            except ForeignJob as exc:  # never adopted (an Event on the claim says so): fail without the shutdown
                message = f"{message}; no forced shutdown was fired: {exc}"
            except JobSpecError as exc:  # said on the slot (lifecycle.jobspec): fail without the shutdown
                message = f"{message}; no forced shutdown was fired: cannot build the shutdown Job: {exc}"
    return await Recorder(ctx).move(claim, ClaimPhase.FAILED, reason, message, **extra)


async def expire(ctx: Context, facts: Facts, claim: Obj, view: Obj, *, gate_looked: bool = True) -> Obj | None:
    """The boot's clocks on a booting claim (`view`: Facts.boot_view, the stage moments filled in): the failed
    claim when one has run out (fail_boot, in the words of the stage), else None. `gate_looked`: see
    model.deadlines.boot_timeout (the readiness gate's clock waits for the gate's one look)."""
    limit = startup_job_timeout(facts.slot, ctx.settings)  # the slot's boot budget (spec.bootCheck.timeout)
    reason = boot_timeout(view, facts.now, ctx.settings, limit, gate_looked=gate_looked)
    if reason is None:
        return None
    return await fail_boot(ctx, facts, claim, reason, _timeout_text(reason, facts))


def next_check(ctx: Context, facts: Facts, view: Obj) -> datetime | None:
    """When the earliest of the boot's clocks can run out (None: no clock runs)."""
    return next_boot_check(view, ctx.settings, startup_job_timeout(facts.slot, ctx.settings))


def _timeout_text(reason: Reason, facts: Facts) -> str:
    why = facts.observation.usability.why
    return {
        Reason.STARTUP_JOB_TIMED_OUT: "the startup Job did not finish within the startup Job timeout",
        Reason.REGISTRATION_TIMED_OUT: "the startup Job succeeded but no corev1 Node joined within the registration wait",
        Reason.READINESS_GATE_TIMED_OUT: f"the Node joined but did not become usable within the readiness gate ({why})",
        Reason.DEADLINE_EXCEEDED: "spec.deadlineAt passed before the machine was ready",
    }.get(reason, reason.value)


async def heal_ready(ctx: Context, claim: Obj) -> Obj:
    """Clear spec.deadlineAt on a ready claim that still carries it."""
    if dig(claim, "spec", "deadlineAt"):
        return await Recorder(ctx).clear_boot_deadline(claim)
    return claim
