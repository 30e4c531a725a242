"""The NodeClaim admission check: one live claim per slot, and none on a slot being removed (the pure part;
kopf wiring lives elsewhere).

The specification enforces the rule twice, here and in the claim controller, because admission cannot see
concurrent creates, hand-applied claims or a webhook that was down. This module only decides; the
framework that serves it adds nothing to the text, so the refusal reads exactly as the specification shows:

  spec.slotRef: Forbidden: slot "worker-01" already has the live NodeClaim "worker-01-7f4b9c" in phase
  "booting": one live claim per slot

A claim naming a slot marked for deletion (pruned from Git, its finalizer letting the machine go) is refused
too (model.slotremoval.refusal_text):

  spec.slotRef: Forbidden: slot "worker-01" is being removed (it is marked for deletion): no new claim may
  start on it; name another slot in spec.slotRef
"""
from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from homecluster.model.slotremoval import refusal_text

TERMINAL_PHASES = frozenset({"failed", "completed"})
FIELD = "spec.slotRef"


def _get(obj: Any, *path: str) -> Any:
    for key in path:
        if not isinstance(obj, Mapping):
            return None
        obj = obj.get(key)
    return obj


def phase_of(claim: Mapping[str, Any]) -> str:
    """The claim's phase, an empty or missing phase read as pending (the specification's rule)."""
    return _get(claim, "status", "phase") or "pending"


def is_live(claim: Mapping[str, Any]) -> bool:
    """Live while its phase is not terminal. A claim marked for deletion is still live: its reversal runs."""
    return phase_of(claim) not in TERMINAL_PHASES


def check_claim_admission(operation: str, claim: Mapping[str, Any],
                          live_claims_of_slot: Iterable[Mapping[str, Any]],
                          slot_object: Mapping[str, Any] | None = None) -> str | None:
    """None to admit, or the refusal text (without the field path and "Forbidden", which denial() adds).

    Only CREATE of a live claim is checked: deletes are never refused, and slotRef is immutable
    (the CRD enforces it), so an update cannot move a claim onto a taken slot. `live_claims_of_slot`
    may contain the claim itself (a retried create) and terminal claims; both are ignored. `slot_object`
    is the slot the claim names as the cache holds it (None: unknown); one marked for deletion refuses.
    """
    if operation.upper() != "CREATE" or not is_live(claim):
        return None
    slot = _get(claim, "spec", "slotRef")
    if _get(slot_object, "metadata", "deletionTimestamp") and _get(slot_object, "metadata", "name") == slot:
        return refusal_text(str(slot))
    me = _get(claim, "metadata", "name")
    for other in live_claims_of_slot:
        other_name = _get(other, "metadata", "name")
        if other_name == me or _get(other, "spec", "slotRef") != slot or not is_live(other):
            continue
        return (f'slot "{slot}" already has the live NodeClaim "{other_name}" in phase '
                f'"{phase_of(other)}": one live claim per slot')
    return None


def forbidden_status(message: str, field: str = FIELD) -> dict[str, Any]:
    """The metav1.Status of a field.Forbidden (on spec.slotRef unless told), as a Go webhook built on
    controller-runtime sends.

    `message` is the full text ("<field>: Forbidden: <text>"), kept exactly; the cause carries the
    field, the reason FieldValueForbidden and <text>.
    """
    prefix = f"{field}: Forbidden: "
    text = message[len(prefix):] if message.startswith(prefix) else message
    return {"metadata": {}, "status": "Failure", "code": 403, "reason": "Forbidden", "message": message,
            "details": {"causes": [{"field": field, "reason": "FieldValueForbidden", "message": text}]}}
