"""The readiness gate's and the cordon's corev1 Node patches, built from the Node as read (pure).

The rule (what the gate lifts, what it never touches, the machine label the policy relies on) is told in
lifecycle/gate.py, which applies these patches; here each patch is only computed, so it is tested without an
API server. Every patch is a strategic merge patch conditional on the Node's resourceVersion; None: nothing
of ours to change.
"""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from homecluster import names
from homecluster.model.objects import annotations_of, labels_of, provider_id, resource_version, taints_of, unschedulable

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
