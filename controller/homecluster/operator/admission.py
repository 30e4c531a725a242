"""The admission webhooks' routes: a review's `request` in, its `response` (without the uid) out.

One route per webhook of config/webhook/manifests.yaml, at the path /<webhook name>. Each reads the object
from the request and asks a pure check (homecluster.webhook for claims, homecluster.jobs.policy for Groups,
homecluster.model.identity for slots);
nothing of the request is kept once it is answered. Served by operator/webhookserver.py.
"""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from homecluster.jobs.policy import job_refusals
from homecluster.model.identity import admission_field, admission_refusal
from homecluster.operator.controller import Controller
from homecluster.operator.webhookserver import HTTPError, Route
from homecluster.webhook import FIELD, check_claim_admission, forbidden_status

CLAIM_WEBHOOK = "nodeclaim-v2alpha1.kb.io"
# Groups: spec.jobs may choose only the images and ServiceAccounts the operator allows (jobs.policy)
GROUP_WEBHOOK = "group-v2alpha1.kb.io"
# slots (Node CRs): one machine, one slot -- a slot finding a machine another slot has is refused (model.identity)
SLOT_WEBHOOK = "node-v2alpha1.kb.io"


def _object(request: Mapping[str, Any]) -> dict[str, Any]:
    obj = request.get("object")
    if not isinstance(obj, Mapping):
        raise HTTPError(400, "not an AdmissionReview of an object: request.object is missing")
    return dict(obj)


def _operation(request: Mapping[str, Any]) -> str:
    operation = request.get("operation")
    return operation if isinstance(operation, str) else ""


def routes(controller: Controller) -> dict[str, Route]:
    store = controller.ctx.store

    async def claim(request: Mapping[str, Any]) -> dict[str, Any]:
        body = _object(request)
        spec = body.get("spec")
        slot = spec.get("slotRef", "") if isinstance(spec, Mapping) else ""
        text = check_claim_admission(_operation(request), body,
                                     store.claims_of_slot(slot) if isinstance(slot, str) else [])
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

    return {f"/{CLAIM_WEBHOOK}": claim, f"/{GROUP_WEBHOOK}": group, f"/{SLOT_WEBHOOK}": slot}
