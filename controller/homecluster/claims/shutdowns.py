"""Shutdown Jobs: fired for a reversal, after a failed boot (forced), and for an unwanted machine.

Where the count lives (the seed: "counted on status.shutdownAttempts, on the claim that asked for
the scale-down"):
- a reversal or a failed boot counts on that claim;
- an unwanted machine (no live claim, machine on: table rows 2 and 11) counts on the slot's most
  recent terminal claim while it still exists, else on the slot's own status.shutdown (written by
  the slot observer, the only writer of slot status).
Past settings.shutdown_attempt_limit firings the counter holds off (settings.shutdown_holdoff),
then fires again (model.shutdown). Never two shutdown Jobs at once for one slot, and after one ends
with the machine still on we wait one job_poll_interval for the Node to report the power-off
before firing the next (a kubelet's NotReady can trail the BMC's "off").
"""
from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any

from homecluster.claims.facts import Facts
from homecluster.claims.jobio import ForeignJob, create_job, observe_job_end
from homecluster.claims.recorder import Recorder
from homecluster.jobs import shutdown_job
from homecluster.logging import claim_log
from homecluster.model.objects import name_of
from homecluster.model.shutdown import (after_fire, claim_status_fields, counter_from_claim, counter_from_slot,
                                        may_fire_shutdown)
from homecluster.operator.context import Context
from homecluster.slots import observer

Obj = Mapping[str, Any]


class Fired:
    """What one call did: the Job fired (None: nothing), the updated claim, and when to look again."""

    def __init__(self, job: Obj | None = None, claim: Obj | None = None, wake: datetime | None = None,
                 fields: dict[str, Any] | None = None) -> None:
        self.job, self.claim, self.wake, self.fields = job, claim, wake, fields or {}


def wait_for_previous(ctx: Context, facts: Facts) -> tuple[bool, datetime | None]:
    """(True, when) while a shutdown Job runs or the one that ended is within its grace."""
    for job in facts.shutdown_jobs():  # every shutdown path looks here: time the Jobs that ended (once each)
        observe_job_end(ctx, job)
    if facts.running_shutdown() is not None:
        return True, facts.now + ctx.settings.job_poll_interval
    ended = facts.last_shutdown_end()
    if ended is not None and facts.now < ended + ctx.settings.job_poll_interval:
        return True, ended + ctx.settings.job_poll_interval
    return False, None


async def fire(ctx: Context, facts: Facts, claim: Obj | None, *, force: bool, persist: bool = True) -> Fired:
    """Fire one shutdown Job counted on `claim` (or on the slot when None), unless held off.

    `persist=False` (claims only) leaves the counter write to the caller, who folds `Fired.fields`
    into its own status write (a failed boot records the failure and the count in one write).
    """
    slot = facts.slot
    if slot is None:
        return Fired(claim=claim)
    counter = counter_from_claim(claim) if claim is not None else counter_from_slot(slot)
    if not may_fire_shutdown(counter.attempts, counter.held_until, facts.now, ctx.settings):
        return Fired(claim=claim, wake=counter.held_until)
    new = after_fire(counter.attempts, counter.held_until, facts.now, ctx.settings)
    body = shutdown_job(claim, slot, facts.group or {}, ctx.settings, force=force, number=new.attempts,
                        node=facts.node, **ctx.job_options())
    try:
        job = await create_job(ctx, body, reuse_finished=False)
    except ForeignJob as exc:  # never adopted: say so where people look, and let the pass fail and retry
        if claim is not None:
            await Recorder(ctx).event(claim, "ForeignJob", str(exc), warning=True, key=name_of(body))
        raise
    if claim is not None:
        fields = {**claim_status_fields(new), "shutdownJob": name_of(job)}
        if not persist:
            return Fired(job=job, claim=claim, wake=facts.now + ctx.settings.job_poll_interval, fields=fields)
        claim = await Recorder(ctx).patch_status(claim, fields)
        claim_log(ctx.log, claim).info("fired %s shutdown Job %s (shutdown attempt %d%s)",
                                       "forced" if force else "graceful", name_of(job), new.attempts,
                                       ", holding off after it" if new.held_until else "")
    else:
        await observer.write_shutdown_counter(ctx, slot, new)
        ctx.log.info('slot "%s": fired shutdown Job %s for an unwanted machine (attempt %d)',
                     facts.slot_name, name_of(job), new.attempts)
    return Fired(job=job, claim=claim, wake=facts.now + ctx.settings.job_poll_interval)


async def shut_down_unwanted(ctx: Context, facts: Facts) -> datetime | None:
    """Rows 2 and 11: the machine is on and no live claim wants it. Returns when to look again."""
    waiting, when = wait_for_previous(ctx, facts)
    if waiting:
        return when
    counted_on = facts.view.last_terminal
    fired = await fire(ctx, facts, counted_on, force=False)
    return fired.wake
