"""Launch: a pending claim (an empty phase counts) becomes booting, or fails before buying anything.

In order: the slot must exist (SlotNotFound), its Group too (GroupNotFound), the attempt must be
within the bound (AttemptLimitExceeded), the deadline not passed (DeadlineExceeded). Then the boot
is committed: the finalizer is added, the startup Job created (deterministic name; AlreadyExists is
success), and the claim moves to booting with the Job's name and bootStartedAt.

Which pending claims are launched, and when a passed deadline is a failed boot (the machine on, its
Node not usable) or a plain failure (a usable Node: row 11's shutdown takes the machine), are readings
of the specification: docs/controller.md, "Readings of the specification".
Supersede has already run, so the claim handed here is the slot's owner. A claim that passes the
refusals still waits, pending, while a shutdown Job of its slot has not ended (lifecycle.shutdown.hold_launch).
"""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from homecluster.lifecycle import deadlines, shutdown, slotconflict
from homecluster.lifecycle.facts import Facts
from homecluster.lifecycle.jobio import ForeignJob, create_job
from homecluster.lifecycle.podsview import NOTHING, PodReads
from homecluster.lifecycle.recorder import Recorder
from homecluster.jobs import JobSpecError, owned_by, startup_job
from homecluster.model.attempts import attempt_limit_reason
from homecluster.model.deadlines import deadline_passed
from homecluster.model.objects import claim_attempt, claim_startup_job, dig, name_of, slot_group, uid_of
from homecluster.model.phases import ClaimPhase, Reason
from homecluster.model.timestamps import format_time
from homecluster.lifecycle.context import Context

Obj = Mapping[str, Any]


def refusal(ctx: Context, facts: Facts, claim: Obj) -> tuple[Reason, str] | None:
    """Why this pending claim must fail before a machine is bought, or None to launch it."""
    slot_name = facts.slot_name
    if facts.slot is None:
        return Reason.SLOT_NOT_FOUND, (f'slot "{slot_name}" (spec.slotRef) does not exist; create the Node '
                                       f'"{slot_name}" or delete this claim')
    group = slot_group(facts.slot)
    if facts.group is None:
        return Reason.GROUP_NOT_FOUND, (f'slot "{slot_name}" names the Group "{group}" (spec.groupRef), which does '
                                        f'not exist; create it or fix the slot')
    if attempt_limit_reason(claim, ctx.settings) is not None:
        return Reason.ATTEMPT_LIMIT_EXCEEDED, (
            f"attempt {claim_attempt(claim)} is past the bound of {ctx.settings.attempt_limit} failed boots in a row "
            f'on slot "{slot_name}"; nothing was started. Fix the machine, then the next claim starts at attempt 1 '
            f"once a boot lands (or delete the slot's status.lastClaim)")
    if deadline_passed(facts.boot_view(claim), facts.now):
        return Reason.DEADLINE_EXCEEDED, f"spec.deadlineAt {dig(claim, 'spec', 'deadlineAt')} passed before a boot started"
    return None


def pod_reads(ctx: Context, facts: Facts, claim: Obj) -> PodReads:
    """What `launch` reads of pods (lifecycle.podreads, before the launch step): the shutdown hold's
    (lifecycle.shutdown.pod_reads), when the claim reaches it -- no startup Job yet, no refusal, no slot
    conflict; nothing otherwise."""
    if facts.startup_job(claim) is not None or refusal(ctx, facts, claim) is not None or slotconflict.holds(facts):
        return NOTHING
    return shutdown.pod_reads(ctx, facts)


async def record_committed(ctx: Context, facts: Facts, claim: Obj) -> Obj:
    """Write status.startupJob when the claim's own startup Job exists but the claim does not name it: the
    booting write never landed (a crash between the create and that write, or a delete that came in between,
    such as the provider's DecreaseTargetSize). Run before anything deletes that Job, so whether a startup Job
    was created stays on the claim (model.attempts.counts_as_attempt reads it) once the Job is gone."""
    job = facts.startup_job(claim)
    if job is None or claim_startup_job(claim) or not owned_by(job, uid_of(claim)):
        return claim
    return await Recorder(ctx).patch_status(claim, {"startupJob": name_of(job)})


async def launch(ctx: Context, facts: Facts, claim: Obj) -> Obj:
    """Fail the claim for its refusal, or commit its boot. Returns the claim as now stored."""
    rec = Recorder(ctx)
    # A startup Job that already exists means the boot was committed before a crash: finish the move.
    refused = None if facts.startup_job(claim) is not None else refusal(ctx, facts, claim)
    if refused is not None:
        if refused[0] == Reason.DEADLINE_EXCEEDED and facts.on and not facts.observation.usable:
            # the specification: force it off when the deadline passes. The finalizer first: the forced shutdown Job is
            # the claim's, and a delete must not have it collected while its pod may still be powering off
            return await deadlines.fail_boot(ctx, facts, await rec.add_finalizer(claim), *refused)
        # (a usable Node may be running pods: never hard-powered off here -- the failed claim leaves an
        # unwanted machine, whose graceful shutdown cordons and drains it, table row 11)
        return await rec.move(claim, ClaimPhase.FAILED, refused[0], refused[1])
    if facts.startup_job(claim) is None and slotconflict.holds(facts):
        return claim  # the slot's machine is another slot's (NodeAccepted=False): pending, nothing powered on
    if facts.startup_job(claim) is None and await shutdown.hold_launch(ctx, facts, claim) is not None:
        return claim  # a shutdown Job of the slot has not ended: pending, nothing bought (lifecycle.shutdown)
    try:
        body = startup_job(claim, facts.slot, facts.group, ctx.settings, slots=ctx.store.slots(),
                           never_slots=ctx.store.never_slot_nodes(),
                           registered=ctx.store.registered_node_names(), **ctx.job_options())
    except JobSpecError as exc:
        return await rec.move(claim, ClaimPhase.FAILED, Reason.STARTUP_JOB_FAILED,
                              f"cannot build the startup Job: {exc}")
    claim = await rec.add_finalizer(claim)
    try:
        job = await create_job(ctx, body)
    except ForeignJob as exc:  # reported on the claim (condition and Event), never adopted
        return await rec.move(claim, ClaimPhase.FAILED, Reason.STARTUP_JOB_FAILED, str(exc))
    started = format_time(facts.now)  # the controller's clock, like every clock it compares against
    landed = await rec.move(claim, ClaimPhase.BOOTING, None, f'startup Job {name_of(job)} powers on slot '
                            f'"{facts.slot_name}"', startupJob=name_of(job), bootStartedAt=started)
    if landed is not claim:  # the booting write happened in this pass: count the launch once
        ctx.metrics.record_launch(slot_group(facts.slot), claim_attempt(landed))
    return landed
