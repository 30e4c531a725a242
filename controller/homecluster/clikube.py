"""What the CLI verbs share: an API client from a kubeconfig, and reads that turn 404 into None."""
from __future__ import annotations

import argparse
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from homecluster import API_GROUP, API_VERSION
from homecluster.operator.context import DEFAULT_NAMESPACE


def add_connection_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--kubeconfig", help="kubeconfig file (default: $KUBECONFIG or ~/.kube/config)")
    parser.add_argument("--namespace", default=DEFAULT_NAMESPACE,
                        help=f"the operator's namespace: its Jobs and Deployment (default {DEFAULT_NAMESPACE})")


@asynccontextmanager
async def api_client(kubeconfig: str | None) -> AsyncIterator[Any]:
    from kubernetes_asyncio import client, config

    await config.load_kube_config(config_file=kubeconfig)
    async with client.ApiClient() as api:
        yield api


async def get_ours(api: Any, plural: str, name: str) -> dict | None:
    """One of our cluster-scoped objects, or None when it does not exist."""
    from kubernetes_asyncio import client

    try:
        return await client.CustomObjectsApi(api).get_cluster_custom_object(API_GROUP, API_VERSION, plural, name)
    except client.ApiException as exc:
        if exc.status == 404:
            return None
        raise


async def list_ours(api: Any, plural: str, **kw: Any) -> list[dict]:
    from kubernetes_asyncio import client

    found = await client.CustomObjectsApi(api).list_cluster_custom_object(API_GROUP, API_VERSION, plural, **kw)
    return list(found.get("items") or [])
