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
A failed boot goes through lifecycle.deadlines.fail_boot (its forced shutdown: docs/controller.md).

Once joined, the gate (lifecycle.gate) lifts what is ours; when the Node is usable the claim moves to
ready, then spec.deadlineAt is cleared -- two writes, in the order that heals. The gate has its look before
its clock can end the boot: a first pass that comes after registeredAt + readiness gate (the operator was
down) still lifts our cordon and lands ready if the Node is usable then (model.deadlines.boot_timeout).
"""
from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime, timedelta
from typing import Any

from homecluster.lifecycle import gate, jobpods, timings
from homecluster.lifecycle.deadlines import fail_boot
from homecluster.lifecycle.facts import Facts
from homecluster.lifecycle.jobio import delete_job, observe_job_end
from homecluster.lifecycle.recorder import Recorder
from homecluster.jobs import job_message, job_outcome
from homecluster.model.deadlines import boot_timeout, next_boot_check, startup_job_timeout
from homecluster.model.objects import dig, name_of
from homecluster.model.observe import usability
from homecluster.model.phases import ClaimPhase, Reason
from homecluster.lifecycle.context import Context

Obj = Mapping[str, Any]


class Step:
    """The claim after the step, and the next moment the slot must be looked at (None: an event will come)."""

    def __init__(self, claim: Obj | None, wake: datetime | None = None) -> None:
        self.claim, self.wake = claim, wake


async def monitor(ctx: Context, facts: Facts, claim: Obj) -> Step:
    job = facts.startup_job(claim)
    outcome = job_outcome(job) if job is not None else "running"
    if job is not None:
        observe_job_end(ctx, job)
    registered = facts.registered_at(claim) is not None
    if outcome in ("failed", "timed_out") and not registered:
        reason = Reason.STARTUP_JOB_FAILED if outcome == "failed" else Reason.STARTUP_JOB_TIMED_OUT
        detail = job_message(job) or outcome
        claim = await fail_boot(ctx, facts, claim, reason, f"startup Job {name_of(job)} {outcome.replace('_', ' ')}: "
                                                           f"{detail}")
        return Step(claim)
    pod_check = None
    if outcome == "running" and job is not None and not registered:
        blocked, pod_check = await _pod_blocked(ctx, claim, job, facts.now)
        if blocked is not None:
            return blocked
    view = facts.boot_view(claim)
    limit = startup_job_timeout(facts.slot, ctx.settings)  # the slot's boot budget (spec.bootCheck.timeout)
    looked = not registered or facts.node is None or gate.gate_patch(facts.node, facts.slot_name) is None
    reason = boot_timeout(view, facts.now, ctx.settings, limit, gate_looked=looked)
    if reason is not None:
        return Step(await fail_boot(ctx, facts, claim, reason, _timeout_text(reason, facts)))
    if registered and facts.node is not None:
        node = await gate.open_gate(ctx, facts.node, facts.slot_name)
        usable = usability(node, facts.group)
        if usable:
            rec = Recorder(ctx)
            landed = await rec.move(claim, ClaimPhase.READY, None,
                                    f'corev1 Node "{name_of(node)}" joined and is usable',
                                    registeredAt=view["status"]["registeredAt"])
            if landed is not claim:  # the ready write happened in this pass: time the boot once
                timings.record_ready(ctx, dig(facts.slot, "spec", "groupRef", default=""), view, facts.now)
            claim = await rec.clear_boot_deadline(landed)
            return Step(claim)
        wake = next_boot_check(view, ctx.settings, limit)
        retry = facts.now + min(ctx.settings.uncordon_retry_ceiling, timedelta(seconds=2))
        return Step(claim, min(w for w in (wake, retry) if w is not None))
    wakes = [w for w in (next_boot_check(view, ctx.settings, limit), pod_check) if w is not None]
    return Step(claim, min(wakes) if wakes else None)


async def _pod_blocked(ctx: Context, claim: Obj, job: Obj, now: datetime) -> tuple[Step | None, datetime | None]:
    """(the failed claim's step, None) when the startup Job's pod cannot start, else (None, next look or None)."""
    found = await jobpods.look(ctx, job)
    if found.blocked is None:
        return None, (now + jobpods.POD_RECHECK if found.again else None)
    pod, why = found.blocked
    await delete_job(ctx, name_of(job))
    message = (f"startup Job {name_of(job)} cannot start its pod {pod}: {why}. The machine was not touched; fix "
               f"what the message names (a Secret the slot's credentialsSecretRef names must exist in namespace "
               f"{ctx.jobs_namespace}), and the next claim boots it")
    return Step(await Recorder(ctx).move(claim, ClaimPhase.FAILED, Reason.STARTUP_POD_BLOCKED, message)), None


def _timeout_text(reason: Reason, facts: Facts) -> str:
    why = facts.observation.usability.why
    return {
        Reason.STARTUP_JOB_TIMED_OUT: "the startup Job did not finish within the startup Job timeout",
        Reason.REGISTRATION_TIMED_OUT: "the startup Job succeeded but no corev1 Node joined within the registration wait",
        Reason.READINESS_GATE_TIMED_OUT: f"the Node joined but did not become usable within the readiness gate ({why})",
        Reason.DEADLINE_EXCEEDED: "spec.deadlineAt passed before the machine was ready",
    }.get(reason, reason.value)
