"""IncreaseSize releases its reservation on every failure path, and a Group's durations cannot overflow it.

The attack (issue 15, item 4): a Group stored with maxNodeProvisionTime "100000000h" (accepted by
the CRD of the day; a CRD upgrade never re-validates stored objects) made IncreaseSize fail
INTERNAL with an OverflowError after reserving the slot; the target size stayed raised with a
phantom creating instance and later calls were refused for maxSize until a restart.

These run the real gRPC server over TCP with the in-memory writer double (provider_objects.MemoryWriter,
a TEST DOUBLE of the API server's create/delete): the Group is put in the cache as it was stored,
which the lab API server (with today's CRD) would refuse to create.
"""
from __future__ import annotations

import asyncio
from datetime import timedelta

import grpc
import pytest
from provider_objects import NOW, MemoryWriter, filled_cache, group, slot

from homecluster.model.timestamps import parse_time
from homecluster.kube.cache import GROUPS
from homecluster.provider.proto import externalgrpc_pb2 as pb


async def _target(stub) -> int:
    return (await stub.NodeGroupTargetSize(pb.NodeGroupTargetSizeRequest(id="workers"))).targetSize


async def _creating(stub) -> int:
    nodes = await stub.NodeGroupNodes(pb.NodeGroupNodesRequest(id="workers"))
    return sum(1 for i in nodes.instances if i.status.instanceState == pb.InstanceStatus.instanceCreating)


async def test_a_stored_hundred_million_hour_budget_is_read_as_the_maximum(provider):
    cache = filled_cache([group(max_size=1, maxNodeProvisionTime="100000000h")], [slot("w1")])
    writer = MemoryWriter()
    _, stub = await provider(cache, writer)
    await stub.NodeGroupIncreaseSize(pb.NodeGroupIncreaseSizeRequest(id="workers", delta=1))
    (claim,) = writer.store.values()
    budget = parse_time(claim["spec"]["deadlineAt"]) - parse_time(claim["spec"]["requestedAt"])
    assert budget == timedelta(hours=24)
    assert parse_time(claim["spec"]["requestedAt"]) == NOW
    assert await _target(stub) == 1


async def test_a_group_the_model_cannot_read_is_refused_and_its_reservation_released(provider):
    """build_claim raises (an unreadable maxNodeProvisionTime): FAILED_PRECONDITION naming the field,
    and the slot is free again for the next call once the Group is fixed."""
    bad = group(max_size=1, maxNodeProvisionTime="soon")
    cache = filled_cache([bad], [slot("w1")])
    writer = MemoryWriter()
    _, stub = await provider(cache, writer)
    with pytest.raises(grpc.aio.AioRpcError) as refused:
        await stub.NodeGroupIncreaseSize(pb.NodeGroupIncreaseSizeRequest(id="workers", delta=1))
    assert refused.value.code() == grpc.StatusCode.FAILED_PRECONDITION
    assert "maxNodeProvisionTime" in refused.value.details() and "workers" in refused.value.details()
    assert (await _target(stub), await _creating(stub), writer.creates) == (0, 0, 0)
    cache.upsert(GROUPS, group(max_size=1, maxNodeProvisionTime="20m"))
    await stub.NodeGroupIncreaseSize(pb.NodeGroupIncreaseSizeRequest(id="workers", delta=1))
    assert (await _target(stub), writer.creates) == (1, 1)


class _HangingWriter(MemoryWriter):
    """TEST DOUBLE: a create that never answers (an API server that stopped responding mid-call)."""

    def __init__(self) -> None:
        super().__init__()
        self.started = asyncio.Event()
        self.hang = True

    async def create_claim(self, body: dict, timeout: float) -> dict:
        if self.hang:
            self.started.set()
            await asyncio.sleep(3600)
        return await super().create_claim(body, timeout)


async def test_a_caller_that_goes_away_mid_create_releases_the_reservation(provider):
    """The autoscaler cancels the call (its gRPC deadline passed, or it restarted) while the create is on
    the wire: the handler is cancelled, and the slot must not stay reserved."""
    cache = filled_cache([group(max_size=1)], [slot("w1")])
    writer = _HangingWriter()
    server, stub = await provider(cache, writer)
    call = stub.NodeGroupIncreaseSize(pb.NodeGroupIncreaseSizeRequest(id="workers", delta=1))
    await asyncio.wait_for(writer.started.wait(), 10)
    assert await _target(stub) == 1  # reserved while the create is in flight
    call.cancel()
    async with asyncio.timeout(10):
        while server.scaler.inflight().reserved_slots:
            await asyncio.sleep(0.01)
    assert (await _target(stub), await _creating(stub)) == (0, 0)
    writer.hang = False
    await stub.NodeGroupIncreaseSize(pb.NodeGroupIncreaseSizeRequest(id="workers", delta=1))
    assert (await _target(stub), writer.creates) == (1, 1)
