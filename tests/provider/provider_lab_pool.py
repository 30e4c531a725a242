"""A real provider against the lab API server, on a thread of its own, for synchronous property tests.

Hypothesis drives examples from a plain (synchronous) test, so the lab API server, the provider's
watch and its grpc.aio server run on a background loop (BackgroundLabAPIServer's), and the tests call
the provider with the blocking gRPC stub. `stored()` reads what the API server holds, on its own loop.
Imported by the tests as `provider_lab_pool` (a unique module name).
"""
from __future__ import annotations

import asyncio
import copy
from pathlib import Path
from typing import Any

import grpc

from homecluster import API_GROUP, API_VERSION
from homecluster_lab.apiserver.server import BackgroundLabAPIServer
from homecluster.kube.cache import Cache
from homecluster.provider.proto import externalgrpc_pb2_grpc as pb_grpc
from homecluster.provider.server import ProviderServer
from homecluster_lab.provider.watch import client_from_kubeconfig, watch_into
from homecluster_lab.provider.writer import claim_writer

CRD_DIR = Path(__file__).resolve().parents[2] / "config" / "crd"
KINDS = ("groups", "nodes", "nodeclaims")
GROUPS = ("workers", "gpus")
SLOTS = {"workers": ("w1", "w2", "w3"), "gpus": ("g1",)}


def _objects() -> list[dict[str, Any]]:
    version = f"{API_GROUP}/{API_VERSION}"
    out: list[dict[str, Any]] = []
    for name in GROUPS:
        out.append({"apiVersion": version, "kind": "Group", "metadata": {"name": name},
                    "spec": {"minSize": 0, "maxSize": 3,
                             "template": {"capacity": {"cpu": "4", "memory": "16Gi", "pods": "110"}},
                             "pricing": {"energyPricePerKWh": 0.3}}})
        for slot in SLOTS[name]:
            out.append({"apiVersion": version, "kind": "Node", "metadata": {"name": slot},
                        "spec": {"groupRef": name, "powerDrawWatts": 60,
                                 "power": {"method": "wol", "wol": {"macAddress": "52:54:00:00:00:01"},
                                           "ssh": {"host": "127.0.0.1",
                                                   "credentialsSecretRef": {"name": "ssh-key"}}}}})
    return out


class ProviderLabPool:
    """Lab API server (our CRDs, two Groups, four slots) + the real provider watching it over HTTP."""

    def __init__(self, tmp: Path) -> None:
        self.bg = BackgroundLabAPIServer(crd_dir=CRD_DIR, workdir=tmp / "lab-api")
        self.api_client: Any = None
        self.server: ProviderServer | None = None
        self.watcher: asyncio.Task | None = None
        self.channel: grpc.Channel | None = None
        self.stub: pb_grpc.CloudProviderStub | None = None

    def start(self) -> "ProviderLabPool":
        api = self.bg.start()
        self.bg.call(self._start(api))
        self.channel = grpc.insecure_channel(f"127.0.0.1:{self.server.port}")
        self.stub = pb_grpc.CloudProviderStub(self.channel)
        return self

    async def _start(self, api: Any) -> None:
        for obj in _objects():
            await api.create(obj)
        self.api_client = client_from_kubeconfig(str(api.kubeconfig_path))
        cache = Cache()
        self.watcher = asyncio.create_task(watch_into(cache, client=self.api_client))
        self.server = ProviderServer(cache, claim_writer(self.api_client), address="127.0.0.1:0", insecure=True)
        await self.server.start()
        for _ in range(400):  # the watch lists every kind once; the provider answers only when synced
            if sum(cache.synced_kinds().values()) >= 4:
                return
            await asyncio.sleep(0.025)
        raise AssertionError(f"the provider's cache never synced: {cache.synced_kinds()}")

    def stored(self) -> dict[str, list[dict[str, Any]]]:
        """Deep copies of every Group, slot and NodeClaim the API server holds, sorted by name."""
        async def read() -> dict[str, list[dict[str, Any]]]:
            api = self.bg.server
            return {kind: sorted((copy.deepcopy(o) for o in api.list(f"{kind}.{API_GROUP}")),
                                 key=lambda o: o["metadata"]["name"]) for kind in KINDS}
        return self.bg.call(read())

    def stop(self) -> None:
        if self.channel is not None:
            self.channel.close()

        async def stop() -> None:
            if self.server is not None:
                await self.server.stop(0)
            if self.watcher is not None:
                self.watcher.cancel()
                await asyncio.gather(self.watcher, return_exceptions=True)
            if self.api_client is not None:
                await self.api_client.close()
        try:
            self.bg.call(stop())
        finally:
            self.bg.stop()
