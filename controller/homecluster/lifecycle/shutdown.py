"""Shutdown Jobs: fired for a reversal, after a failed boot (forced), and for an unwanted machine.

Where the count lives (the specification: "counted on status.shutdownAttempts, on the claim that asked for
the scale-down"):
- a reversal or a failed boot counts on that claim's status.shutdownAttempts, one per Job it fired;
- an unwanted machine (no live claim, machine on: table rows 2 and 11) counts on the slot's own
  status.shutdown (written by the slot observer's writer, the only writer of slot status): no claim
  asked for that scale-down, and the slot is never collected, so the hold-off cannot be lost.
At every multiple of settings.shutdown_attempt_limit the counter holds off for settings.shutdown_holdoff
from the end of the Job that reached it, then fires again (model.shutdown). Never two shutdown Jobs at
once for one slot, and after one ends with the machine still on we wait one job_poll_interval for the
Node to report the power-off before firing the next (a kubelet's NotReady can trail the BMC's "off").
A Job of the needed name that is someone else's (jobio.ForeignJob) is never adopted: for an unwanted
machine a Warning Event on the slot says so and the slot is looked at again after shutdown_holdoff; for a
claim an Event on the claim, and the caller decides (lifecycle.deadlines.fail_boot records the failure; the
reversal waits). A claim's own Job numbered one past its count (fired, then a crash before the count was
written) is counted, never fired again (`uncounted_job`).
"""
from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any

from homecluster.lifecycle import foreignjob, gate, jobpods, jobspec
from homecluster.lifecycle.facts import Facts, active, live_pod
from homecluster.lifecycle.jobio import ForeignJob, create_job, delete_job, observe_job_end
from homecluster.lifecycle.podsview import NOTHING, PodReads
from homecluster.lifecycle.recorder import Recorder
from homecluster.jobs import JobSpecError, job_times, names_slot, owned_by, shutdown_job, shutdown_job_name
from homecluster.logging import claim_log, slot_log
from homecluster.model.objects import dig, name_of, uid_of
from homecluster.model.shutdown import (ShutdownCounter, after_fire, claim_status_fields, counter_from_claim,
                                        counter_from_slot, hold_from_end, may_fire_shutdown, quiet_at)
from homecluster.model.timestamps import format_time
from homecluster.lifecycle.context import Context
from homecluster.lifecycle import slotevents
from homecluster.lifecycle import slotstatus

Obj = Mapping[str, Any]


class Fired:
    """What one call did: the Job fired (None: nothing), the updated claim, and when to look again."""

    def __init__(self, job: Obj | None = None, claim: Obj | None = None, wake: datetime | None = None,
                 fields: dict[str, Any] | None = None) -> None:
        self.job, self.claim, self.wake, self.fields = job, claim, wake, fields or {}


def quiet(ctx: Context, facts: Facts) -> datetime | None:
    """None when no shutdown Job of the slot runs and none ended within the grace; else when to look again."""
    return quiet_at(facts.running_shutdown() is not None, facts.last_shutdown_end(), facts.now,
                    ctx.settings.job_poll_interval)


def wait_for_previous(ctx: Context, facts: Facts) -> tuple[bool, datetime | None]:
    """(True, when) while a shutdown Job runs or the one that ended is within its grace."""
    for job in facts.shutdown_jobs():  # every shutdown path looks here: time the Jobs that ended (once each)
        observe_job_end(ctx, job)
    when = quiet(ctx, facts)
    return when is not None, when


def _lookable(facts: Facts) -> Obj | None:
    """The running shutdown Job whose pod the hold looks at (lifecycle.jobpods): one not being deleted."""
    job = facts.running_shutdown()
    return job if job is not None and not dig(job, "metadata", "deletionTimestamp") else None


def pod_reads(ctx: Context, facts: Facts) -> PodReads:
    """What `hold_launch` reads of pods (lifecycle.podreads, before the launch step): the slot's shutdown Jobs'
    pods once no shutdown Job runs or is within its grace (`hold_for_pods`), else the running Job's pod."""
    if quiet(ctx, facts) is None:
        return PodReads(shutdown_pods=True)
    job = _lookable(facts)
    return PodReads(jobs=(job,)) if job is not None else NOTHING


async def hold_launch(ctx: Context, facts: Facts, claim: Obj) -> datetime | None:
    """The rule that keeps a shutdown's power-off from landing on a newly claimed machine.

    A live claim whose slot has a shutdown Job running (any kind: an unwanted machine's, a terminal
    claim's, a failed boot's forced one, a reversal's) stays pending, with nothing bought, until that
    Job has ended and one grace has passed; its deadline keeps counting. Read from the Jobs on every
    pass, so a restarted controller decides the same. A pod of a shutdown Job that outlived its Job (the
    Job deleted by a person, or collected with its owner) holds the launch too: read from the Jobs'
    namespace just before the launch step (`pod_reads`, into facts.pods). Returns when to look again
    (None: launch now).
    """
    waiting, when = wait_for_previous(ctx, facts)
    if not waiting:
        return await hold_for_pods(ctx, facts, claim)
    job = _lookable(facts)
    if job is not None:
        found = jobpods.look(facts.pods.of_job(job), facts.now, ctx.settings.pod_blocked_settle)
        if found.blocked is not None:  # deleted: the Job's disappearance (once its pod is gone) wakes the slot
            await _drop_blocked(ctx, facts, claim, job, *found.blocked)
            return when
        if found.again:
            recheck = facts.now + jobpods.POD_RECHECK
            when = min(when, recheck) if when is not None else recheck
        text = (f'shutdown Job {name_of(job)} of slot "{facts.slot_name}" is still running; the startup waits '
                f"until it has ended, so that its power-off cannot land after the boot")
        await _say_waiting(ctx, claim, text, name_of(job))
    return when


async def _say_waiting(ctx: Context, claim: Obj, text: str, what: str) -> None:
    """Say once per Job (or pod) that the claim waits for it: status.message, then an Event."""
    if dig(claim, "status", "message") != text:
        rec = Recorder(ctx)
        claim = await rec.patch_status(claim, {"message": text})
        await rec.event(claim, "WaitingForShutdown", text, key=f"wait-{what}")


async def hold_for_pods(ctx: Context, facts: Facts, claim: Obj) -> datetime | None:
    """No shutdown Job of the slot runs: still hold the launch while a pod of one has not ended (its Job was
    deleted -- by a person, or collected with its owner -- while the pod is still being killed, and may
    still be sending its power command). Read from facts.pods: the pods the Jobs' namespace holds with the
    labels the Job's pod template carries (lifecycle.podreads), so found after its Job is gone. Returns
    when to look again (None: launch now)."""
    pod = live_pod(p for p in facts.pods.shutdown_pods() if names_slot(p, facts.slot_name))
    if pod is None:
        return None
    text = (f'pod {name_of(pod)} of a shutdown Job of slot "{facts.slot_name}" is still running (its Job is '
            f"gone); the startup waits until it has ended, so that its power-off cannot land after the boot")
    await _say_waiting(ctx, claim, text, name_of(pod))
    return facts.now + ctx.settings.job_poll_interval


async def _drop_blocked(ctx: Context, facts: Facts, claim: Obj, job: Obj, pod: str, why: str) -> None:
    """A running shutdown Job whose pod cannot start (lifecycle.jobpods: a missing Secret the kubelet kept
    failing to mount) would hold the claim for its whole shutdown_job_timeout while powering nothing off:
    delete it (Foreground, so the Job is gone only once its pod is) and say so on the claim."""
    await delete_job(ctx, name_of(job), propagation="Foreground")
    text = (f'shutdown Job {name_of(job)} of slot "{facts.slot_name}" cannot start its pod {pod}: {why}. It powered '
            f"nothing off and was deleted; the startup goes ahead once its pod is gone (a Secret the slot names "
            f"must exist in namespace {ctx.jobs_namespace})")
    await Recorder(ctx).event(claim, "ShutdownPodBlocked", text, warning=True, key=f"blocked-{name_of(job)}")
    claim_log(ctx.log, claim).warning("%s", text)


def uncounted_job(facts: Facts, claim: Obj | None) -> Obj | None:
    """The claim's own shutdown Job numbered one past its status.shutdownAttempts, if it exists (running or
    ended): fired by a pass that crashed (or lost its write to a conflict) before the count was written. A
    claim's count never restarts, so no earlier round can hold that name; the uid tells a recreated claim
    of the same name apart. None for the slot's own counter, which restarts per episode (a Job of an earlier
    episode holds the name: jobio.StaleJob)."""
    if claim is None:
        return None
    job = facts.job(shutdown_job_name(name_of(claim), counter_from_claim(claim).attempts + 1))
    return job if job is not None and owned_by(job, uid_of(claim)) else None


async def fire(ctx: Context, facts: Facts, claim: Obj | None, *, force: bool, persist: bool = True) -> Fired:
    """Fire one shutdown Job counted on `claim` (or on the slot when None), unless held off.

    `persist=False` (claims only) leaves the counter write to the caller, who folds `Fired.fields`
    into its own status write (a failed boot records the failure and the count in one write).
    """
    slot = facts.slot
    if slot is None:
        return Fired(claim=claim)
    counter = counter_from_claim(claim) if claim is not None else counter_from_slot(slot)
    counter, claim = await _hold_from_end(ctx, facts, claim, counter)
    if not may_fire_shutdown(counter.attempts, counter.held_until, facts.now, ctx.settings):
        return Fired(claim=claim, wake=counter.held_until)
    new = after_fire(counter.attempts, counter.held_until, facts.now, ctx.settings)
    job = uncounted_job(facts, claim)  # fired before a crash, its count not written: counted now, not fired again
    if job is None:
        try:
            body = shutdown_job(claim, slot, facts.group or {}, ctx.settings, force=force, number=new.attempts,
                                node=facts.node, slots=ctx.store.slots(),
                                never_slots=ctx.store.never_slot_nodes(),
                                registered=ctx.store.registered_node_names(), **ctx.job_options())
        except JobSpecError as exc:  # said on the slot once per error (lifecycle.jobspec); nothing fired or counted
            await jobspec.report(ctx, slot, name_of(claim) if claim is not None else None, exc)
            if claim is None:
                return Fired(wake=facts.now + ctx.settings.job_poll_interval)
            raise  # the caller decides (the reversal waits, a failed boot records its failure without it)
        if facts.node is not None:  # the Job may cordon and drain it: mark it ours first (config/policy)
            await gate.mark(ctx, facts.node, facts.slot_name)
        try:
            job = await create_job(ctx, body, reuse_finished=False)
        except ForeignJob as exc:  # never adopted: said where people look
            if claim is None:  # an unwanted machine: an Event on the slot, and look again after a hold-off
                await foreignjob.report_on_slot(ctx, slot, name_of(body), str(exc))
                return Fired(wake=facts.now + ctx.settings.shutdown_holdoff)
            await Recorder(ctx).event(claim, "ForeignJob", str(exc), warning=True, key=name_of(body))
            raise  # the caller decides (a failed boot records its failure without the shutdown)
    if claim is not None:
        fields = {**claim_status_fields(new), "shutdownJob": name_of(job)}
        if not persist:
            return Fired(job=job, claim=claim, wake=facts.now + ctx.settings.job_poll_interval, fields=fields)
        claim = await Recorder(ctx).patch_status(claim, fields)
        claim_log(ctx.log, claim).info("fired %s shutdown Job %s (shutdown attempt %d%s)",
                                       "forced" if force else "graceful", name_of(job), new.attempts,
                                       ", holding off after it" if new.held_until else "")
    else:
        await slotstatus.write_shutdown_counter(ctx, slot, new)
        slot_log(ctx.log, facts.slot_name).info("fired shutdown Job %s for an unwanted machine (attempt %d)",
                                                name_of(job), new.attempts)
    return Fired(job=job, claim=claim, wake=facts.now + ctx.settings.job_poll_interval)


async def _hold_from_end(ctx: Context, facts: Facts, claim: Obj | None,
                         counter: ShutdownCounter) -> tuple[ShutdownCounter, Obj | None]:
    """Measure a hold-off from the end of the Job that reached the bound, once that Job has ended (and
    persist it: its owner's status is where the next pass reads the hold)."""
    if counter.held_until is None or counter.attempts < 1:
        return counter, claim
    owner = name_of(claim) if claim is not None else facts.slot_name
    job = facts.job(shutdown_job_name(owner, counter.attempts, slot_owned=claim is None))
    ended = job_times(job).finished_at if job is not None and not active(job) else None
    held = hold_from_end(counter, ended, ctx.settings)
    if held == counter:
        return counter, claim
    if claim is not None:
        claim = await Recorder(ctx).patch_status(claim, claim_status_fields(held))
    else:
        await slotstatus.write_shutdown_counter(ctx, facts.slot, held)
    slot_log(ctx.log, facts.slot_name).info(
        "shutdown Job %s ended at %s with the machine still on; no shutdown before %s",
        name_of(job), format_time(ended), format_time(held.held_until))
    if facts.slot is not None:  # once: the hold is measured from the Job's end in this one write
        await slotevents.post(
            ctx, facts.slot, slotevents.HELD_OFF,
            f"{held.attempts} shutdown Jobs did not power the machine off (the last, {name_of(job)}, ended at "
            f"{format_time(ended)}); no shutdown before {format_time(held.held_until)}",
            key=f"held/{owner}/{held.attempts}", warning=True)
    return held, claim


async def shut_down_unwanted(ctx: Context, facts: Facts) -> datetime | None:
    """Rows 2 and 11: the machine is on and no live claim wants it. Returns when to look again.

    Counted on the slot (status.shutdown), not on the slot's last terminal claim: the slot is never
    collected, so the bound and its hold-off survive the claim's TTL collection or any delete."""
    waiting, when = wait_for_previous(ctx, facts)
    if waiting:
        return when
    fired = await fire(ctx, facts, None, force=False)
    return fired.wake
