"""One pass over one slot: read the facts from the cache, ask the model, perform what it names.

Order within a pass, and why:
1. seed: a claim not yet stamped gets status.attempt (from the slot's lastClaim) and nothing else
   happens in that pass -- the slot observer then reports it `pending` before anything is bought,
   and the pass re-runs at once (any pass that wrote re-runs, so a chain of moves needs no events).
2. supersede: extra live claims end failed/Superseded; the newest owns the slot.
3. the owner's action, from model.decide on (claim phase, observed power, usability, deletion):
   START / pending MONITOR_BOOT -> launch (held pending while a shutdown Job of the slot runs);
   booting MONITOR_BOOT -> boot monitor (Job, registration, readiness gate); ready -> deadline heal,
   MachineGone clock, gate for a not-usable Node;
   REVERSE / COMPLETE -> the finalizer's reversal; SHUTDOWN -> the unwanted machine's shutdown.
4. the slot observer writes the slot's status from the facts as they now are -- also when the action
   failed with an API error (a refused Job create), so the display never freezes on a stale phase.
5. TTL collection of terminal claims (after the observer, so lastClaim is already on the slot).
The pass returns when the slot must next be looked at (deadlines, clocks, hold-offs, TTLs).
"""
from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from homecluster.lifecycle import bootmonitor, collection, deadlines, gate, launch, machinegone, reversal, shutdown, supersede
from homecluster.lifecycle.facts import Facts
from homecluster.lifecycle.recorder import Recorder
from homecluster.model.attempts import counts_as_attempt, last_claim_change, needs_seed, newest_attempt
from homecluster.model.decide import Action, decide
from homecluster.model.objects import claim_phase, dig, marked_for_deletion
from homecluster.model.phases import ClaimPhase, is_live, is_terminal
from homecluster.names import FINALIZER
from homecluster.kube import client as kube
from homecluster.lifecycle.context import Context
from homecluster.lifecycle import slotstatus

Obj = Mapping[str, Any]


@dataclass(frozen=True)
class PassResult:
    wake: datetime | None  # the next moment this slot needs a pass (None: only events)
    wrote: bool  # the pass changed something: run it again at once
    row: int | None = None  # the decision table row the owner's action came from


def _earliest(*moments: datetime | None) -> datetime | None:
    present = [m for m in moments if m is not None]
    return min(present) if present else None


async def _seed(ctx: Context, facts: Facts) -> bool:
    rec = Recorder(ctx)
    seeded = False
    for claim in facts.claims:
        if is_live(claim_phase(claim)) and needs_seed(claim) and not marked_for_deletion(claim):
            await rec.seed(claim, facts.slot)
            seeded = True
    return seeded


async def _owner(ctx: Context, facts: Facts) -> tuple[datetime | None, int | None]:
    """Run the owner's (or the unwanted machine's) action; returns (wake, table row)."""
    view = facts.view
    decision = decide(view.deciding_phase, facts.power, facts.observation.usable, deleting=view.owner_deleting)
    owner = view.owner
    action = decision.action
    if action in (Action.REVERSE, Action.COMPLETE) and owner is not None:
        _, wake = await reversal.reverse(ctx, facts, owner)
        return wake, decision.row
    if action == Action.SHUTDOWN:
        return await shutdown.shut_down_unwanted(ctx, facts), decision.row
    if owner is None:
        return None, decision.row
    phase = claim_phase(owner)
    if phase == ClaimPhase.PENDING:  # rows 3 and 4: "pending" only means no Job exists yet
        claim = await launch.launch(ctx, facts, owner)
        held = claim_phase(claim) == ClaimPhase.PENDING  # waiting for a shutdown Job (or its pod) of the slot to end
        wake = (shutdown.quiet(ctx, facts) or facts.now + ctx.settings.job_poll_interval) if held else None
        return wake, decision.row  # (a pod's end is not watched: polled)
    if phase == ClaimPhase.BOOTING:
        step = await bootmonitor.monitor(ctx, facts, owner)
        return step.wake, decision.row
    # ready: rows 6, 7, 8
    claim = await deadlines.heal_ready(ctx, owner)
    claim, expires = await machinegone.tick(ctx, facts, claim)
    if action == Action.GATE and claim_phase(claim) == ClaimPhase.READY and facts.node is not None:
        await gate.open_gate(ctx, facts.node, facts.slot_name)
    return expires, decision.row


async def run_pass(ctx: Context, slot_name: str) -> PassResult:
    writes_before = ctx.client.writes
    now = ctx.now()
    facts = Facts.gather(ctx.store, slot_name, now)
    if facts.slot is not None and _last_claim_pending(facts, now):
        await slotstatus.observe(ctx, facts)  # lastClaim first: the seed below reads it
    if await _seed(ctx, Facts.gather(ctx.store, slot_name, now)):
        await slotstatus.observe(ctx, Facts.gather(ctx.store, slot_name, now))
        return PassResult(None, True)
    facts = Facts.gather(ctx.store, slot_name, now)
    if facts.view.superseded:
        await supersede.supersede(ctx, facts)
        facts = Facts.gather(ctx.store, slot_name, now)
    try:
        wake, row = await _owner(ctx, facts)
    except (kube.ApiError, OSError, asyncio.TimeoutError) as exc:
        # The action was refused (a Job create refused by a quota or an admission policy, an API error):
        # the slot still reports what is observed -- PHASE is computed from the facts, not from the
        # action's success -- then the error goes to the controller's retry policy (which backs off, so
        # without this the display would freeze). A conflict re-runs the pass at once: nothing to add.
        if not isinstance(exc, (kube.Conflict, kube.NotFound)):
            with contextlib.suppress(kube.ApiError, OSError, asyncio.TimeoutError):
                await slotstatus.observe(ctx, Facts.gather(ctx.store, slot_name, now))
        raise
    facts = Facts.gather(ctx.store, slot_name, now)
    await slotstatus.observe(ctx, facts)
    await _release_ended(ctx, Facts.gather(ctx.store, slot_name, now))
    collect = await collection.collect(ctx, Facts.gather(ctx.store, slot_name, now))
    return PassResult(_earliest(wake, collect), ctx.client.writes != writes_before, row)


async def _release_ended(ctx: Context, facts: Facts) -> None:
    """Drop our finalizer from terminal claims marked for deletion: a delete is never refused.

    A boot that fails (lifecycle.deadlines.fail_boot, MachineGone) ends the claim `failed` with the
    finalizer its launch added, and the reversal only ever runs for a live owner -- so without this a
    failed claim deleted by the autoscaler (DeleteNodes of a creation error), a person or the TTL
    collection stayed Terminating forever. Released once its digest is on the slot (the history
    outlives the claim) and none of its OWN Jobs runs (a forced shutdown the claim owns finishes first:
    deleting the claim would delete that Job partway). It never waits for the slot's machine: that may
    belong to a newer claim, and a machine nobody wants is the unwanted-machine shutdown's business.
    """
    for claim in facts.claims:
        if not (is_terminal(claim_phase(claim)) and marked_for_deletion(claim)
                and FINALIZER in (dig(claim, "metadata", "finalizers", default=[]) or [])):
            continue
        if facts.running_jobs_of(claim):
            continue  # its own pending work; the Job's end wakes the slot
        if facts.slot is not None and counts_as_attempt(claim) \
                and last_claim_change(facts.slot, claim, facts.now) is not None:
            continue  # the observer writes the digest first; the write re-runs the pass
        await Recorder(ctx).remove_finalizer(claim)


def _last_claim_pending(facts: Facts, now: datetime) -> bool:
    """A claim ended in an earlier pass and its digest is not on the slot yet (seed reads it)."""
    newest = newest_attempt(facts.claims)
    return newest is not None and facts.slot is not None and \
        last_claim_change(facts.slot, newest, now) is not None
