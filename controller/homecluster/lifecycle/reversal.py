"""The finalizer's reversal: a live claim marked for deletion ends completed, and a delete is never refused.

- pending (nothing was bought: no startup Job exists): the claim ends completed/Canceled at once and
  our finalizer, if it was added, is removed. Canceled is "completed", not "failed", so a cancel is
  never counted as a failed attempt; it is not written to the slot's lastClaim either (it was never
  an attempt), so a cancel neither extends nor resets a failing streak.
- booting or ready, machine on (table row 9): cordon the Node (with our mark), fire the shutdown
  Job (cordon, drain, graceful power-off, forced after its timeout), counted on this claim's
  status.shutdownAttempts; fire again after a Job that ended with the machine still on (bounded,
  held off past the bound).
- booting, machine never joined: stop a still-running startup Job -- Foreground, so the Job stays until its pod
  is gone, and wait for that (lifecycle.facts.active: a pod being killed may still send its power-on; fired
  before, the power-off could land first, and a slot being removed would let go of a machine that then came
  on) -- then fire a FORCED shutdown (the machine may be on without having joined), and wait for it to end.
- the slot (Node CR) is gone: nothing can be powered, so the claim ends completed/SlotNotFound (its
  Event says the slot is gone), a still-running startup Job is deleted, and the finalizer is released.
- a Job under the name the shutdown needs that is not this claim's (ForeignJob): a Warning Event and the claim's
  status.message say so, and the claim waits for it to go; never a failed pass. A shutdown Job that cannot be
  built (JobSpecError) waits likewise: a Warning Event on the slot (lifecycle.jobspec) and status.message.
- a startup Job of the claim that the claim does not name (deleted between the create and the booting write) is
  written to status.startupJob first, so the claim counts as the attempt it was.
- machine observed off and no shutdown Job running (row 10): completed/Released; the slot's lastClaim
  is written, then the finalizer released -- in that order, so the history outlives the claim.
"""
from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any

from homecluster.lifecycle import gate, launch, shutdown
from homecluster.lifecycle.facts import Facts, active
from homecluster.lifecycle.jobio import ForeignJob, delete_job
from homecluster.lifecycle.recorder import Recorder
from homecluster.jobs import JobSpecError, job_outcome
from homecluster.logging import claim_log
from homecluster.model.objects import (claim_phase, claim_shutdown_job, claim_startup_job, dig, marked_for_deletion,
                                       name_of)
from homecluster.model.phases import ClaimPhase, Reason
from homecluster.lifecycle.context import Context
from homecluster.lifecycle import attempts

Obj = Mapping[str, Any]


def committed(facts: Facts, claim: Obj) -> bool:
    """The boot was committed: booting/ready, or a startup Job exists (a crash before the booting write), or
    the reversal already fired this claim's shutdown (it deleted that startup Job: a cancel now would release
    the finalizer while the forced shutdown runs, and the claim's garbage collection would take it along)."""
    return claim_phase(claim) != ClaimPhase.PENDING or facts.startup_job(claim) is not None \
        or bool(claim_startup_job(claim)) or bool(claim_shutdown_job(claim))


async def cancel(ctx: Context, claim: Obj) -> Obj | None:
    rec = Recorder(ctx)
    claim = await rec.move(claim, ClaimPhase.COMPLETED, Reason.CANCELED, "deleted while pending: nothing was started")
    return await rec.remove_finalizer(claim)


async def complete(ctx: Context, facts: Facts, claim: Obj) -> Obj | None:
    rec = Recorder(ctx)
    claim = await rec.move(claim, ClaimPhase.COMPLETED, Reason.RELEASED,
                           f'the machine of slot "{facts.slot_name}" is off; the claim is released')
    await attempts.record_last_claim(ctx, facts.slot, claim)
    return await rec.remove_finalizer(claim)


async def slot_gone(ctx: Context, facts: Facts, claim: Obj) -> Obj | None:
    """The slot (Node CR) was deleted: there is no machine left to power, so nothing to wait for."""
    job = facts.startup_job(claim)
    if job is not None and job_outcome(job) == "running":
        await delete_job(ctx, name_of(job))  # it must not power on a machine nobody manages any more
    rec = Recorder(ctx)
    claim = await rec.move(claim, ClaimPhase.COMPLETED, Reason.SLOT_NOT_FOUND,
                           f'slot "{facts.slot_name}" (spec.slotRef) no longer exists, so there is no machine to '
                           f"power off; the claim is released")
    return await rec.remove_finalizer(claim)


async def _fire(ctx: Context, facts: Facts, claim: Obj, *, force: bool) -> tuple[Obj | None, datetime | None]:
    """Fire the claim's shutdown. A Job of its name that is someone else's (jobio.ForeignJob) is never adopted and
    never wedges the slot: shutdown.fire posted the Warning Event, the claim's status.message says it, and the
    claim waits -- its finalizer held, the machine not released -- until that Job is gone (looked at again
    every job_poll_interval); the rest of the slot's pass goes on. A shutdown Job that cannot be built (JobSpecError:
    the slot's spec, its Group's, or the settings) waits the same way, said on the slot (lifecycle.jobspec) and in
    the claim's status.message, until it is fixed."""
    try:
        fired = await shutdown.fire(ctx, facts, claim, force=force)
    except JobSpecError as exc:  # ForeignJob is one; another is said on the slot too (lifecycle.jobspec)
        said = exc if isinstance(exc, ForeignJob) else f"cannot build the shutdown Job: {exc}"
        text = f"the shutdown waits: {said}"
        if dig(claim, "status", "message") != text:  # said once: the pass looks again without writing
            claim_log(ctx.log, claim).warning("%s", text)
            claim = await Recorder(ctx).patch_status(claim, {"message": text})
        return claim, facts.now + ctx.settings.job_poll_interval
    return fired.claim, fired.wake


async def reverse(ctx: Context, facts: Facts, claim: Obj) -> tuple[Obj | None, datetime | None]:
    """One step of the reversal; returns the claim (None once gone) and when to look again."""
    if not committed(facts, claim):
        return await cancel(ctx, claim), None
    claim = await launch.record_committed(ctx, facts, claim)  # before the startup Job can be deleted
    if facts.slot is None:
        return await slot_gone(ctx, facts, claim), None
    waiting, when = shutdown.wait_for_previous(ctx, facts)
    if facts.on:
        if facts.node is not None:
            await gate.cordon(ctx, facts.node, facts.slot_name)
        if waiting:
            return claim, when
        return await _fire(ctx, facts, claim, force=False)
    if claim_phase(claim) != ClaimPhase.READY:
        job = facts.startup_job(claim)
        if job is not None and active(job):  # its pod may still send the power-on: the power-off comes after it
            if job_outcome(job) == "running" and not marked_for_deletion(job):
                await delete_job(ctx, name_of(job), propagation="Foreground")  # the Job stays until its pod is gone
            return claim, facts.now + ctx.settings.job_poll_interval  # (its disappearance wakes the slot too)
        if not waiting and not dig(claim, "status", "shutdownAttempts"):
            return await _fire(ctx, facts, claim, force=True)
    if facts.running_shutdown() is not None:
        return claim, facts.now + ctx.settings.job_poll_interval
    return await complete(ctx, facts, claim), None
