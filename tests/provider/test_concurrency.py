"""Concurrent IncreaseSize calls never over-commit a slot or the group's maxSize.

These run against the in-memory writer double (provider_objects.MemoryWriter: a TEST DOUBLE of the
API server's create/delete, with real awaits so calls interleave) so the reservation rules can be
checked with controlled latency and injected failures; test_lab.py runs the 50-call scenario
against the lab API server with the operator's real ClaimWriter and the lab's watch.
"""
from __future__ import annotations

import asyncio
from collections import Counter

import grpc
from provider_objects import MemoryWriter, filled_cache, group, slot

from homecluster.kube.cache import CLAIMS
from homecluster.provider.proto import externalgrpc_pb2 as pb


async def fifty_increases(stub) -> tuple[int, list[grpc.aio.AioRpcError]]:
    calls = [stub.NodeGroupIncreaseSize(pb.NodeGroupIncreaseSizeRequest(id="workers", delta=1)) for _ in range(50)]
    results = await asyncio.gather(*calls, return_exceptions=True)
    refused = [r for r in results if isinstance(r, grpc.aio.AioRpcError)]
    others = [r for r in results if isinstance(r, BaseException) and not isinstance(r, grpc.aio.AioRpcError)]
    assert not others, others
    return len(results) - len(refused), refused


async def test_fifty_concurrent_increases_make_exactly_twenty_claims(provider):
    cache = filled_cache([group(max_size=20)], [slot(f"w{i:02d}") for i in range(20)])
    writer = MemoryWriter(latency=0.005)
    _, stub = await provider(cache, writer)
    accepted, refused = await fifty_increases(stub)
    assert (accepted, len(refused)) == (20, 30)
    assert {e.code() for e in refused} == {grpc.StatusCode.FAILED_PRECONDITION}
    assert all("maxSize 20" in e.details() for e in refused)
    assert writer.creates == 20
    per_slot = Counter(c["spec"]["slotRef"] for c in writer.store.values())
    assert sorted(per_slot) == [f"w{i:02d}" for i in range(20)] and set(per_slot.values()) == {1}
    assert len(cache.all(CLAIMS)) == 20  # the cache reflects every created claim without a watch
    assert (await stub.NodeGroupTargetSize(pb.NodeGroupTargetSizeRequest(id="workers"))).targetSize == 20


async def test_concurrent_increases_limited_by_free_slots_when_max_is_higher(provider):
    cache = filled_cache([group(max_size=50)], [slot(f"w{i:02d}") for i in range(20)])
    writer = MemoryWriter(latency=0.005)
    _, stub = await provider(cache, writer)
    accepted, refused = await fifty_increases(stub)
    assert (accepted, len(refused), writer.creates) == (20, 30, 20)
    assert {e.code() for e in refused} == {grpc.StatusCode.RESOURCE_EXHAUSTED}
    assert len({c["spec"]["slotRef"] for c in writer.store.values()}) == 20


async def test_failed_create_releases_its_reservation(provider):
    cache = filled_cache([group(max_size=2)], [slot("w1"), slot("w2")])
    writer = MemoryWriter()
    writer.fail_next_create = "HTTP 500 etcd timeout"
    _, stub = await provider(cache, writer)
    try:
        await stub.NodeGroupIncreaseSize(pb.NodeGroupIncreaseSizeRequest(id="workers", delta=1))
        raise AssertionError("the failed create must be reported")
    except grpc.aio.AioRpcError as err:
        assert err.code() == grpc.StatusCode.UNAVAILABLE and "etcd timeout" in err.details()
        assert "created 0 of 1" in err.details()
    assert (await stub.NodeGroupTargetSize(pb.NodeGroupTargetSizeRequest(id="workers"))).targetSize == 0
    await stub.NodeGroupIncreaseSize(pb.NodeGroupIncreaseSizeRequest(id="workers", delta=2))
    assert writer.creates == 2
