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

The patches are built in model/gate.py (pure; re-exported here); this module applies them and stores the result.
"""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from homecluster import names
from homecluster.model.gate import cordon_patch, gate_patch, machine_of, mark_patch
from homecluster.model.objects import name_of
from homecluster.kube import client as kube
from homecluster.lifecycle import conditional
from homecluster.lifecycle.context import Context
from homecluster.logging import slot_log

Obj = Mapping[str, Any]
__all__ = ["cordon", "cordon_patch", "gate_patch", "machine_of", "mark", "mark_patch", "open_gate", "patch_node"]


async def patch_node(ctx: Context, node: Obj, body: dict) -> Obj:
    """Patch a Node, store the answer; a 404 drops the Node from the store when a list of its name shows it
    gone (lifecycle.conditional.refresh), then goes on to the worker."""
    try:
        result = await ctx.client.patch(kube.NODES, name_of(node), body, content_type=kube.STRATEGIC)
    except kube.NotFound:
        await conditional.refresh(ctx, kube.NODES, name_of(node), after="a 404")
        raise
    ctx.store.apply(kube.NODES, result)
    return result


async def open_gate(ctx: Context, node: Obj, slot_name: str, *, boot: bool = True) -> Obj:
    """Apply the gate's patch if any (`boot`: gate_patch); returns the Node as now stored."""
    body = gate_patch(node, slot_name, boot=boot)
    if body is None:
        return node
    fields = sorted(set(body["spec"]) | ({"annotations", "labels"} & set(body["metadata"])))
    slot_log(ctx.log, slot_name).info('readiness gate patches corev1 Node "%s": %s', name_of(node), ", ".join(fields))
    return await patch_node(ctx, node, body)


async def cordon(ctx: Context, node: Obj, slot_name: str) -> Obj:
    body = cordon_patch(node, slot_name)
    if body is None:
        return node
    slot_log(ctx.log, slot_name).info('cordoned corev1 Node "%s" for the shutdown', name_of(node))
    return await patch_node(ctx, node, body)


async def mark(ctx: Context, node: Obj, slot_name: str) -> Obj:
    """Before a Job that cordons and drains the Node: label it as the slot's machine (config/policy admits the
    Job's patches of labelled Nodes only)."""
    body = mark_patch(node, slot_name)
    if body is None:
        return node
    slot_log(ctx.log, slot_name).info('labelled corev1 Node "%s" %s=%s', name_of(node), names.LABEL_MACHINE_OF,
                                      slot_name)
    return await patch_node(ctx, node, body)
