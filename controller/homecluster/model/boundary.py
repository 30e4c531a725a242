"""Which corev1 Node the operator may treat as a slot's machine: pure decisions, no I/O.

A slot's author chooses spec.providerID and spec.nodeName, so "the Node carries the slot's providerID"
proves nothing by itself: a slot declaring `k3s://cp-1` would adopt the control plane's Node, read it as
powered on, and have it cordoned and drained by an unwanted-machine shutdown. So a Node is a slot's
only when all of these hold (docs/security.md, "What a slot author can do"):

1. it carries no control-plane role label;
2. no other slot, created earlier, declares the same providerID or node name (the second is refused), nor
   resolves to the same Node (reason Conflict: model.identity matches slots and Nodes by what they resolve to);
3. it matches the operator's --managed-node-selector, when one is set.

A refused Node is not observed for the slot (the slot reads powered off, nothing cordons or drains it)
and the slot says why in its NodeAccepted condition.
"""
from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from homecluster.model.objects import dig, labels_of, name_of, provider_id, required_name, spec_text
from homecluster.names import PROVIDER_ID_SCHEME

Obj = Mapping[str, Any]
CONTROL_PLANE_LABELS = ("node-role.kubernetes.io/control-plane", "node-role.kubernetes.io/master")
CONDITION = "NodeAccepted"



def slot_provider_id(slot: Obj) -> str:
    """The providerID a slot's machine registers with: spec.providerID, default homecluster://<slot>."""
    return spec_text(slot, "providerID") or f"{PROVIDER_ID_SCHEME}{required_name(slot)}"


def slot_node_name(slot: Obj) -> str:
    """The corev1 Node name a slot's machine registers as: spec.nodeName, default the slot's name."""
    return spec_text(slot, "nodeName") or required_name(slot)


def found_by(slot: Obj, node: Obj) -> str:
    """How the slot finds the Node, for messages: 'spec.providerID "k3s://x"' or 'spec.nodeName "x"'."""
    if provider_id(node) == slot_provider_id(slot):
        return f'spec.providerID "{slot_provider_id(slot)}"'
    return f'spec.nodeName "{slot_node_name(slot)}"'


@dataclass(frozen=True)
class Refusal:
    reason: str  # the NodeAccepted condition's reason (CamelCase)
    message: str
    keeper: str = ""  # Conflict: the slot that keeps the Node
    node: str = ""  # Conflict: the Node both slots find


def control_plane_role(node: Obj | None) -> str | None:
    """The control-plane role label the Node carries, or None."""
    labels = labels_of(node)
    return next((label for label in CONTROL_PLANE_LABELS if label in labels), None)


# ---- --managed-node-selector -------------------------------------------------------------------
_KEY = r"[A-Za-z0-9]([A-Za-z0-9._/-]{0,315}[A-Za-z0-9])?"
_VALUE = r"([A-Za-z0-9]([A-Za-z0-9._-]{0,61}[A-Za-z0-9])?)?"
_SET = re.compile(rf"^({_KEY})\s+(in|notin)\s+\(([^()]*)\)$")
_EQ = re.compile(rf"^({_KEY})\s*(==|=|!=)\s*({_VALUE})$")
_EXISTS = re.compile(rf"^(!?)\s*({_KEY})$")


@dataclass(frozen=True)
class Requirement:
    key: str
    op: str  # in, notin, exists, !exists
    values: frozenset[str] = frozenset()

    def matches(self, labels: Mapping[str, str]) -> bool:
        if self.op == "exists":
            return self.key in labels
        if self.op == "!exists":
            return self.key not in labels
        if self.op == "in":
            return self.key in labels and labels[self.key] in self.values
        return self.key not in labels or labels[self.key] not in self.values  # notin, as Kubernetes reads it


@dataclass(frozen=True)
class NodeSelector:
    """A Kubernetes label selector string (`pool=homecluster`, `a in (x,y),!b`); empty matches every Node."""

    text: str
    requirements: tuple[Requirement, ...]

    @classmethod
    def parse(cls, text: str) -> "NodeSelector":
        parts, depth, start = [], 0, 0
        for i, ch in enumerate(text):
            depth += {"(": 1, ")": -1}.get(ch, 0)
            if ch == "," and depth == 0:
                parts.append(text[start:i])
                start = i + 1
        parts.append(text[start:])
        reqs = [_requirement(p.strip(), text) for p in parts if p.strip()]
        if text.strip() and len(reqs) != len(parts):
            raise ValueError(f"--managed-node-selector {text!r}: an empty requirement (a stray comma); "
                             "write it as a Kubernetes label selector, e.g. homecluster.dev/pool=workers")
        return cls(text.strip(), tuple(reqs))

    def matches(self, node: Obj) -> bool:
        labels = labels_of(node)
        return all(r.matches(labels) for r in self.requirements)


def _requirement(part: str, text: str) -> Requirement:
    if m := _SET.match(part):
        values = frozenset(v.strip() for v in m.group(4).split(",") if v.strip())
        return Requirement(m.group(1), m.group(3), values)
    if m := _EQ.match(part):
        return Requirement(m.group(1), "notin" if m.group(3) == "!=" else "in", frozenset({m.group(4)}))
    if m := _EXISTS.match(part):
        return Requirement(m.group(2), "!exists" if m.group(1) else "exists")
    raise ValueError(f"--managed-node-selector {text!r}: cannot read {part!r}; write it as a Kubernetes label "
                     "selector, e.g. homecluster.dev/pool=workers or 'homecluster.dev/pool in (a,b)'")


# ---- the decisions -------------------------------------------------------------------------------
def creation_key(slot: Obj) -> tuple[str, str]:
    """Which of two slots came first: the older metadata.creationTimestamp, then the smaller name (a total
    order, whatever order the watch delivered them in)."""
    return (dig(slot, "metadata", "creationTimestamp", default="") or "", name_of(slot))


def declaration_refusal(slot: Obj, slots: Iterable[Obj]) -> Refusal | None:
    """The refusal of a slot declaring the providerID or node name an earlier slot already declares."""
    me, mine = name_of(slot), creation_key(slot)
    pid, node_name = slot_provider_id(slot), slot_node_name(slot)
    # only slots declaring the same providerID or name matter: sort those alone (a pool of 1,000 slots is read
    # on every provider call that resolves a node)
    same = [o for o in slots if slot_provider_id(o) == pid or slot_node_name(o) == node_name]
    for other in sorted(same, key=creation_key):
        if name_of(other) == me or creation_key(other) > mine:
            continue
        if slot_provider_id(other) == pid:
            return Refusal("DuplicateProviderID", f'slot "{me}": spec.providerID {pid!r} is already declared by '
                           f'slot "{name_of(other)}"; two slots may not share a machine: fix this slot\'s '
                           "spec.providerID (or delete one of the two)")
        if slot_node_name(other) == node_name:
            return Refusal("DuplicateNodeName", f'slot "{me}": spec.nodeName {node_name!r} is already declared by '
                           f'slot "{name_of(other)}"; two slots may not share a machine: fix this slot\'s '
                           "spec.nodeName (or delete one of the two)")
    return None


def node_refusal(slot: Obj, node: Obj | None, slots: Iterable[Obj], selector: NodeSelector | None = None, *,
                 first: Obj | None = None) -> Refusal | None:
    """Why `node` (the Node found by the slot's declared providerID or name) is not the slot's, or None.

    `first` is the first slot that resolves to the same Node (model.identity.first_claimant): when that is
    another slot, this one is refused with reason Conflict."""
    refused = declaration_refusal(slot, slots)
    if refused is not None or node is None:
        return refused
    role = control_plane_role(node)
    if role is not None:
        return Refusal("ControlPlaneNode", f'slot "{name_of(slot)}": Node "{name_of(node)}" carries {role}; a '
                       "control-plane Node is never a slot's machine (not observed, never cordoned or drained): "
                       "fix the slot's spec.providerID and spec.nodeName")
    if first is not None and name_of(first) != name_of(slot):
        return Refusal("Conflict", f'slot "{name_of(slot)}": Node "{name_of(node)}" (found by this slot\'s '
                       f'{found_by(slot, node)}) is already the machine of slot "{name_of(first)}", created first '
                       f"(found by its {found_by(first, node)}); two slots may not share a machine, so this slot "
                       "observes nothing and fires no Job: fix this slot's spec.providerID and spec.nodeName (or "
                       "delete one of the two)", keeper=name_of(first), node=name_of(node))
    if selector is not None and selector.requirements and not selector.matches(node):
        return Refusal("NodeNotManaged", f'slot "{name_of(slot)}": Node "{name_of(node)}" does not match the '
                       f"operator's --managed-node-selector {selector.text!r}: label the machine (k3s --node-label) "
                       "or fix the slot's spec.providerID and spec.nodeName")
    return None
