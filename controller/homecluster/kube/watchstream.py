"""One watch stream of one resource over KubeClient's session: the events from a resourceVersion until it ends.

Bounded: one event line may be at most MAX_LINE bytes, a stream lasts at most the server's timeout plus a margin.
`stream` returns when the server ends the stream, or sends an ERROR event (410 Gone: the caller lists again) or
a line it cannot read; it raises ApiError when the watch is refused. Used by kube.leasewatch (the kubelets'
Leases), by self-signed mode's watch of its Secrets and webhook configuration (operator.certwatch) and by the
lab's provider cache (homecluster_lab.provider.watch).
"""
from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import Any
from urllib.parse import urlencode

import aiohttp

from homecluster.kube.client import ApiError, KubeClient, Resource

SERVER_TIMEOUT = 300
MAX_LINE = 64 * 1024
Obj = Mapping[str, Any]


async def stream(client: KubeClient, res: Resource, namespace: str | None, since: str,
                 on_event: Callable[[Obj, bool], None], *, name: str | None = None) -> None:
    """One watch stream from resourceVersion `since` ("": the object as it is now, then its changes);
    `on_event(obj, deleted)` hears every object event. With `name`, one object only (fieldSelector
    metadata.name, which RBAC authorizes against a rule's resourceNames)."""
    session = await client._http()
    where = res.plural + (f" {name}" if name is not None else "") + (f" in {namespace}" if namespace else "")
    params = {"watch": "1", "resourceVersion": since, "timeoutSeconds": str(SERVER_TIMEOUT),
              "allowWatchBookmarks": "false"}
    if name is not None:
        params["fieldSelector"] = f"metadata.name={name}"
    query = urlencode(params)
    url = client.connection.server + res.path(None, namespace) + f"?{query}"
    timeout = aiohttp.ClientTimeout(total=SERVER_TIMEOUT + 30, sock_read=SERVER_TIMEOUT + 30)
    async with session.get(url, headers=client.connection.headers(), timeout=timeout) as response:
        if response.status >= 300:
            raise ApiError(response.status, response.reason or "Error", (await response.text())[:500],
                           f"watch {where}")
        while True:
            line = await response.content.readline()  # aiohttp bounds a line (ValueError past its limit)
            if not line:
                return
            if len(line) > MAX_LINE:
                raise ValueError(f"a watch event of {len(line)} bytes on {where}: refused")
            event = json.loads(line)
            if not isinstance(event, dict):
                return  # unreadable: list again
            kind, obj = event.get("type"), event.get("object")
            if kind == "ERROR" or not isinstance(obj, dict):
                return  # 410 Gone (or anything unreadable): list again
            if kind in ("ADDED", "MODIFIED", "DELETED"):
                on_event(obj, kind == "DELETED")
