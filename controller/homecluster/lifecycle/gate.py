"""The readiness gate: make a joined machine usable for the pool, and only in ways that are ours.

One conditional strategic-merge patch of the corev1 Node does all of it:
- uncordon, but only a cordon carrying names.ANNOTATION_CORDONED_BY (a person's maintenance cordon
  is never lifted: the claim then waits, and the gate's timeout ends it);
- remove cluster-autoscaler's taints (names.CA_TAINTS) that must not survive a power-on;
- set spec.providerID = homecluster://<slot> when the Node has none (instance ids equal providerIDs).
The pool's own readiness taints (Group spec.nodeReadinessTaints) are not ours: the gate waits for
whoever owns them (a CNI agent) to remove them.
"""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from homecluster import names
from homecluster.model.objects import dig, name_of
from homecluster.kube import client as kube
from homecluster.lifecycle.context import Context
from homecluster.kube.cache import NODES

Obj = Mapping[str, Any]


def gate_patch(node: Obj, slot_name: str) -> dict | None:
    """The Node patch the gate needs, or None when there is nothing of ours to change."""
    spec: dict[str, Any] = {}
    metadata: dict[str, Any] = {}
    annotations = dig(node, "metadata", "annotations", default={}) or {}
    if names.ANNOTATION_CORDONED_BY in annotations:
        metadata["annotations"] = {names.ANNOTATION_CORDONED_BY: None}
        if dig(node, "spec", "unschedulable"):
            spec["unschedulable"] = False
    taints = dig(node, "spec", "taints", default=[]) or []
    kept = [t for t in taints if t.get("key") not in names.CA_TAINTS]
    if len(kept) != len(taints):
        spec["taints"] = kept  # taints have no merge key: the list is replaced whole
    if not dig(node, "spec", "providerID"):
        spec["providerID"] = f"{names.PROVIDER_ID_SCHEME}{slot_name}"
    if not spec and not metadata:
        return None
    metadata["resourceVersion"] = dig(node, "metadata", "resourceVersion", default="")
    return {"metadata": metadata, "spec": spec}


def cordon_patch(node: Obj) -> dict | None:
    """Cordon with our mark (so the gate may lift it later); None when already cordoned."""
    if dig(node, "spec", "unschedulable"):
        return None
    return {"metadata": {"resourceVersion": dig(node, "metadata", "resourceVersion", default=""),
                         "annotations": {names.ANNOTATION_CORDONED_BY: names.CORDONED_BY_VALUE}},
            "spec": {"unschedulable": True}}


async def patch_node(ctx: Context, node: Obj, body: dict) -> Obj:
    result = await ctx.client.patch(kube.NODES, name_of(node), body, content_type=kube.STRATEGIC)
    ctx.store.apply(NODES, result)
    return result


async def open_gate(ctx: Context, node: Obj, slot_name: str) -> Obj:
    """Apply the gate's patch if any; returns the Node as now stored."""
    body = gate_patch(node, slot_name)
    if body is None:
        return node
    ctx.log.info('slot "%s": readiness gate patches corev1 Node "%s": %s', slot_name, name_of(node),
                 ", ".join(sorted(set(body["spec"]) | ({"annotations"} & set(body["metadata"])))))
    return await patch_node(ctx, node, body)


async def cordon(ctx: Context, node: Obj, slot_name: str) -> Obj:
    body = cordon_patch(node)
    if body is None:
        return node
    ctx.log.info('slot "%s": cordoned corev1 Node "%s" for the shutdown', slot_name, name_of(node))
    return await patch_node(ctx, node, body)
