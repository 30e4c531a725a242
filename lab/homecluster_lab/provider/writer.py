"""The provider's claim writes over kubernetes_asyncio, for when the lab runs the provider without the operator.

The operator writes through its own client (operator/providerglue.py); the lab and the provider's
tests use this one. Same contract as homecluster.provider.writer.ClaimWriter: deletes carry the
resourceVersion precondition (409 -> ABORTED), every call its timeout.
"""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from homecluster import API_GROUP, API_VERSION
from homecluster.names import CLAIM_PLURAL
from homecluster.provider.errors import ProviderError

Obj = Mapping[str, Any]


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
