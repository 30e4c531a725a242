#!/usr/bin/env python3
"""Latency of the provider's hot read RPCs at 10, 100 and 1,000 slots, next to the transport floor.

Starts the real provider (plaintext, 127.0.0.1, ephemeral port) over an in-memory cache with one
group of N slots (half of them with claims: a quarter ready with registered Nodes, a quarter
pending), calls each RPC sequentially through the generated stub and prints p50 / p99 in
microseconds. GPULabel and Refresh answer without looking at the pool: they are the floor
(grpc + protobuf + asyncio for one unary call). The goal is NodeGroupNodes, NodeGroupTargetSize
and NodeGroupForNode under 2x the floor at 1,000 slots.

    .venv/bin/python benchmarks/provider_latency.py [--calls 2000]

Not a test: numbers depend on the machine. The writer is a stub that refuses writes; no write RPC
is measured.
"""
from __future__ import annotations

import argparse
import asyncio
import statistics
import time
from datetime import datetime, timezone

import grpc

from homecluster.provider.actions import ProviderSettings
from homecluster.kube.cache import CLAIMS, GROUPS, NODES, SLOTS, Cache
from homecluster.provider.proto import externalgrpc_pb2 as pb
from homecluster.provider.proto import externalgrpc_pb2_grpc as pb_grpc
from homecluster.provider.server import ProviderServer

NOW = datetime(2026, 3, 4, 9, 38, 15, tzinfo=timezone.utc)


class NoWrites:
    async def create_claim(self, body, timeout):
        raise RuntimeError("the benchmark makes no writes")

    async def delete_claim(self, name, resource_version, timeout):
        raise RuntimeError("the benchmark makes no writes")


def pool(slots: int) -> Cache:
    cache = Cache()
    cache.replace(GROUPS, [{"metadata": {"name": "workers"}, "spec": {
        "minSize": 0, "maxSize": slots, "template": {"capacity": {"cpu": "4", "memory": "16Gi", "pods": "110"}}}}])
    cache.replace(SLOTS, [{"metadata": {"name": f"w{i:04d}"}, "spec": {"groupRef": "workers"},
                           "status": {"powerState": "on" if i % 4 == 0 else "off"}} for i in range(slots)])
    claims, nodes = [], []
    for i in range(0, slots, 2):
        ready = i % 4 == 0
        claims.append({"metadata": {"name": f"w{i:04d}-c", "creationTimestamp": "2026-03-04T09:00:00Z"},
                       "spec": {"slotRef": f"w{i:04d}", "requestedAt": "2026-03-04T09:00:00Z"},
                       "status": {"phase": "ready" if ready else "pending"}})
        if ready:
            nodes.append({"metadata": {"name": f"w{i:04d}"}, "spec": {"providerID": f"homecluster://w{i:04d}"}})
    cache.replace(CLAIMS, claims)
    cache.replace(NODES, nodes)
    return cache


async def measure(call, requests, calls: int) -> tuple[float, float]:
    """(p50, p99) in microseconds of `calls` calls cycling through `requests`, after a warm-up."""
    for request in requests[:50]:  # warm-up (and a memo's first computation)
        await call(request)
    samples = []
    for i in range(calls):
        request = requests[i % len(requests)]
        start = time.perf_counter()
        await call(request)
        samples.append((time.perf_counter() - start) * 1e6)
    samples.sort()
    return statistics.median(samples), samples[max(0, int(len(samples) * 0.99) - 1)]


async def run_size(slots: int, calls: int) -> list[tuple[str, float, float]]:
    server = ProviderServer(pool(slots), NoWrites(), ProviderSettings(), address="127.0.0.1:0", insecure=True,
                            clock=lambda: NOW)
    await server.start()
    channel = grpc.aio.insecure_channel(f"127.0.0.1:{server.port}")
    stub = pb_grpc.CloudProviderStub(channel)
    nodes = [pb.NodeGroupForNodeRequest(node=pb.ExternalGrpcNode(providerID=f"homecluster://w{i:04d}",
                                                                 name=f"w{i:04d}")) for i in range(slots)]
    rows = []
    try:
        for label, call, requests in (
            ("GPULabel (floor)", stub.GPULabel, [pb.GPULabelRequest()]),
            ("Refresh (floor)", stub.Refresh, [pb.RefreshRequest()]),
            ("NodeGroupNodes", stub.NodeGroupNodes, [pb.NodeGroupNodesRequest(id="workers")]),
            ("NodeGroupTargetSize", stub.NodeGroupTargetSize, [pb.NodeGroupTargetSizeRequest(id="workers")]),
            ("NodeGroupForNode", stub.NodeGroupForNode, nodes),
        ):
            rows.append((label, *await measure(call, requests, calls)))
    finally:
        await channel.close()
        await server.stop(0)
    return rows


async def main(calls: int) -> None:
    print(f"{'slots':>6}  {'rpc':<22} {'p50 us':>9} {'p99 us':>9}  {'p50 / floor':>11}")
    for slots in (10, 100, 1000):
        rows = await run_size(slots, calls)
        floor = min(rows[0][1], rows[1][1])
        for label, p50, p99 in rows:
            print(f"{slots:>6}  {label:<22} {p50:>9.0f} {p99:>9.0f}  {p50 / floor:>10.2f}x")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=2000, help="calls per RPC and size (default 2000)")
    asyncio.run(main(parser.parse_args().calls))
