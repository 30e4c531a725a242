"""The watch on the kubelets' Leases in kube-node-lease (kopf watches only the operator's own namespaces).

List, then watch from the list's resourceVersion; a stream that ends (the server's timeoutSeconds), breaks,
or says 410 Gone starts over with a new list. Every Lease goes to `on_lease(obj, deleted)`; a full list to
`on_list(items)`. Bounded: a stream's bounds are kube.watchstream's (a Lease is a few hundred bytes), a
failure waits before the next try, and a stream that ends at once is not followed by the next list at once.
"""
from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Mapping
from typing import Any

from homecluster.kube.client import LEASES, READ_FAILURES, KubeClient
from homecluster.kube.leases import NAMESPACE
from homecluster.kube.watchstream import stream

log = logging.getLogger("homecluster.leases")
MIN_STREAM = 1.0  # seconds: a stream that ended sooner is followed by this pause before the next list
RETRY_SECONDS = (0.5, 1.0, 2.0, 5.0, 15.0, 60.0)  # a failure in a row waits the next; a grant missing: once a minute
Obj = Mapping[str, Any]


async def watch_leases(client: KubeClient, on_list: Callable[[list[Obj]], None],
                       on_lease: Callable[[Obj, bool], None]) -> None:
    """Run until cancelled: list, watch, and again."""
    failures = 0
    while True:
        try:
            items, version = await client.list(LEASES, namespace=NAMESPACE)
            on_list(items)
            began = asyncio.get_running_loop().time()
            await stream(client, LEASES, NAMESPACE, version, on_lease)
            failures = 0
            if asyncio.get_running_loop().time() - began < MIN_STREAM:  # a server ending every stream at once
                await asyncio.sleep(MIN_STREAM)
        except asyncio.CancelledError:
            raise
        except READ_FAILURES as exc:
            wait = RETRY_SECONDS[min(failures, len(RETRY_SECONDS) - 1)]
            failures += 1
            on_list([])  # what was seen goes stale while blind: Ready is believed until the next list
            say = log.warning if failures == 1 else log.debug  # once per run of failures, not every retry
            say("watching Leases in %s failed (%s); liveness falls back to the Nodes' Ready until it works (the "
                "operator needs list and watch on coordination.k8s.io leases in %s: "
                "config/rbac/node_lease_role.yaml); again in %.1fs", NAMESPACE, exc, NAMESPACE, wait)
            await asyncio.sleep(wait)
