"""What the CLI verbs share: an API client from a kubeconfig, and reads that turn 404 into None."""
from __future__ import annotations

import argparse
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from homecluster import API_GROUP, API_VERSION
from homecluster.lifecycle.context import DEFAULT_NAMESPACE


def add_connection_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--kubeconfig", help="kubeconfig file (default: $KUBECONFIG or ~/.kube/config)")
    parser.add_argument("--namespace", default=DEFAULT_NAMESPACE,
                        help=f"the operator's namespace: its Jobs and Deployment (default {DEFAULT_NAMESPACE})")


@asynccontextmanager
async def api_client(kubeconfig: str | None) -> AsyncIterator[Any]:
    from pathlib import Path

    from kubernetes_asyncio import client, config

    if kubeconfig and not Path(kubeconfig).is_file():
        raise config.ConfigException(f"{kubeconfig}: no such file")
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


def run_verb(coro) -> int:
    """Run a verb's coroutine; a kubeconfig that cannot be loaded, an unreachable API server or a refusal
    ends it with one line saying what and how to fix it, not a traceback."""
    import asyncio
    import sys

    import aiohttp
    from kubernetes_asyncio import client
    from kubernetes_asyncio.config import ConfigException

    try:
        return asyncio.run(coro)
    except ConfigException as exc:
        print(f"error: no usable kubeconfig ({exc}): pass --kubeconfig or set KUBECONFIG", file=sys.stderr)
    except aiohttp.ClientConnectionError as exc:
        print(f"error: cannot reach the API server: {exc}", file=sys.stderr)
    except client.ApiException as exc:
        hint = (": ask for the view role (or edit, to claim and release); docs/install.md#optional-components"
                if exc.status == 403 else "")
        print(f"error: the API server answered {exc.status} {exc.reason}{hint}", file=sys.stderr)
    return 1
