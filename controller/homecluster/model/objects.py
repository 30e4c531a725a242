"""Read-only accessors for the dict shapes of API objects (Node slot, NodeClaim, Group, corev1 Node).

The model takes objects exactly as the Kubernetes API returns them; these helpers keep the
"missing metadata / missing status / field is null" cases in one place, so the decision modules
read like the specification instead of like defensive dict walking.
"""
from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime, timezone
from typing import Any

from homecluster.model.phases import ClaimPhase, effective_phase
from homecluster.model.timestamps import parse_time

Obj = Mapping[str, Any]

# A claim with no creationTimestamp (a hand-built object that never went through the API server)
# sorts as the oldest, so a real claim always wins over it.
EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)


def dig(obj: Obj | None, *path: str, default: Any = None) -> Any:
    """obj[path[0]][path[1]]..., or default when any step is missing or null."""
    current: Any = obj
    for key in path:
        if not isinstance(current, Mapping):
            return default
        current = current.get(key)
        if current is None:
            return default
    return current


def name_of(obj: Obj | None) -> str:
    """metadata.name, or "" when absent."""
    return dig(obj, "metadata", "name", default="")


def uid_of(obj: Obj | None) -> str:
    """metadata.uid, or "" when absent."""
    return dig(obj, "metadata", "uid", default="")


def resource_version(obj: Obj | None) -> str:
    """metadata.resourceVersion, or "" when absent (a conditional write then carries none)."""
    return dig(obj, "metadata", "resourceVersion", default="")


def labels_of(obj: Obj | None) -> Mapping[str, Any]:
    """metadata.labels, {} when absent or null."""
    return dig(obj, "metadata", "labels") or {}


def finalizers_of(obj: Obj | None) -> list[Any]:
    """metadata.finalizers, [] when absent or null (the object's own list: copy it before changing it)."""
    return dig(obj, "metadata", "finalizers") or []


def owner_references(obj: Obj | None) -> list[Any]:
    """metadata.ownerReferences, [] when absent or null."""
    return dig(obj, "metadata", "ownerReferences") or []


def conditions_of(obj: Obj | None) -> list[Any]:
    """status.conditions (a slot's, a corev1 Node's, a Job's), [] when absent or null."""
    return dig(obj, "status", "conditions") or []


def phase_text(obj: Obj | None) -> str:
    """status.phase as written (a claim's, a slot's, a pod's), "" when absent; the model's rules read a claim's
    through claim_phase."""
    return dig(obj, "status", "phase") or ""


def slot_group(slot: Obj | None) -> str:
    """A slot's spec.groupRef: the Group it belongs to, "" when absent."""
    return dig(slot, "spec", "groupRef", default="")


def power_state_text(slot: Obj | None) -> str:
    """A slot's status.powerState as written, "" when absent."""
    return dig(slot, "status", "powerState") or ""


def annotations_of(obj: Obj | None) -> Mapping[str, Any]:
    """metadata.annotations, {} when absent or null."""
    return dig(obj, "metadata", "annotations") or {}


def provider_id(obj: Obj | None) -> str:
    """spec.providerID (a corev1 Node's, or the one a slot declares as written), "" when absent."""
    return dig(obj, "spec", "providerID", default="")


def unschedulable(node: Obj | None) -> bool:
    """A corev1 Node's spec.unschedulable: it is cordoned."""
    return bool(dig(node, "spec", "unschedulable"))


def taints_of(node: Obj | None) -> list[Any]:
    """A corev1 Node's spec.taints, [] when absent or null."""
    return dig(node, "spec", "taints") or []


def slot_last_claim(slot: Obj | None) -> Any:
    """A slot's status.lastClaim (the digest of its last ended claim, model.attempts), None when absent."""
    return dig(slot, "status", "lastClaim")


def describe(obj: Obj | None, kind: str) -> str:
    """'NodeClaim "worker-01-7f4b9c"' for error messages."""
    return f'{kind} "{name_of(obj) or "<unnamed>"}"'


def marked_for_deletion(obj: Obj | None) -> bool:
    """metadata.deletionTimestamp is set: the object is being deleted (its finalizers still run)."""
    return bool(dig(obj, "metadata", "deletionTimestamp"))


def created_at(obj: Obj | None) -> datetime:
    """metadata.creationTimestamp as an aware datetime; EPOCH when absent."""
    return time_field(obj, "metadata", "creationTimestamp") or EPOCH


def time_field(obj: Obj | None, *path: str) -> datetime | None:
    """A timestamp field read as an aware UTC datetime, or None when absent."""
    return parse_time(dig(obj, *path), field=f"{'.'.join(path)} of {name_of(obj) or '<unnamed>'}")


def claim_phase(claim: Obj) -> ClaimPhase:
    """The claim's effective phase: status.phase, with an empty phase read as pending."""
    return effective_phase(dig(claim, "status", "phase"))


def claim_slot(claim: Obj) -> str:
    """spec.slotRef: the slot the claim asks to be on."""
    return dig(claim, "spec", "slotRef", default="")


def claim_attempt(claim: Obj) -> int:
    """status.attempt, 0 when not yet seeded."""
    return int(dig(claim, "status", "attempt", default=0) or 0)


def claim_startup_job(claim: Obj | None) -> str:
    """A claim's status.startupJob: the name of the Job that powers its machine on, "" before one is named."""
    return dig(claim, "status", "startupJob") or ""


def claim_shutdown_job(claim: Obj | None) -> str:
    """A claim's status.shutdownJob: the name of its reversal's Job, "" before one is named."""
    return dig(claim, "status", "shutdownJob") or ""


def claim_reason(claim: Obj | None) -> str:
    """A claim's status.reason, "" when absent."""
    return dig(claim, "status", "reason", default="")


def required_name(obj: Obj) -> str:
    """metadata.name; an object without one cannot be indexed (ValueError names what came)."""
    name = (obj.get("metadata") or {}).get("name")
    if not name:
        raise ValueError(f"object without metadata.name cannot be cached: {str(obj)[:200]}")
    return name


def spec_text(obj: Obj, field: str) -> str:
    """spec.<field> as text, "" when absent."""
    return ((obj.get("spec") or {}).get(field)) or ""
