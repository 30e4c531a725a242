"""The boot of a booting claim: Job monitor, registration wait, readiness gate, then ready.

Facts come from the cluster, not from extra status writes:
- the startup Job's outcome from its conditions: Failed -> StartupJobFailed, Failed/DeadlineExceeded
  -> StartupJobTimedOut (the Job's own activeDeadlineSeconds is model.deadlines.startup_job_timeout: the slot's
  spec.bootCheck.timeout plus a margin, else settings.startup_job_timeout);
- a startup Job whose pod cannot start by itself (lifecycle.jobpods: a missing credentials Secret that
  the kubelet kept failing to mount for settings.pod_blocked_settle, a bad image name) -> StartupPodBlocked,
  with the kubelet's words, instead of waiting for the deadline. The Job is deleted and no forced shutdown follows: its pod would mount the same missing
  Secret and hang the same way, and the startup never ran, so it powered nothing on;
- the stage clocks (registration wait, readiness gate) are read from the Job and the Node, never written:
  Facts.boot_view fills them in for model.deadlines.boot_timeout (docs/controller.md, "Stage clocks
  without extra writes");
- the umbrella spec.deadlineAt catches everything else, including a controller that was down.
The clocks are applied by lifecycle.deadlines (`expire`, the rule's lifecycle half beside model.deadlines); a
failed boot goes through its fail_boot (the forced shutdown: docs/controller.md).

Once joined, the gate (lifecycle.gate) lifts what is ours; when the Node is usable the claim moves to
ready, then spec.deadlineAt is cleared -- two writes, in the order that heals. The gate has its look before
its clock can end the boot: a first pass that comes after registeredAt + readiness gate (the operator was
down) still lifts our cordon and lands ready if the Node is usable then (model.deadlines.boot_timeout).
"""
from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime, timedelta
from typing import Any

from homecluster.lifecycle import deadlines, gate, jobpods, timings
from homecluster.lifecycle.deadlines import fail_boot
from homecluster.lifecycle.facts import Facts
from homecluster.lifecycle.jobio import delete_job, observe_job_end
from homecluster.lifecycle.podsview import NOTHING, PodReads
from homecluster.lifecycle.recorder import Recorder
from homecluster.jobs import job_message, job_outcome
from homecluster.model.objects import name_of, slot_group
from homecluster.model.observe import usability
from homecluster.model.phases import ClaimPhase, Reason
from homecluster.lifecycle.context import Context

Obj = Mapping[str, Any]


class Step:
    """The claim after the step, and the next moment the slot must be looked at (None: an event will come)."""

    def __init__(self, claim: Obj | None, wake: datetime | None = None) -> None:
        self.claim, self.wake = claim, wake


async def monitor(ctx: Context, facts: Facts, claim: Obj) -> Step:
    """One look at a booting claim: until its machine joins, the startup Job and its pod (`_startup`); the
    boot's clocks (lifecycle.deadlines); once joined, the readiness gate (`_readiness`)."""
    job = facts.startup_job(claim)
    if job is not None:
        observe_job_end(ctx, job)  # its duration, once, whichever half is running
    registered = facts.registered_at(claim) is not None
    pod_check = None
    if not registered:
        step, pod_check = await _startup(ctx, facts, claim)
        if step is not None:
            return step
    view = facts.boot_view(claim)
    joined = registered and facts.node is not None
    looked = not joined or gate.gate_patch(facts.node, facts.slot_name) is None
    failed = await deadlines.expire(ctx, facts, claim, view, gate_looked=looked)
    if failed is not None:
        return Step(failed)
    if joined:
        return await _readiness(ctx, facts, claim, view)
    wakes = [w for w in (deadlines.next_check(ctx, facts, view), pod_check) if w is not None]
    return Step(claim, min(wakes) if wakes else None)


async def _startup(ctx: Context, facts: Facts, claim: Obj) -> tuple[Step | None, datetime | None]:
    """The registration half, before the machine joins: a startup Job that failed or timed out fails the boot;
    a running Job's pod that cannot start fails it too. (the failed claim's step or None, the next look at
    the pod or None)."""
    job = facts.startup_job(claim)
    if job is None:
        return None, None
    outcome = job_outcome(job)
    if outcome in ("failed", "timed_out"):
        reason = Reason.STARTUP_JOB_FAILED if outcome == "failed" else Reason.STARTUP_JOB_TIMED_OUT
        detail = job_message(job) or outcome
        message = f"startup Job {name_of(job)} {outcome.replace('_', ' ')}: {detail}"
        return Step(await fail_boot(ctx, facts, claim, reason, message)), None
    if outcome == "running":
        return await _pod_blocked(ctx, facts, claim, job)
    return None, None


def pod_reads(facts: Facts, claim: Obj) -> PodReads:
    """What `monitor` reads of pods (lifecycle.podreads, before the boot monitor step): the startup Job's pod
    while the machine has not joined and that Job runs (`_startup`)."""
    job = facts.startup_job(claim)
    if job is None or facts.registered_at(claim) is not None or job_outcome(job) != "running":
        return NOTHING
    return PodReads(jobs=(job,))


async def _readiness(ctx: Context, facts: Facts, claim: Obj, view: Obj) -> Step:
    """The readiness half, once joined: the gate lifts what is ours; a usable Node moves the claim to ready
    (timed once), then spec.deadlineAt is cleared. Not usable yet: look again at the next clock or within
    the uncordon retry ceiling (at most 2 s)."""
    node = await gate.open_gate(ctx, facts.node, facts.slot_name)
    if not usability(node, facts.group):
        wake = deadlines.next_check(ctx, facts, view)
        retry = facts.now + min(ctx.settings.uncordon_retry_ceiling, timedelta(seconds=2))
        return Step(claim, min(w for w in (wake, retry) if w is not None))
    rec = Recorder(ctx)
    landed = await rec.move(claim, ClaimPhase.READY, None, f'corev1 Node "{name_of(node)}" joined and is usable',
                            registeredAt=view["status"]["registeredAt"])
    if landed is not claim:  # the ready write happened in this pass: time the boot once
        timings.record_ready(ctx, slot_group(facts.slot), view, facts.now)
    return Step(await rec.clear_boot_deadline(landed))


async def _pod_blocked(ctx: Context, facts: Facts, claim: Obj, job: Obj) -> tuple[Step | None, datetime | None]:
    """(the failed claim's step, None) when the startup Job's pod cannot start, else (None, next look or None).
    Its pod and Events are read into facts.pods before the step (`pod_reads`)."""
    found = jobpods.look(facts.pods.of_job(job), facts.now, ctx.settings.pod_blocked_settle)
    if found.blocked is None:
        return None, (facts.now + jobpods.POD_RECHECK if found.again else None)
    pod, why = found.blocked
    await delete_job(ctx, name_of(job))
    message = (f"startup Job {name_of(job)} cannot start its pod {pod}: {why}. The machine was not touched; fix "
               f"what the message names (a Secret the slot's credentialsSecretRef names must exist in namespace "
               f"{ctx.jobs_namespace}), and the next claim boots it")
    return Step(await Recorder(ctx).move(claim, ClaimPhase.FAILED, Reason.STARTUP_POD_BLOCKED, message)), None
