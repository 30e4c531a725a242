"""Where a lifecycle Job's pod may run: never on a slot's Node. Pure, no I/O.

A shutdown Job scheduled onto the machine it powers off kills itself half-way, and a startup Job on
another pool machine dies when that machine is given back. So every lifecycle Job carries a required
node affinity that excludes the Node of every slot the operator knows, by Node name
(`matchFields: metadata.name NotIn`, the only field a node selector term may match). The names are
known before any of those Nodes registers (a slot declares spec.nodeName, default its own name), so
there is no moment when a new pool Node is eligible; a label would have to be put on the Node after it
registered, and the scheduler could bind a pod to it in between.

The Group's spec.jobs.nodeSelector and tolerations are kept as the Group gives them: the scheduler
requires the nodeSelector and the affinity both, so this only ever narrows where the pod goes.

Bounded: kube-apiserver accepts exactly one value per `metadata.name` requirement, so the term holds
one requirement per Node, at most MAX_AVOIDED_NODES of them (the largest pool's maxSize). Past that,
the slot's own Node comes first, then the Nodes of its pool, then the others by name; the rest are not
excluded by the affinity (the Group's spec.jobs.nodeSelector still applies; docs/job-contract.md).
"""
from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

from homecluster.limits import MAX_POOL_SIZE
from homecluster.model.boundary import slot_node_name
from homecluster.model.objects import dig, name_of

MAX_AVOIDED_NODES = MAX_POOL_SIZE
# a corev1 Node name: a DNS subdomain (anything else names no Node, and kube-apiserver would refuse it)
_NODE_NAME = re.compile(r"^[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?$")


def _node_name(slot: Mapping[str, Any]) -> str | None:
    try:
        name = slot_node_name(slot)
    except ValueError:  # a slot without a name
        return None
    return name if isinstance(name, str) and _NODE_NAME.match(name) else None


def avoided_nodes(slot: Mapping[str, Any], slots: Iterable[Mapping[str, Any]] = (),
                  node: Mapping[str, Any] | None = None, never_slots: Iterable[str] = (),
                  registered: Mapping[str, str] | None = None) -> list[str]:
    """The Node names a Job of `slot` must not run on: its own, its pool's, then every other slot's.

    `node` is the Node accepted as the slot's machine, when one is (it may carry another name than the
    slot declares: it was matched by providerID). `registered` maps a slot's name to the name of the Node
    found for it by providerID, for every slot whose machine registered under another name than it
    declares: that Node is avoided too. `never_slots` names existing Nodes the operator never takes as a
    slot's machine (a control-plane Node, one outside --managed-node-selector: model.boundary): a slot
    that declares one of them does not keep the Jobs off it. At most MAX_AVOIDED_NODES, in that order;
    no repeats.
    """
    found = registered or {}

    def names(s: Mapping[str, Any]) -> list[str]:
        by_id = found.get(dig(s, "metadata", "name", default=""))
        return [n for n in (by_id if isinstance(by_id, str) and _NODE_NAME.match(by_id) else None, _node_name(s))
                if n]

    group = dig(slot, "spec", "groupRef", default="")
    own = ([name_of(node)] if node is not None else []) + names(slot)
    others = [(dig(s, "spec", "groupRef", default="") != group, name) for s in slots for name in names(s)]
    ordered = own + [name for _, name in sorted(others)]
    refused = set(never_slots) - {name_of(node) if node is not None else ""}
    return [n for n in dict.fromkeys(ordered) if n not in refused][:MAX_AVOIDED_NODES]


def job_affinity(avoided: list[str]) -> dict[str, Any] | None:
    """The pod's affinity: a required term excluding every Node in `avoided` (None when it is empty)."""
    if not avoided:
        return None
    term = {"matchFields": [{"key": "metadata.name", "operator": "NotIn", "values": [name]} for name in avoided]}
    return {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [term]}}}
