"""The observation reconciler: the only writer of Node (slot) status.

It writes what the cluster observes about a slot's machine -- powerState, the derived phase (for
display, it decides nothing), the live claim and its attempt, the corev1 Node's name --, the
`lastClaim` digest of the request that ended, and the shutdown counter of a machine no claim asked
for. Every write is one merge patch of the fields that changed, conditional on the slot's
resourceVersion; a steady pool makes no writes at all.

lastClaim is the digest of the most recently finished terminal claim that was an attempt, i.e. whose
startup Job was created (model.attempts.counts_as_attempt): a claim that failed before buying anything
(GroupNotFound, a refused Job, DeadlineExceeded while pending, Superseded, Canceled, ...) is not
written, so it does not move the attempt streak. It is written before a terminal claim's finalizer is
released (lifecycle/attempts.py `record_last_claim`, called by the reversal, writes it through `write_status`
here), so the history outlives the claim.

The write that changes powerState also posts a PowerObservedOn/PowerObservedOff Event on the slot
(lifecycle/slotevents.py): once per change, since a pass that changes nothing writes nothing.
"""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from homecluster.lifecycle.facts import Facts
from homecluster.model.attempts import last_claim_change, newest_attempt
from homecluster.model.objects import claim_phase, conditions_of, dig
from homecluster.model.shutdown import ShutdownCounter, counter_from_slot, settle, slot_status_fields
from homecluster.model.slotstatus import observe_slot, status_changes
from homecluster.model.timestamps import format_time
from homecluster.kube import client as kube
from homecluster.lifecycle.context import Context
from homecluster.lifecycle import conditional, slotconflict, slotevents
from homecluster.model.boundary import CONDITION, Refusal

Obj = Mapping[str, Any]
# fields that never cause a write of their own: a joining Node's name is written with its power change
RIDE_ALONG = frozenset({"nodeName"})


async def write_status(ctx: Context, slot: Obj, fields: Mapping[str, Any]) -> Obj:
    return await conditional.patch(ctx, kube.SLOTS, slot, {"status": dict(fields)}, "status")


async def write_shutdown_counter(ctx: Context, slot: Obj, counter: ShutdownCounter) -> Obj:
    """Persist the slot-owned shutdown counter (a machine on that no claim asked for)."""
    return await write_status(ctx, slot, slot_status_fields(counter))


def desired_changes(facts: Facts, now) -> dict[str, Any] | None:
    """Every status field of the slot that differs from what the facts say, as a merge patch body."""
    slot = facts.slot
    if slot is None:
        return None
    seen = observe_slot(slot, facts.claims, facts.node, facts.group, facts.liveness.why)
    changes = status_changes(dig(slot, "status"), seen.status) or {}
    if set(changes) <= RIDE_ALONG:
        changes = {}  # informational alone: written with the next change that matters (saves a write per boot)
    newest = newest_attempt(facts.claims)
    if newest is not None:
        digest = last_claim_change(slot, newest, now)
        if digest is not None:
            changes["lastClaim"] = digest
    conditions = boundary_conditions(slot, facts.refusal, now)
    if conditions is not None:
        changes["conditions"] = conditions
    counter = counter_from_slot(slot)
    owner = facts.view.owner
    owner_phase = claim_phase(owner) if owner is not None else None
    if (counter.attempts or counter.held_until) and settle(counter, facts.liveness.for_good, owner_phase) != counter:
        changes.update(slot_status_fields(ShutdownCounter()))  # off for good, or a live claim took the machine
    return changes or None


def boundary_conditions(slot: Obj, refusal: Refusal | None, now) -> list[dict] | None:
    """The slot's conditions with NodeAccepted=False while its declared Node is refused (model.boundary),
    without it once accepted; None when that is what the slot already says."""
    held = [c for c in conditions_of(slot) if isinstance(c, Mapping)]
    others = [c for c in held if c.get("type") != CONDITION]
    current = next((c for c in held if c.get("type") == CONDITION), None)
    if refusal is None:
        return others if current is not None else None
    if current is not None and (current.get("status"), current.get("reason"), current.get("message")) == \
            ("False", refusal.reason, refusal.message):
        return None
    return [*others, {"type": CONDITION, "status": "False", "reason": refusal.reason, "message": refusal.message,
                      "lastTransitionTime": format_time(now)}]


async def observe(ctx: Context, facts: Facts) -> Obj | None:
    """Write the slot's status from the facts, when anything changed."""
    changes = desired_changes(facts, ctx.now())
    if not changes or facts.slot is None:
        return facts.slot
    before = dig(facts.slot, "status", "powerState")
    result = await write_status(ctx, facts.slot, changes)
    if "conditions" in changes:  # the NodeAccepted condition changed: a new Conflict is said on both slots, once
        await slotconflict.announce(ctx, facts)
    # once per change: this write is the one that changed powerState, and a steady pool makes none
    moved = slotevents.power_event(before, changes.get("powerState", before))
    if moved is not None:
        reason, text = moved
        await slotevents.post(ctx, result, reason, text, key=f"power/{dig(result, 'metadata', 'resourceVersion')}")
    return result
