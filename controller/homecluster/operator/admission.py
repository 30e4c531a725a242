"""The admission webhooks' routes: a review's `request` in, its `response` (without the uid) out.

One route per webhook of config/webhook/manifests.yaml, at the path /<webhook name>. Each reads the object
from the request and asks a pure check (homecluster.webhook for claims, homecluster.jobs.policy for Groups,
homecluster.model.identity for slots, homecluster.model.eviction for the lifecycle Jobs' evictions);
nothing of the request is kept once it is answered. Served by operator/webhookserver.py.
"""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from homecluster.jobs.policy import job_refusals
from homecluster.kube import client as kube
from homecluster.model.objects import dig
from homecluster.model.eviction import EvictionRefusal, eviction_refusal, pod_key_refusal
from homecluster.model.identity import admission_field, admission_refusal
from homecluster.operator.controller import Controller
from homecluster.operator.webhookserver import HTTPError, Route
from homecluster.webhook import FIELD, check_claim_admission, forbidden_status

CLAIM_WEBHOOK = "nodeclaim-v2alpha1.kb.io"
# Groups: spec.jobs may choose only the images and ServiceAccounts the operator allows (jobs.policy)
GROUP_WEBHOOK = "group-v2alpha1.kb.io"
# slots (Node CRs): one machine, one slot -- a slot finding a machine another slot has is refused (model.identity)
SLOT_WEBHOOK = "node-v2alpha1.kb.io"
# evictions asked by the lifecycle Jobs' token (its matchConditions): only of pods on the pool's Nodes
EVICTION_WEBHOOK = "pods-eviction.homecluster.dev"


def _object(request: Mapping[str, Any]) -> dict[str, Any]:
    obj = request.get("object")
    if not isinstance(obj, Mapping):
        raise HTTPError(400, "not an AdmissionReview of an object: request.object is missing")
    return dict(obj)


def _operation(request: Mapping[str, Any]) -> str:
    operation = request.get("operation")
    return operation if isinstance(operation, str) else ""


def _refused(refusal: EvictionRefusal) -> dict[str, Any]:
    return {"allowed": False, "status": {"metadata": {}, "status": "Failure", "code": refusal.code,
                                         "reason": refusal.reason, "message": refusal.message}}


def routes(controller: Controller) -> dict[str, Route]:
    store = controller.ctx.store

    async def claim(request: Mapping[str, Any]) -> dict[str, Any]:
        body = _object(request)
        spec = body.get("spec")
        slot = spec.get("slotRef", "") if isinstance(spec, Mapping) else ""
        text = check_claim_admission(_operation(request), body,
                                     store.claims_of_slot(slot) if isinstance(slot, str) else [],
                                     store.slot(slot) if isinstance(slot, str) and slot else None)
        if text is None:
            return {"allowed": True}
        return {"allowed": False, "status": forbidden_status(f"{FIELD}: Forbidden: {text}")}

    async def group(request: Mapping[str, Any]) -> dict[str, Any]:
        spec = _object(request).get("spec")
        jobs = spec.get("jobs") if isinstance(spec, Mapping) else None
        refusals = job_refusals(jobs if isinstance(jobs, Mapping) else None, controller.ctx.job_policy)
        if not refusals:
            return {"allowed": True}
        return {"allowed": False, "status": {"message": "; ".join(f"{f}: Forbidden: {text}" for f, text in refusals),
                                             "code": 403}}

    async def slot(request: Mapping[str, Any]) -> dict[str, Any]:
        body = _object(request)
        old = request.get("oldObject")
        with store.cache.lock:
            refusal = admission_refusal(_operation(request), body, dict(old) if isinstance(old, Mapping) else None,
                                        store.slots(), store.cache)
        if refusal is None:
            return {"allowed": True}
        return {"allowed": False, "status": forbidden_status(f"{admission_field(refusal)}: Forbidden: {refusal.message}",
                                                             field=admission_field(refusal))}

    async def eviction(request: Mapping[str, Any]) -> dict[str, Any]:
        namespace, name = request.get("namespace"), request.get("name")
        refusal = pod_key_refusal(namespace, name)
        if refusal is not None:
            return _refused(refusal)
        try:  # the pod as it is now: an Eviction carries nothing of it
            pod: Mapping[str, Any] | None = await controller.ctx.client.get(kube.PODS, name, namespace)
        except kube.NotFound:
            pod = None
        node_name = dig(pod, "spec", "nodeName") if isinstance(pod, Mapping) else None
        node = store.cache.get(kube.NODES, node_name) if isinstance(node_name, str) and node_name else None
        refusal = eviction_refusal(namespace, name, pod, node)
        return {"allowed": True} if refusal is None else _refused(refusal)

    return {f"/{CLAIM_WEBHOOK}": claim, f"/{GROUP_WEBHOOK}": group, f"/{SLOT_WEBHOOK}": slot,
            f"/{EVICTION_WEBHOOK}": eviction}
