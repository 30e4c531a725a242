"""Bad input from the autoscaler's side of the wire is INVALID_ARGUMENT naming the field, never INTERNAL,
and nothing it sent is echoed back at length (issue 15, the gRPC low). Real grpc.aio server over TCP."""
from __future__ import annotations

import grpc
import pytest
from google.protobuf.timestamp_pb2 import Timestamp
from provider_objects import filled_cache, group, slot

from homecluster.provider.proto import externalgrpc_pb2 as pb
from homecluster.provider.proto import k8s_core_pb2 as core

MEGABYTE_ID = "g" * (1 << 20)


def pool():
    return filled_cache([group(pricing={"energyPricePerKWh": 0.3})], [slot("w1", powerDrawWatts=60)])


async def refused(call) -> grpc.aio.AioRpcError:
    with pytest.raises(grpc.aio.AioRpcError) as err:
        await call
    return err.value


@pytest.mark.parametrize("rpc, request_", [
    ("NodeGroupTargetSize", pb.NodeGroupTargetSizeRequest(id=MEGABYTE_ID)),
    ("NodeGroupIncreaseSize", pb.NodeGroupIncreaseSizeRequest(id=MEGABYTE_ID, delta=1)),
    ("NodeGroupDecreaseTargetSize", pb.NodeGroupDecreaseTargetSizeRequest(id=MEGABYTE_ID, delta=-1)),
    ("NodeGroupDeleteNodes", pb.NodeGroupDeleteNodesRequest(id=MEGABYTE_ID)),
    ("NodeGroupNodes", pb.NodeGroupNodesRequest(id=MEGABYTE_ID)),
    ("NodeGroupTemplateNodeInfo", pb.NodeGroupTemplateNodeInfoRequest(id=MEGABYTE_ID)),
    ("NodeGroupGetOptions", pb.NodeGroupAutoscalingOptionsRequest(id=MEGABYTE_ID)),
])
async def test_a_megabyte_group_id_is_refused_without_being_echoed(provider, rpc, request_):
    _, stub = await provider(pool())
    err = await refused(getattr(stub, rpc)(request_))
    assert err.code() == grpc.StatusCode.INVALID_ARGUMENT, (err.code(), err.details()[:200])
    assert "1048576 characters" in err.details() and len(err.details()) < 300


async def test_a_long_unknown_node_is_refused_with_a_bounded_message(provider):
    _, stub = await provider(pool())
    node = pb.ExternalGrpcNode(providerID="x" * (1 << 20), name="y" * (1 << 20))
    err = await refused(stub.PricingNodePrice(pb.PricingNodePriceRequest(node=node)))
    assert err.code() == grpc.StatusCode.NOT_FOUND
    assert len(err.details()) <= 1024


async def test_garbage_pod_bytes_is_invalid_argument_naming_the_field(provider):
    _, stub = await provider(pool())
    err = await refused(stub.PricingPodPrice(pb.PricingPodPriceRequest(pod_bytes=b"\xff\xff\xff\xff garbage")))
    assert err.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert "pod_bytes" in err.details()


async def test_a_pod_with_an_unreadable_request_is_invalid_argument_naming_the_container(provider):
    _, stub = await provider(pool())
    pod = core.Pod()
    pod.spec.containers.add(name="app").resources.requests["cpu"].string = "1e99999"
    err = await refused(stub.PricingPodPrice(pb.PricingPodPriceRequest(pod_bytes=pod.SerializeToString())))
    assert err.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert "spec.containers[0].resources.requests" in err.details()


@pytest.mark.parametrize("start", [
    {"startTimestamp": Timestamp(seconds=10**15)},   # beyond year 9999
    {"startTimestamp": Timestamp(seconds=0, nanos=-5)},  # invalid nanos
    {"startTime": pb.K8sTime(seconds=2**62)},
])
async def test_an_out_of_range_pricing_time_is_invalid_argument_naming_the_field(provider, start):
    _, stub = await provider(pool())
    node = pb.ExternalGrpcNode(providerID="homecluster://w1", name="w1")
    err = await refused(stub.PricingNodePrice(pb.PricingNodePriceRequest(node=node, **start)))
    assert err.code() == grpc.StatusCode.INVALID_ARGUMENT, (err.code(), err.details())
    assert "startTimestamp/startTime" in err.details()
    pod = core.Pod()
    err = await refused(stub.PricingPodPrice(pb.PricingPodPriceRequest(pod_bytes=pod.SerializeToString() or b"\n\x00",
                                                                       **start)))
    assert err.code() == grpc.StatusCode.INVALID_ARGUMENT, (err.code(), err.details())
