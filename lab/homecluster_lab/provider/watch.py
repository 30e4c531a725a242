"""Feed a Cache from the API server with list+watch (kubernetes_asyncio), for the lab and tests.

In the operator, kopf's watch events feed the cache instead; this is the same loop for when no
operator runs: for each kind, list everything (cache.replace, which marks the kind synced), then
watch from the list's resourceVersion, applying ADDED/MODIFIED as upserts and DELETED as deletes.
A watch that ends is resumed from the last seen resourceVersion; a 410 Gone relists. Errors never
unsync a kind: the last consistent view stays served while the loop retries.
"""
from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Awaitable, Callable
from typing import Any

from homecluster import API_GROUP, API_VERSION
from homecluster.names import CLAIM_PLURAL, GROUP_PLURAL, SLOT_PLURAL
from homecluster.kube.cache import CLAIMS, GROUPS, NODES, SLOTS, Cache

log = logging.getLogger(__name__)

_PLURALS = {GROUPS: GROUP_PLURAL, SLOTS: SLOT_PLURAL, CLAIMS: CLAIM_PLURAL}


async def _list(api_client: Any, kind: str) -> tuple[list[dict], str]:
    from kubernetes_asyncio import client

    if kind == NODES:
        response = await client.CoreV1Api(api_client).list_node(_preload_content=False)
        data = json.loads(await response.read())
    else:
        data = await client.CustomObjectsApi(api_client).list_cluster_custom_object(
            API_GROUP, API_VERSION, _PLURALS[kind])
    return data.get("items") or [], (data.get("metadata") or {}).get("resourceVersion", "")


def _watch_call(api_client: Any, kind: str) -> tuple[Callable[..., Awaitable[Any]], tuple]:
    from kubernetes_asyncio import client

    if kind == NODES:
        return client.CoreV1Api(api_client).list_node, ()
    return client.CustomObjectsApi(api_client).list_cluster_custom_object, (API_GROUP, API_VERSION, _PLURALS[kind])


async def watch_kind(cache: Cache, api_client: Any, kind: str, *, watch_timeout: int = 240) -> None:
    """List and watch one kind into the cache until cancelled."""
    from kubernetes_asyncio import client, watch

    resource_version = ""
    while True:
        try:
            if not resource_version:
                items, resource_version = await _list(api_client, kind)
                for item in items:  # list items carry no kind; the cache does not need it
                    item.setdefault("metadata", {})
                cache.replace(kind, items)
            func, args = _watch_call(api_client, kind)
            watcher = watch.Watch()
            try:
                async for event in watcher.stream(func, *args, resource_version=resource_version,
                                                  timeout_seconds=watch_timeout, allow_watch_bookmarks=True):
                    kind_of_event, obj = event["type"], event["raw_object"]
                    if kind_of_event in ("ADDED", "MODIFIED"):
                        cache.upsert(kind, obj)
                    elif kind_of_event == "DELETED":
                        cache.delete(kind, obj["metadata"]["name"])
                    resource_version = watcher.resource_version or resource_version
            finally:
                await watcher.close()
        except asyncio.CancelledError:
            raise
        except client.ApiException as exc:
            if exc.status == 410:
                resource_version = ""  # too old: relist
                continue
            log.warning("watching %s failed (HTTP %s %s); retrying in 1s", kind, exc.status, exc.reason)
            resource_version = ""
            await asyncio.sleep(1)
        except Exception as exc:  # transport errors: keep serving the last view, retry
            log.warning("watching %s failed (%s: %s); retrying in 1s", kind, type(exc).__name__, exc)
            resource_version = ""
            await asyncio.sleep(1)


async def api_client_from_kubeconfig(kubeconfig: str) -> Any:
    """A kubernetes_asyncio ApiClient for a kubeconfig file (close it when done)."""
    from kubernetes_asyncio import client, config

    configuration = client.Configuration()
    await config.load_kube_config(config_file=str(kubeconfig), client_configuration=configuration)
    return client.ApiClient(configuration=configuration)


async def watch_into(cache: Cache, kubeconfig: str | None = None, *, api_client: Any = None) -> None:
    """Keep `cache` current from the API server until cancelled (all four kinds, concurrently)."""
    own = api_client is None
    if own:
        if kubeconfig is None:
            raise ValueError("watch_into needs a kubeconfig path or an api_client")
        api_client = await api_client_from_kubeconfig(kubeconfig)
    try:
        await asyncio.gather(*(watch_kind(cache, api_client, kind) for kind in (GROUPS, SLOTS, CLAIMS, NODES)))
    finally:
        if own:
            await api_client.close()
