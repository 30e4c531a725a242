"""The readiness gate: make a joined machine usable for the pool, and only in ways that are ours.

One conditional strategic-merge patch of the corev1 Node does all of it:
- uncordon, but only a cordon carrying names.ANNOTATION_CORDONED_BY, or cluster-autoscaler's own: a cordon
  on a Node that carries its ToBeDeletedByClusterAutoscaler taint (it cordons before DeleteNodes and leaves
  both on the Node of a machine now off; left in place, the machine's next boot joins cordoned, the pods
  stay pending and the autoscaler deletes the empty node again). A person's maintenance cordon is never
  lifted: the claim then waits, and the gate's timeout ends it. The autoscaler's cordon is lifted at boot only;
- remove cluster-autoscaler's taints (names.CA_TAINTS) that must not survive a power-on (at boot only: on a
  ready claim's Node they are the autoscaler's drain in progress, gate_patch's `boot`);
- set spec.providerID = homecluster://<slot> when the Node has none (instance ids equal providerIDs);
- mark the Node as the slot's machine: label names.LABEL_MACHINE_OF = <slot>. The ValidatingAdmissionPolicy
  of config/policy lets a lifecycle Job's token patch only Nodes with that label, and never change labels;
  the operator puts it on before any Job that cordons or drains the Node (`mark`).
The pool's own readiness taints (Group spec.nodeReadinessTaints) are not ours: the gate waits for
whoever owns them (a CNI agent) to remove them.
"""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from homecluster import names
from homecluster.model.objects import (annotations_of, labels_of, name_of, provider_id, resource_version, taints_of,
                                       unschedulable)
from homecluster.kube import client as kube
from homecluster.lifecycle.context import Context

Obj = Mapping[str, Any]


def gate_patch(node: Obj, slot_name: str, *, boot: bool = True) -> dict | None:
    """The Node patch the gate needs, or None when there is nothing of ours to change.

    `boot`: the gate of a claim still booting (the machine was just powered on), the only time the
    autoscaler's taints and cordon are stale. The gate of a ready claim whose Node became unusable
    (boot=False) leaves them: there they are the autoscaler's drain in progress (it cordons and taints,
    evicts, then calls DeleteNodes), and lifting them lets the evicted pods' replacements land back."""
    spec: dict[str, Any] = {}
    metadata: dict[str, Any] = {}
    annotations = annotations_of(node)
    taints = taints_of(node)
    if names.ANNOTATION_CORDONED_BY in annotations:
        metadata["annotations"] = {names.ANNOTATION_CORDONED_BY: None}
    autoscalers = boot and any(t.get("key") == names.CA_TO_BE_DELETED for t in taints)
    if (names.ANNOTATION_CORDONED_BY in annotations or autoscalers) and unschedulable(node):
        spec["unschedulable"] = False
    kept = [t for t in taints if t.get("key") not in names.CA_TAINTS] if boot else list(taints)
    if len(kept) != len(taints):
        spec["taints"] = kept  # taints have no merge key: the list is replaced whole
    if not provider_id(node):
        spec["providerID"] = f"{names.PROVIDER_ID_SCHEME}{slot_name}"
    if machine_of(node) != slot_name:
        metadata["labels"] = {names.LABEL_MACHINE_OF: slot_name}
    if not spec and not metadata:
        return None
    metadata["resourceVersion"] = resource_version(node)
    return {"metadata": metadata, "spec": spec}


def machine_of(node: Obj) -> str | None:
    """The slot whose machine the operator marked this Node as (its label), if any."""
    return labels_of(node).get(names.LABEL_MACHINE_OF)


def mark_patch(node: Obj, slot_name: str) -> dict | None:
    """Label the Node as `slot_name`'s machine; None when it already says so."""
    if machine_of(node) == slot_name:
        return None
    return {"metadata": {"resourceVersion": resource_version(node),
                         "labels": {names.LABEL_MACHINE_OF: slot_name}}}


def cordon_patch(node: Obj, slot_name: str) -> dict | None:
    """Cordon with our mark (so the gate may lift it later), labelling the machine; None when already cordoned."""
    if unschedulable(node):
        return mark_patch(node, slot_name)
    body = {"metadata": {"resourceVersion": resource_version(node),
                         "annotations": {names.ANNOTATION_CORDONED_BY: names.CORDONED_BY_VALUE}},
            "spec": {"unschedulable": True}}
    if machine_of(node) != slot_name:
        body["metadata"]["labels"] = {names.LABEL_MACHINE_OF: slot_name}
    return body


async def patch_node(ctx: Context, node: Obj, body: dict) -> Obj:
    result = await ctx.client.patch(kube.NODES, name_of(node), body, content_type=kube.STRATEGIC)
    ctx.store.apply(kube.NODES, result)
    return result


async def open_gate(ctx: Context, node: Obj, slot_name: str, *, boot: bool = True) -> Obj:
    """Apply the gate's patch if any (`boot`: gate_patch); returns the Node as now stored."""
    body = gate_patch(node, slot_name, boot=boot)
    if body is None:
        return node
    ctx.log.info('slot "%s": readiness gate patches corev1 Node "%s": %s', slot_name, name_of(node),
                 ", ".join(sorted(set(body["spec"]) | ({"annotations", "labels"} & set(body["metadata"])))))
    return await patch_node(ctx, node, body)


async def cordon(ctx: Context, node: Obj, slot_name: str) -> Obj:
    body = cordon_patch(node, slot_name)
    if body is None:
        return node
    ctx.log.info('slot "%s": cordoned corev1 Node "%s" for the shutdown', slot_name, name_of(node))
    return await patch_node(ctx, node, body)


async def mark(ctx: Context, node: Obj, slot_name: str) -> Obj:
    """Before a Job that cordons and drains the Node: label it as the slot's machine (config/policy admits the
    Job's patches of labelled Nodes only)."""
    body = mark_patch(node, slot_name)
    if body is None:
        return node
    ctx.log.info('slot "%s": labelled corev1 Node "%s" %s=%s', slot_name, name_of(node), names.LABEL_MACHINE_OF,
                 slot_name)
    return await patch_node(ctx, node, body)
