"""Helpers for the provider tests: object factories (dicts as the API returns them), an in-memory
NodeClaim writer double, and a server starter. Imported by the tests as `provider_objects`
(a unique module name, so it never clashes with other test folders' helpers)."""
from __future__ import annotations

import asyncio
import itertools
from datetime import datetime, timedelta, timezone
from typing import Any

from support import objects

from homecluster import GROUP_VERSION, names
from homecluster.model.timestamps import format_time
from homecluster.provider.actions import ProviderSettings
from homecluster.kube.cache import CLAIMS, GROUPS, NODES, SLOTS, Cache
from homecluster.provider.errors import ProviderError
from homecluster.provider.server import ProviderServer

NOW = datetime(2026, 3, 4, 9, 38, 15, tzinfo=timezone.utc)


def ts(delta: timedelta = timedelta(0)) -> str:
    return format_time(NOW + delta)


def group(name: str = "workers", min_size: int = 0, max_size: int = 10, **spec: Any) -> dict:
    body = {"minSize": min_size, "maxSize": max_size,
            "template": {"labels": {"node.kubernetes.io/instance-type": "nuc"},
                         "taints": [{"key": "homecluster.dev/pool", "value": name, "effect": "NoSchedule"}],
                         "capacity": {"cpu": "4", "memory": "16Gi", "pods": "110", "ephemeral-storage": "100Gi"},
                         "allocatable": {"cpu": "3800m", "memory": "15Gi"}}}
    body.update(spec)
    return {"apiVersion": GROUP_VERSION, "kind": "Group", "metadata": {"name": name, "resourceVersion": "1"},
            "spec": body}


def slot(name: str, group_name: str = "workers", power: str = "off", **spec: Any) -> dict:
    return {"apiVersion": GROUP_VERSION, "kind": "Node", "metadata": {"name": name, "resourceVersion": "1"},
            "spec": {"groupRef": group_name, **spec}, "status": {"powerState": power}}


_seq = itertools.count(1)


def claim(slot_name: str, phase: str | None = "pending", name: str | None = None, age: timedelta = timedelta(0),
          deleting: bool = False, **status: Any) -> dict:
    """support.objects' claim on `slot_name`, created and requested `age` ago, with a resourceVersion (and a
    generated name when none is given); `deleting` marks it for deletion, held by the operator's finalizer."""
    created = ts(-age)
    name = name or f"{slot_name}-{next(_seq):05d}"
    metadata = {"creationTimestamp": created, "resourceVersion": str(next(_seq)),
                **({"deletionTimestamp": ts()} if deleting else {})}
    return objects.claim(name, slot_name, phase or None, requested_at=created, metadata=metadata,
                         finalizers=[names.FINALIZER] if deleting else None, **status)


def corev1_node(name: str, provider_id: str = "", ready: bool = True) -> dict:
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name},
            "spec": {"providerID": provider_id} if provider_id else {},
            "status": {"conditions": [{"type": "Ready", "status": "True" if ready else "False"}]}}


def filled_cache(groups=(), slots=(), claims=(), nodes=(), synced: bool = True) -> Cache:
    cache = Cache()
    for kind, objs in ((GROUPS, groups), (SLOTS, slots), (CLAIMS, claims), (NODES, nodes)):
        cache.replace(kind, objs, synced=synced)
    return cache


class MemoryWriter:
    """TEST DOUBLE for the API server's NodeClaim create/delete (used where no API server runs).

    It behaves like the API server where the provider relies on it: generateName gets a random
    suffix, resourceVersion increases, a delete with a stale resourceVersion precondition is a
    conflict, a claim with finalizers is only marked for deletion. Each call awaits a short sleep,
    so concurrent RPCs really interleave. `store` holds what "the API server" has.
    """

    def __init__(self, latency: float = 0.002) -> None:
        self.latency = latency
        self.store: dict[str, dict] = {}
        self.creates = 0
        self.deletes: list[str] = []
        self._rv = itertools.count(1000)
        self._suffix = itertools.count(1)
        self.fail_next_create: str | None = None

    async def create_claim(self, body: dict, timeout: float) -> dict:
        await asyncio.sleep(self.latency)
        if self.fail_next_create:
            message, self.fail_next_create = self.fail_next_create, None
            raise ProviderError("UNAVAILABLE", message)
        self.creates += 1
        obj = {**body, "metadata": {**body["metadata"]}}
        obj["metadata"]["name"] = f"{body['metadata']['generateName']}{next(self._suffix):05x}"
        obj["metadata"]["creationTimestamp"] = ts()
        obj["metadata"]["resourceVersion"] = str(next(self._rv))
        self.store[obj["metadata"]["name"]] = obj
        return obj

    async def delete_claim(self, name: str, resource_version: str | None, timeout: float) -> dict | None:
        await asyncio.sleep(self.latency)
        self.deletes.append(name)
        return None


async def start_server(cache: Cache, writer: Any = None, clock=lambda: NOW, **kwargs: Any) -> ProviderServer:
    server = ProviderServer(cache, writer or MemoryWriter(), kwargs.pop("settings", ProviderSettings()),
                            address="127.0.0.1:0", insecure=kwargs.pop("insecure", True), clock=clock, **kwargs)
    await server.start()
    return server
