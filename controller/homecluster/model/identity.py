"""One machine, one slot: which slot a corev1 Node belongs to, decided by what each slot RESOLVES to. Pure.

A slot finds its Node by its providerID (spec.providerID, default homecluster://<slot>), else by its node
name (spec.nodeName, default the slot's name). Two slots that declare nothing in common can still find the
same Node: slot A declares nothing and finds `worker-01` by name while that Node carries `k3s://worker-01`;
slot B declares `providerID: k3s://worker-01` and finds it by providerID. Comparing declarations
(model.boundary.declaration_refusal) cannot see that, so the match is made on the Node each resolves to.

The first slot to resolve to a Node keeps it; "first" is the older metadata.creationTimestamp, then the
smaller name -- a total order that does not depend on which watch event the cache saw last. Every later
slot resolving to the same Node is refused with reason `Conflict` (model.boundary.node_refusal): its Node
is not observed for it, and it fires no Job (lifecycle.slotconflict). The controller (kube.store) and the
autoscaler's provider (provider.logic) both read the answer from here, so they agree whatever the cache order.
"""
from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, Protocol

from homecluster.model.boundary import (NodeSelector, Refusal, control_plane_role, creation_key, node_refusal,
                                        slot_node_name, slot_provider_id)
from homecluster.model.objects import name_of, provider_id

Obj = Mapping[str, Any]
CONFLICT = "Conflict"  # the NodeAccepted reason of a slot whose Node an earlier slot resolves to
# the refusals that say "this machine is another slot's": such a slot fires no Job (lifecycle.slotconflict)
ANOTHER_SLOTS_MACHINE = frozenset({CONFLICT, "DuplicateProviderID", "DuplicateNodeName"})


class NodeIndex(Protocol):
    """The corev1 Nodes by providerID and by name (kube.cache.Cache is one)."""

    def node_by_provider_id(self, provider_id: str) -> Obj | None: ...

    def node_by_name(self, name: str) -> Obj | None: ...


def resolved_node(slot: Obj, index: NodeIndex) -> Obj | None:
    """The corev1 Node the slot finds: by its providerID, else by its node name (not yet vetted)."""
    return index.node_by_provider_id(slot_provider_id(slot)) or index.node_by_name(slot_node_name(slot))


def candidates(node: Obj | None, slots: Iterable[Obj]) -> list[Obj]:
    """The slots that could find `node`: those declaring its providerID or its name (whether they do find it
    depends on the other Nodes: a slot's providerID wins over its node name)."""
    if node is None:
        return []
    name, pid = name_of(node), provider_id(node)
    return [s for s in slots if slot_node_name(s) == name or (pid and slot_provider_id(s) == pid)]


def claimants(node: Obj | None, slots: Iterable[Obj], index: NodeIndex) -> list[Obj]:
    """Every slot that resolves to `node`, first (oldest creationTimestamp, then name) first."""
    name = name_of(node)
    return sorted((s for s in candidates(node, slots) if name_of(resolved_node(s, index)) == name),
                  key=creation_key)


def first_claimant(node: Obj | None, slots: Iterable[Obj], index: NodeIndex) -> Obj | None:
    """The slot that keeps `node` when several resolve to it (None: no slot resolves to it)."""
    found = claimants(node, slots, index)
    return found[0] if found else None


def slot_refusal(slot: Obj, slots: Iterable[Obj], index: NodeIndex,
                 selector: NodeSelector | None = None) -> Refusal | None:
    """Why the Node the slot resolves to is not its machine (model.boundary, plus Conflict), or None."""
    slots = list(slots)
    node = resolved_node(slot, index)
    first = first_claimant(node, slots, index)
    return node_refusal(slot, node, slots, selector, first=first)


def node_owner(node: Obj | None, slots: Iterable[Obj], index: NodeIndex,
               selector: NodeSelector | None = None) -> Obj | None:
    """The slot whose machine `node` is: the first slot resolving to it, when the boundary accepts it; else None."""
    slots = list(slots)
    first = first_claimant(node, slots, index)
    if first is None or slot_refusal(first, slots, index, selector) is not None:
        return None
    return first


def declaring_slot(key: str, slots: Iterable[Obj], index: NodeIndex, selector: NodeSelector | None = None,
                   *, by_provider_id: bool) -> Obj | None:
    """The accepted slot that declares `key` as its providerID (or its node name / its providerID, when
    `by_provider_id` is False: the autoscaler names an unregistered instance by its id), first first.

    For instances with no corev1 Node yet (the autoscaler's placeholders); a Node that exists is matched
    with `node_owner` instead."""
    if not key:
        return None
    slots = list(slots)
    named = [s for s in slots if slot_provider_id(s) == key or (not by_provider_id and slot_node_name(s) == key)]
    return next((s for s in sorted(named, key=creation_key) if slot_refusal(s, slots, index, selector) is None), None)


_NEWEST = "9999-12-31T23:59:59Z"  # a slot being admitted comes after every slot that exists


def admission_refusal(operation: str, slot: Obj, old: Obj | None, slots: Iterable[Obj],
                      index: NodeIndex) -> Refusal | None:
    """Why a slot write must be refused at admission (the Node webhook), or None to admit it.

    A CREATE, or an UPDATE that changes what the slot declares (spec.providerID, spec.nodeName), is refused
    when the slot would be the second to declare a machine or to resolve to a Node: the slots that exist keep
    theirs. An UPDATE that leaves the declarations alone is never refused (the slot keeps whatever it had).
    Only what can be known at admission is checked: a Node that registers later is settled by the controller
    (`slot_refusal`, reason Conflict)."""
    name = name_of(slot)
    if operation.upper() not in ("CREATE", "UPDATE") or not name:
        return None
    if operation.upper() == "UPDATE" and old is not None and \
            (slot_provider_id(old), slot_node_name(old)) == (slot_provider_id(slot), slot_node_name(slot)):
        return None
    newest = {**slot, "metadata": {**(slot.get("metadata") or {}), "creationTimestamp": _NEWEST}}
    refusal = slot_refusal(newest, [*(s for s in slots if name_of(s) != name), newest], index)
    return refusal if refusal is not None and refusal.reason in ANOTHER_SLOTS_MACHINE else None


def admission_field(refusal: Refusal) -> str:
    """The field a slot's admission refusal names."""
    return "spec.nodeName" if refusal.reason == "DuplicateNodeName" else "spec.providerID"


def slots_with_anothers_machine(slots: Iterable[Obj], index: NodeIndex) -> set[str]:
    """The names of the slots refused because their machine is another slot's (the ANOTHER_SLOTS_MACHINE
    reasons of `slot_refusal`), for a whole pool in one sort rather than one `slot_refusal` per slot."""
    taken_ids: set[str] = set()
    taken_names: set[str] = set()
    taken_nodes: set[str] = set()
    refused: set[str] = set()
    for slot in sorted(slots, key=creation_key):
        pid, node_name, node = slot_provider_id(slot), slot_node_name(slot), resolved_node(slot, index)
        found = name_of(node) if node is not None and control_plane_role(node) is None else ""
        if pid in taken_ids or node_name in taken_names or (found and found in taken_nodes):
            refused.add(name_of(slot))
        taken_ids.add(pid)
        taken_names.add(node_name)
        if found:
            taken_nodes.add(found)
    return refused
