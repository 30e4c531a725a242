"""The boot of a booting claim: Job monitor, registration wait, readiness gate, then ready.

Facts come from the cluster, not from extra status writes:
- the startup Job's outcome from its conditions: Failed -> StartupJobFailed, Failed/DeadlineExceeded
  -> StartupJobTimedOut (the Job's own activeDeadlineSeconds is settings.startup_job_timeout);
- the registration wait runs from the Job's completionTime, and the readiness gate from when the
  Node joined (the later of its creation and its Ready transition) -- Facts.boot_view fills those
  into the claim as the model's clocks (model.deadlines.boot_timeout) read them;
- the umbrella spec.deadlineAt catches everything else, including a controller that was down.
Every failed boot is followed by a forced shutdown (claims.deadline.fail_boot): a machine that
overran may be on without having joined.

Once joined, the gate (claims.gate) lifts what is ours; when the Node is usable the claim moves to
ready, then spec.deadlineAt is cleared -- two writes, in the order that heals.
"""
from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime, timedelta
from typing import Any

from homecluster.claims import gate, timings
from homecluster.claims.deadline import fail_boot
from homecluster.claims.facts import Facts
from homecluster.claims.jobio import observe_job_end
from homecluster.claims.recorder import Recorder
from homecluster.jobs import job_message, job_outcome
from homecluster.model.deadlines import boot_timeout, next_boot_check
from homecluster.model.objects import dig, name_of
from homecluster.model.observe import usability
from homecluster.model.phases import ClaimPhase, Reason
from homecluster.operator.context import Context

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
    registered = facts.registered_at() is not None
    if outcome in ("failed", "timed_out") and not registered:
        reason = Reason.STARTUP_JOB_FAILED if outcome == "failed" else Reason.STARTUP_JOB_TIMED_OUT
        detail = job_message(job) or outcome
        claim = await fail_boot(ctx, facts, claim, reason, f"startup Job {name_of(job)} {outcome.replace('_', ' ')}: "
                                                           f"{detail}")
        return Step(claim)
    view = facts.boot_view(claim)
    reason = boot_timeout(view, facts.now, ctx.settings)
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
        wake = next_boot_check(view, ctx.settings)
        retry = facts.now + min(ctx.settings.uncordon_retry_ceiling, timedelta(seconds=2))
        return Step(claim, min(w for w in (wake, retry) if w is not None))
    return Step(claim, next_boot_check(view, ctx.settings))


def _timeout_text(reason: Reason, facts: Facts) -> str:
    why = facts.observation.usability.why
    return {
        Reason.STARTUP_JOB_TIMED_OUT: "the startup Job did not finish within the startup Job timeout",
        Reason.REGISTRATION_TIMED_OUT: "the startup Job succeeded but no corev1 Node joined within the registration wait",
        Reason.READINESS_GATE_TIMED_OUT: f"the Node joined but did not become usable within the readiness gate ({why})",
        Reason.DEADLINE_EXCEEDED: "spec.deadlineAt passed before the machine was ready",
    }.get(reason, reason.value)
