"""When a boot runs out of time, and the healing of a ready claim that still carries its deadline.

Why every failed boot (spec.deadlineAt passed, or a stage's own timeout) is followed by a forced
shutdown is a reading of the specification (docs/controller.md). `fail_boot` stops a startup Job that
still runs (Background propagation: its Pod cannot power the machine on later), fires the FORCED
shutdown Job counted on the claim's status.shutdownAttempts, then records the claim failed -- in that
order, so a pass re-run after a crash meets the same Job names (AlreadyExists is success) and lands the
same failure. A Job of the forced shutdown's name that is someone else's (jobio.ForeignJob) is
not adopted: the claim is recorded failed without the shutdown, the message and an Event naming that
Job and its owner (the machine, if on and unwanted, then gets row 11's shutdown); so is a forced shutdown that
cannot be built (JobSpecError: said on the slot, lifecycle.jobspec). The slot is then free, and the next claim
on it is attempt N+1.

The deadline bounds the boot only: a ready claim that still carries spec.deadlineAt (the manager
died between the ready write and the clear) gets it cleared by `heal_ready`.
"""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from homecluster.lifecycle import shutdown
from homecluster.lifecycle.facts import Facts
from homecluster.lifecycle.jobio import ForeignJob, delete_job
from homecluster.lifecycle.recorder import Recorder
from homecluster.jobs import JobSpecError, job_outcome
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


async def heal_ready(ctx: Context, claim: Obj) -> Obj:
    """Clear spec.deadlineAt on a ready claim that still carries it."""
    if dig(claim, "spec", "deadlineAt"):
        return await Recorder(ctx).clear_boot_deadline(claim)
    return claim
