"""The provider's only writes: create and delete NodeClaims, through kubernetes_asyncio.

`build_claim` (pure) makes the body the provider creates: generateName `<slot>-`, the slot and
group labels, spec.slotRef, spec.requestedAt, spec.deadlineAt = requestedAt + max(boot floor,
group.spec.maxNodeProvisionTime) (homecluster.model.deadlines), spec.requestedBy. It never sets
status.attempt: the claim controller seeds it from the slot's lastClaim, and a claim built from a
possibly stale cache must not bake in a number the controller cannot correct.

`KubeClaimWriter` does the I/O. Deletes of claims chosen from the cache carry a resourceVersion
precondition, so "cancel this pending claim" can never delete a claim that started booting in
the meantime (the API server answers 409 and the caller refuses with ABORTED).
Every call takes a timeout: the whole RPC must finish inside CA's grpc_timeout (5 s by default).
"""
from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any, Protocol

from homecluster import API_GROUP, API_VERSION, GROUP_VERSION
from homecluster.model.deadlines import deadline_at
from homecluster.model.objects import name_of
from homecluster.model.settings import Settings
from homecluster.model.timestamps import format_time
from homecluster.names import CLAIM_KIND, CLAIM_PLURAL, LABEL_GROUP, LABEL_SLOT
from homecluster.provider.errors import ProviderError

Obj = Mapping[str, Any]
REQUESTED_BY = "cluster-autoscaler"


def build_claim(slot: Obj, group: Obj, now: datetime, settings: Settings,
                requested_by: str = REQUESTED_BY) -> dict[str, Any]:
    """The NodeClaim the provider creates for one slot of one group."""
    slot_name, group_name = name_of(slot), name_of(group)
    requested = format_time(now)
    return {
        "apiVersion": GROUP_VERSION,
        "kind": CLAIM_KIND,
        "metadata": {
            "generateName": f"{slot_name}-",
            "labels": {LABEL_SLOT: slot_name, LABEL_GROUP: group_name},
        },
        "spec": {
            "slotRef": slot_name,
            "requestedAt": requested,
            "deadlineAt": format_time(deadline_at(requested, group, settings)),
            "requestedBy": requested_by,
        },
    }


class ClaimWriter(Protocol):
    """What the provider needs to write. The operator and the lab use KubeClaimWriter."""

    async def create_claim(self, body: dict[str, Any], timeout: float) -> Obj:
        """Create the claim; return the object as the API server stored it (with its name)."""

    async def delete_claim(self, name: str, resource_version: str | None, timeout: float) -> Obj | None:
        """Delete the claim; return the object if it still exists (finalizers), None once it is gone."""


class KubeClaimWriter:
    """ClaimWriter over a kubernetes_asyncio ApiClient (cluster-scoped NodeClaims)."""

    def __init__(self, api_client: Any) -> None:
        from kubernetes_asyncio import client

        self._api = client.CustomObjectsApi(api_client)
        self._client = client

    async def create_claim(self, body: dict[str, Any], timeout: float) -> Obj:
        try:
            return await self._api.create_cluster_custom_object(
                API_GROUP, API_VERSION, CLAIM_PLURAL, body, _request_timeout=timeout)
        except self._client.ApiException as exc:
            raise ProviderError("UNAVAILABLE" if exc.status >= 500 else "FAILED_PRECONDITION",
                                f"creating a NodeClaim for slot {body['spec']['slotRef']!r} failed: "
                                f"HTTP {exc.status} {_reason(exc)}") from None

    async def delete_claim(self, name: str, resource_version: str | None, timeout: float) -> Obj | None:
        options = self._client.V1DeleteOptions(
            preconditions=self._client.V1Preconditions(resource_version=resource_version) if resource_version else None)
        try:
            result = await self._api.delete_cluster_custom_object(
                API_GROUP, API_VERSION, CLAIM_PLURAL, name, body=options, _request_timeout=timeout)
        except self._client.ApiException as exc:
            if exc.status == 404:
                return None
            if exc.status == 409:
                raise ProviderError("ABORTED", f"NodeClaim {name!r} changed since it was chosen (it may have "
                                               f"started booting); not deleted, the autoscaler will retry") from None
            raise ProviderError("UNAVAILABLE" if exc.status >= 500 else "FAILED_PRECONDITION",
                                f"deleting NodeClaim {name!r} failed: HTTP {exc.status} {_reason(exc)}") from None
        if not isinstance(result, Mapping) or result.get("kind") == "Status":
            return None
        return result if (result.get("metadata") or {}).get("deletionTimestamp") else None


def _reason(exc: Any) -> str:
    body = getattr(exc, "body", "") or ""
    text = body.decode(errors="replace") if isinstance(body, bytes) else str(body)
    return (text or getattr(exc, "reason", "") or "")[:300]
