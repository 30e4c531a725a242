"""What the CLI verbs share: the product's own client from a kubeconfig, reads that turn 404 into None, the
exit codes, and the one-line errors a verb ends with (never a traceback).

Exit codes (docs/cli.md): 0 done; 1 failed (the claim failed, the object is not there, the server refused);
2 usage (a bad flag, setting or kubeconfig); 3 timed out (--wait/--timeout passed, the work goes on);
4 unreachable (no answer from the API server); 5 forbidden (401/403: credentials refused or not allowed).
"""
from __future__ import annotations

import argparse
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from homecluster.kube import client as kube
from homecluster.lifecycle.context import DEFAULT_NAMESPACE

USER_AGENT = "homecluster-cli"
OK, FAILED, USAGE, TIMED_OUT, UNREACHABLE, FORBIDDEN = 0, 1, 2, 3, 4, 5
INSTALL_CRDS = ("install the CRDs: `homecluster crds | kubectl apply --server-side -f -`, or the Helm chart "
                "(docs/install.md)")


class MissingKind(Exception):
    """The API server does not serve one of our kinds: the CRDs are not installed (or are of another version)."""

    def __init__(self, res: kube.Resource) -> None:
        super().__init__(f"the API server does not serve {res.kind} ({res.plural}.{res.group}/{res.version}): "
                         f"the homecluster CRDs are not installed here; {INSTALL_CRDS}")


def object_name(obj: dict) -> str:
    """kubectl's -o name of one of our claims: nodeclaim.infra.homecluster.dev/NAME."""
    return f"{kube.CLAIMS.kind.lower()}.{kube.CLAIMS.group}/{(obj.get('metadata') or {}).get('name', '')}"


def add_connection_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--kubeconfig", help="kubeconfig file (default: $KUBECONFIG or ~/.kube/config)")
    parser.add_argument("--context", help="the kubeconfig context to use (default: its current context)")
    parser.add_argument("--namespace", default=DEFAULT_NAMESPACE,
                        help=f"the operator's namespace: its Jobs and Deployment (default {DEFAULT_NAMESPACE})")


@asynccontextmanager
async def api_client(kubeconfig: str | None, context: str | None = None) -> AsyncIterator[kube.KubeClient]:
    from homecluster.kube.kubeconfig import load

    api = kube.KubeClient(load(kubeconfig, context, allow_exec=True), user_agent=USER_AGENT)
    try:
        yield api
    finally:
        await api.close()


async def served(api: kube.KubeClient, res: kube.Resource) -> bool:
    """Whether the API server's discovery lists the kind (a 404 on an object can mean the kind is missing)."""
    try:
        found = await api.discover(res.group, res.version)
    except kube.NotFound:
        return False
    return any(isinstance(r, dict) and r.get("name") == res.plural for r in found.get("resources") or [])


async def get_ours(api: kube.KubeClient, res: kube.Resource, name: str) -> dict | None:
    """One of our cluster-scoped objects, or None when it does not exist; MissingKind when its kind does not."""
    try:
        return await api.get(res, name)
    except kube.NotFound:
        if not await served(api, res):
            raise MissingKind(res) from None
        return None


async def list_ours(api: kube.KubeClient, res: kube.Resource) -> list[dict]:
    try:
        items, _ = await api.list(res)
    except kube.NotFound:
        raise MissingKind(res) from None
    return items


def error_line(exc: BaseException) -> tuple[int, str] | None:
    """The exit code and the one line a verb ends with for `exc`, or None for an error no verb expects."""
    import asyncio

    import aiohttp

    from homecluster.kube.kubeconfig import KubeconfigError

    if isinstance(exc, KubeconfigError):
        text = str(exc)
        hint = ": pass --kubeconfig or set KUBECONFIG" if text.endswith(": no such file") else ""  # once, where it helps
        return USAGE, f"error: no usable kubeconfig: {text}{hint}"
    if isinstance(exc, MissingKind):
        return FAILED, f"error: {exc}"
    if isinstance(exc, (aiohttp.ClientConnectionError, asyncio.TimeoutError)):
        return UNREACHABLE, f"error: cannot reach the API server: {exc or 'no answer in time'}"
    if isinstance(exc, kube.ApiError):
        if exc.status == 401:
            return FORBIDDEN, (f"error: the API server refused your credentials ({exc.what}: 401 Unauthorized): "
                               f"renew the token or certificate of your kubeconfig's user")
        if exc.status == 403:
            return FORBIDDEN, (f"error: forbidden: {exc.what}: ask for the view role (or edit, to claim and "
                               f"release); docs/install.md#optional-components")
        return FAILED, f"error: {exc.what}: the API server answered {exc.status} {exc.reason}: {exc.message}"
    return None


def run_verb(coro) -> int:
    """Run a verb's coroutine; a kubeconfig that cannot be loaded, an unreachable API server, a missing CRD or
    a refusal ends it with one line saying what and how to fix it, and its exit code (above)."""
    import asyncio
    import sys

    try:
        return asyncio.run(coro)
    except Exception as exc:  # noqa: BLE001 - only the errors error_line knows are turned into a line
        known = error_line(exc)
        if known is None:
            raise
        print(known[1], file=sys.stderr)
        return known[0]
