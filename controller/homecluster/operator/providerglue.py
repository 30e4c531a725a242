"""The autoscaler provider inside `homecluster run`: same cache, our client for its two writes.

The provider only ever creates and deletes NodeClaims; it reads everything from the cache the
controller feeds, and is started only once that cache is synced (a provider that answered from an
empty cache would tell cluster-autoscaler every pool is empty).
"""
from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from homecluster.kube import client as kube
from homecluster.provider.errors import ProviderError


Ingest = Callable[..., None]


class ClaimWriter:
    """The provider's ClaimWriter over the operator's KubeClient.

    Its results go through the controller's `ingest` (write-through into the store AND a pass for
    the claim's slot): the watch event of the same write arrives later with the same
    resourceVersion and is ignored as not newer, so if only the store saw the write, nothing would
    look at the new claim until the safety-net poll.
    """

    def __init__(self, client: kube.KubeClient, ingest: Ingest) -> None:
        self.client, self.ingest = client, ingest

    async def create_claim(self, body: dict[str, Any], timeout: float) -> Mapping[str, Any]:
        try:
            claim = await kube.with_retries(lambda: self.client.create(kube.CLAIMS, body), attempts=1)
        except kube.ApiError as exc:
            raise ProviderError("UNAVAILABLE" if exc.status >= 500 else "FAILED_PRECONDITION",
                                f"creating a NodeClaim for slot {body['spec']['slotRef']!r} failed: {exc.message}") \
                from None
        self.ingest(kube.CLAIMS, claim)
        return claim

    async def delete_claim(self, name: str, resource_version: str | None, timeout: float) -> Mapping[str, Any] | None:
        try:
            result = await self.client.delete(kube.CLAIMS, name, resource_version=resource_version)
        except kube.NotFound:
            return None
        except kube.Conflict:
            raise ProviderError("ABORTED", f"NodeClaim {name!r} changed since it was chosen (it may have started "
                                           f"booting); not deleted, the autoscaler will retry") from None
        except kube.ApiError as exc:
            raise ProviderError("UNAVAILABLE" if exc.status >= 500 else "FAILED_PRECONDITION",
                                f"deleting NodeClaim {name!r} failed: {exc.message}") from None
        if result is not None:
            self.ingest(kube.CLAIMS, result)
        return result
