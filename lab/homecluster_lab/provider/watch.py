"""Feed a Cache from the API server with list+watch over the product's own client, for the lab and tests.

In the operator, kopf's watch events feed the cache instead; this is the same loop for when no
operator runs: for each kind, list everything (cache.replace, which marks the kind synced), then
watch from the list's resourceVersion (homecluster.kube.watchstream, the stream the operator's Lease
watch uses), applying ADDED/MODIFIED as upserts and DELETED as deletes. A stream that ends, or says
410 Gone, lists again. Errors never unsync a kind: the last consistent view stays served while the
loop retries.
"""
from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping
from typing import Any

from homecluster.kube import client as kube
from homecluster.kube import kubeconfig
from homecluster.kube.cache import KINDS, Cache
from homecluster.kube.watchstream import stream

log = logging.getLogger(__name__)



async def watch_kind(cache: Cache, client: kube.KubeClient, kind: kube.Resource) -> None:
    """List and watch one kind (a kube.client Resource: the cache files it under its key) until cancelled."""

    def on_event(obj: Mapping[str, Any], deleted: bool) -> None:
        if deleted:
            cache.delete(kind, obj["metadata"]["name"])
        else:
            cache.upsert(kind, obj)

    while True:
        try:
            items, resource_version = await client.list(kind)
            cache.replace(kind, items)
            await stream(client, kind, None, resource_version, on_event)
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # the API's refusals and transport errors: keep serving the last view, retry
            log.warning("watching %s failed (%s: %s); retrying in 1s", kind.key, type(exc).__name__, exc)
            await asyncio.sleep(1)


def client_from_kubeconfig(path: str) -> kube.KubeClient:
    """The product's KubeClient for a kubeconfig file (close it when done)."""
    return kube.KubeClient(kubeconfig.load(str(path)), user_agent="homecluster-lab-provider")


async def watch_into(cache: Cache, kubeconfig_path: str | None = None, *, client: kube.KubeClient | None = None
                     ) -> None:
    """Keep `cache` current from the API server until cancelled (all four kinds, concurrently)."""
    own = client is None
    if client is None:
        if kubeconfig_path is None:
            raise ValueError("watch_into needs a kubeconfig path or a client")
        client = client_from_kubeconfig(kubeconfig_path)
    try:
        await asyncio.gather(*(watch_kind(cache, client, kind) for kind in KINDS))
    finally:
        if own:
            await client.close()
