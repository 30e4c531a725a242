"""The Node (slot) status a reconciler should write, computed from its inputs, and the minimal patch.

Node.status.phase is computed from the same triple as every decision and decides nothing; a value
that contradicts its inputs is simply overwritten on the next pass. The writer compares what it
computed with what the slot carries and writes only the fields that changed -- or nothing at all,
so a steady pool makes no API writes.

This module computes the observation fields (powerState, phase, claim, attempt, nodeName). The
other status fields of a slot (lastClaim, shutdown, conditions) have their own writers and are left
untouched by the patch, since a merge patch leaves absent keys alone.
"""
from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from homecluster.model.decide import Decision, decide
from homecluster.model.supersede import SlotClaimView, claims_for_slot, slot_claim_view
from homecluster.model.objects import claim_attempt, dig, name_of
from homecluster.model.observe import Observation, observe

Obj = Mapping[str, Any]

OBSERVED_FIELDS = ("powerState", "phase", "claim", "attempt", "nodeName")


@dataclass(frozen=True)
class SlotObservation:
    """One pass over one slot: the claims view, the machine facts, the decision and the status to report."""

    view: SlotClaimView
    observation: Observation
    decision: Decision
    status: dict[str, Any]


def observe_slot(slot: Obj, claims: Iterable[Obj], node: Obj | None, group: Obj | None,
                 silent: str | None = None) -> SlotObservation:
    """Everything a slot reconciler needs from one pass, with no I/O.

    `claims` may be every claim in the cluster: only those whose spec.slotRef names this slot are
    read. `node` is the slot's corev1 Node (None when it has not registered), `group` its Group
    (None when missing: no readiness taints apply); `silent`: model.observe.observe.
    """
    view = slot_claim_view(claims_for_slot(claims, name_of(slot)))
    seen = observe(node, group, silent)
    decision = decide(view.deciding_phase, seen.power, seen.usable, deleting=view.owner_deleting)
    owner = view.owner
    status = {
        "powerState": seen.power.value,
        "phase": decision.phase.value,
        "claim": name_of(owner) if owner is not None else None,
        "attempt": (claim_attempt(owner) or None) if owner is not None else None,
        "nodeName": name_of(node) if node is not None else None,
    }
    return SlotObservation(view, seen, decision, status)


def desired_slot_status(slot: Obj, claims: Iterable[Obj], node: Obj | None, group: Obj | None) -> dict[str, Any]:
    """The observed fields of Node.status: powerState, phase, claim, attempt, nodeName (None: absent)."""
    return observe_slot(slot, claims, node, group).status


def status_changes(current: Mapping[str, Any] | None, desired: Mapping[str, Any]) -> dict[str, Any] | None:
    """The fields of `desired` that differ from `current`, as the body of a JSON merge patch of status.

    A desired None removes a field the slot carries (null in a merge patch) and is skipped when the
    field is already absent. Returns None when nothing changed, so the caller writes nothing.
    The caller sends {"status": <result>} to the status subresource.
    """
    current = current or {}
    changes: dict[str, Any] = {}
    for key, want in desired.items():
        have = current.get(key)
        if want is None:
            if have is not None:
                changes[key] = None
        elif have != want:
            changes[key] = want
    return changes or None


def slot_status_patch(slot: Obj, claims: Iterable[Obj], node: Obj | None, group: Obj | None) -> dict[str, Any] | None:
    """The merge patch {"status": {...changed fields...}} for the slot, or None when it is up to date."""
    changes = status_changes(dig(slot, "status"), desired_slot_status(slot, claims, node, group))
    return {"status": changes} if changes else None
