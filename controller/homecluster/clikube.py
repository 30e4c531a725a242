"""What the CLI verbs share: the product's own client from a kubeconfig, and reads that turn 404 into None."""
from __future__ import annotations

import argparse
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from homecluster.kube import client as kube
from homecluster.lifecycle.context import DEFAULT_NAMESPACE

USER_AGENT = "homecluster-cli"


def add_connection_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--kubeconfig", help="kubeconfig file (default: $KUBECONFIG or ~/.kube/config)")
    parser.add_argument("--context", help="the kubeconfig context to use (default: its current context)")
    parser.add_argument("--namespace", default=DEFAULT_NAMESPACE,
                        help=f"the operator's namespace: its Jobs and Deployment (default {DEFAULT_NAMESPACE})")


@asynccontextmanager
async def api_client(kubeconfig: str | None, context: str | None = None) -> AsyncIterator[kube.KubeClient]:
    from homecluster.kube.kubeconfig import load

    api = kube.KubeClient(load(kubeconfig, context), user_agent=USER_AGENT)
    try:
        yield api
    finally:
        await api.close()


async def get_ours(api: kube.KubeClient, res: kube.Resource, name: str) -> dict | None:
    """One of our cluster-scoped objects, or None when it does not exist."""
    try:
        return await api.get(res, name)
    except kube.NotFound:
        return None


async def list_ours(api: kube.KubeClient, res: kube.Resource) -> list[dict]:
    items, _ = await api.list(res)
    return items


def run_verb(coro) -> int:
    """Run a verb's coroutine; a kubeconfig that cannot be loaded, an unreachable API server or a refusal
    ends it with one line saying what and how to fix it, not a traceback."""
    import asyncio
    import sys

    import aiohttp

    from homecluster.kube.kubeconfig import KubeconfigError

    try:
        return asyncio.run(coro)
    except KubeconfigError as exc:
        print(f"error: no usable kubeconfig ({exc}): pass --kubeconfig or set KUBECONFIG", file=sys.stderr)
    except (aiohttp.ClientConnectionError, asyncio.TimeoutError) as exc:
        print(f"error: cannot reach the API server: {exc or 'no answer in time'}", file=sys.stderr)
    except kube.ApiError as exc:
        hint = (": ask for the view role (or edit, to claim and release); docs/install.md#optional-components"
                if exc.status == 403 else "")
        print(f"error: the API server answered {exc.status} {exc.reason}{hint}", file=sys.stderr)
    return 1
