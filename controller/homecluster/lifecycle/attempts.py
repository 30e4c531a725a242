"""The attempt rule's lifecycle half (the rule itself, pure, is model/attempts.py).

A claim's attempt number is seeded from its slot's lastClaim, and lastClaim is the digest of the last claim
that ended after buying a boot. Here are the effects that keep both, in the order a pass meets them:
- `ended_claim_unrecorded` / `record_ended`: a claim that ended in an earlier pass gets its digest on the slot
  first (the slot status step writes it), so the seed below reads the history it belongs after;
- `unseeded` / `seed`: a live claim not yet stamped gets status.attempt (Recorder.seed) and the slot reports
  pending before anything is bought; the pass then stops (lifecycle.slotpass);
- `record_last_claim`: the digest written for a claim that just ended, before its finalizer is released
  (called by the reversal), so the history outlives the claim.
Every slot status write goes through lifecycle.slotstatus.
"""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from homecluster.lifecycle import slotstatus
from homecluster.lifecycle.context import Context
from homecluster.lifecycle.facts import Facts
from homecluster.lifecycle.recorder import Recorder
from homecluster.model.attempts import last_claim_change, needs_seed, newest_attempt
from homecluster.model.objects import claim_phase, marked_for_deletion, name_of
from homecluster.model.phases import is_live
from homecluster.logging import slot_log

Obj = Mapping[str, Any]


def ended_claim_unrecorded(facts: Facts) -> bool:
    """The slot's newest attempt has ended and its digest is not the slot's lastClaim yet."""
    newest = newest_attempt(facts.claims)
    return (newest is not None and facts.slot is not None
            and last_claim_change(facts.slot, newest, facts.now) is not None)


async def record_ended(ctx: Context, facts: Facts) -> None:
    """Write the ended claim's digest (with whatever else the slot status says) before the seed reads it."""
    await slotstatus.observe(ctx, facts)


def unseeded(facts: Facts) -> list[Obj]:
    """The live claims not yet stamped with status.attempt (nor marked for deletion)."""
    return [claim for claim in facts.claims
            if is_live(claim_phase(claim)) and needs_seed(claim) and not marked_for_deletion(claim)]


async def seed(ctx: Context, facts: Facts) -> None:
    """Stamp every unseeded live claim, then write the slot status: it reports pending before anything is bought."""
    rec = Recorder(ctx)
    for claim in unseeded(facts):
        await rec.seed(claim, facts.slot)
    await slotstatus.observe(ctx, facts.again(ctx.store))


async def record_last_claim(ctx: Context, slot: Obj | None, claim: Obj) -> Obj | None:
    """Write lastClaim for a claim that just ended (before its finalizer is released)."""
    if slot is None:
        return None
    digest = last_claim_change(slot, claim, ctx.now())
    if digest is None:
        return slot
    slot_log(ctx.log, name_of(slot)).info("lastClaim is now %s (%s, attempt %s)", digest["name"], digest["phase"],
                                          digest["attempt"])
    return await slotstatus.write_status(ctx, slot, {"lastClaim": digest})
