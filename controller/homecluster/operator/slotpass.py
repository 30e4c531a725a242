"""One pass over one slot: read the facts from the cache, ask the model, perform what it names.

Order within a pass, and why:
1. seed: a claim not yet stamped gets status.attempt (from the slot's lastClaim) and nothing else
   happens in that pass -- the slot observer then reports it `pending` before anything is bought,
   and the pass re-runs at once (any pass that wrote re-runs, so a chain of moves needs no events).
2. supersede: extra live claims end failed/Superseded; the newest owns the slot.
3. the owner's action, from model.decide on (claim phase, observed power, usability, deletion):
   START / pending MONITOR_BOOT -> launch; booting MONITOR_BOOT -> boot monitor (Job, registration,
   readiness gate); ready -> deadline heal, MachineGone clock, gate for a not-usable Node;
   REVERSE / COMPLETE -> the finalizer's reversal; SHUTDOWN -> the unwanted machine's shutdown.
4. the slot observer writes the slot's status from the facts as they now are.
5. TTL collection of terminal claims (after the observer, so lastClaim is already on the slot).
The pass returns when the slot must next be looked at (deadlines, clocks, hold-offs, TTLs).
"""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from homecluster.claims import bootmonitor, deadline, gate, launch, machinegone, reversal, shutdowns, supersede, ttl
from homecluster.claims.facts import Facts
from homecluster.claims.recorder import Recorder
from homecluster.model.attempts import needs_seed
from homecluster.model.decide import Action, decide
from homecluster.model.objects import claim_phase, marked_for_deletion
from homecluster.model.phases import ClaimPhase, is_live
from homecluster.operator.context import Context
from homecluster.slots import observer

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
        return await shutdowns.shut_down_unwanted(ctx, facts), decision.row
    if owner is None:
        return None, decision.row
    phase = claim_phase(owner)
    if phase == ClaimPhase.PENDING:  # rows 3 and 4: "pending" only means no Job exists yet
        await launch.launch(ctx, facts, owner)
        return None, decision.row
    if phase == ClaimPhase.BOOTING:
        step = await bootmonitor.monitor(ctx, facts, owner)
        return step.wake, decision.row
    # ready: rows 6, 7, 8
    claim = await deadline.heal_ready(ctx, owner)
    claim, expires = await machinegone.tick(ctx, facts, claim)
    if action == Action.GATE and claim_phase(claim) == ClaimPhase.READY and facts.node is not None:
        await gate.open_gate(ctx, facts.node, facts.slot_name)
    return expires, decision.row


async def run_pass(ctx: Context, slot_name: str) -> PassResult:
    writes_before = ctx.client.writes
    now = ctx.now()
    facts = Facts.gather(ctx.store, slot_name, now)
    if facts.slot is not None and _last_claim_pending(facts, now):
        await observer.observe(ctx, facts)  # lastClaim first: the seed below reads it
    if await _seed(ctx, Facts.gather(ctx.store, slot_name, now)):
        await observer.observe(ctx, Facts.gather(ctx.store, slot_name, now))
        return PassResult(None, True)
    facts = Facts.gather(ctx.store, slot_name, now)
    if facts.view.superseded:
        await supersede.supersede(ctx, facts)
        facts = Facts.gather(ctx.store, slot_name, now)
    wake, row = await _owner(ctx, facts)
    facts = Facts.gather(ctx.store, slot_name, now)
    await observer.observe(ctx, facts)
    collect = await ttl.collect(ctx, Facts.gather(ctx.store, slot_name, now))
    return PassResult(_earliest(wake, collect), ctx.client.writes != writes_before, row)


def _last_claim_pending(facts: Facts, now: datetime) -> bool:
    """A claim ended in an earlier pass and its digest is not on the slot yet (seed reads it)."""
    newest = observer.newest_attempt(facts.claims)
    return newest is not None and facts.slot is not None and \
        observer.last_claim_change(facts.slot, newest, now) is not None
