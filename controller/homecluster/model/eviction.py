"""Which pods a lifecycle Job's token may evict: only pods on the pool's machines. Pure.

RBAC can only grant `pods/eviction create` in every namespace, and a ValidatingAdmissionPolicy cannot confine
it: an Eviction carries the pod's name and namespace and nothing of the pod (not the Node it runs on), and a
policy reads nothing but the request (docs/security.md, "The Jobs' token"). So the operator's own webhook
(`pods-eviction.homecluster.dev`, operator/admission.py) answers every eviction the Job's ServiceAccount asks
for, reading the pod from the API and its Node from the operator's cache, and admits it only when that Node
carries names.LABEL_MACHINE_OF -- the mark the operator puts on a slot's machine before any Job cordons or
drains it (lifecycle/gate.py `mark`), and which nobody else may set (config/policy). That is the same set of
Nodes config/policy lets the token cordon.
"""
from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from homecluster import names
from homecluster.model.objects import dig

Obj = Mapping[str, Any]
# what the API server accepts as a pod's name (a DNS subdomain) and a namespace (a DNS label): anything else in
# a review is not from the API server, and is never put in a request path
POD_NAME = re.compile(r"[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?")
NAMESPACE = re.compile(r"[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?")


@dataclass(frozen=True)
class EvictionRefusal:
    code: int  # the HTTP status the API server answers the eviction with
    reason: str  # metav1.StatusReason
    message: str


def pod_key_refusal(namespace: object, name: object) -> EvictionRefusal | None:
    """A refusal when the review's namespace and name are not a namespace and a pod name, else None."""
    if isinstance(namespace, str) and isinstance(name, str) and NAMESPACE.fullmatch(namespace) \
            and POD_NAME.fullmatch(name):
        return None
    return EvictionRefusal(400, "BadRequest", "not an eviction review: request.namespace and request.name must be "
                                              "a namespace and a pod name")


def eviction_refusal(namespace: str, name: str, pod: Obj | None, node: Obj | None) -> EvictionRefusal | None:
    """Why the Job's token may not evict pod `namespace/name`, or None to admit it.

    `pod` is the pod as the API has it now (None: not found), `node` the Node named by its spec.nodeName as the
    operator's cache has it (None: no such Node, or the pod is not bound)."""
    who = f"pod {namespace}/{name}"
    if pod is None:
        # what the eviction itself would answer: the drain counts the pod as gone
        return EvictionRefusal(404, "NotFound", f"{who} not found")
    node_name = dig(pod, "spec", "nodeName") or ""
    if not node_name:
        return EvictionRefusal(403, "Forbidden", f"homecluster-job may evict only pods on the pool's Nodes; {who} "
                                                 "is bound to no Node")
    labels = dig(node, "metadata", "labels")
    slot = labels.get(names.LABEL_MACHINE_OF) if isinstance(labels, Mapping) else None
    if not slot:
        return EvictionRefusal(403, "Forbidden", f"homecluster-job may evict only pods on the pool's Nodes (label "
                                                 f"{names.LABEL_MACHINE_OF}); {who} runs on Node {node_name}, "
                                                 "which is not in the pool")
    return None
