"""Bad input, tried in bulk, on every provider RPC (issue 14): hypothesis generates random and boundary
requests and sends them to the real grpc.aio provider watching the lab API server (provider_lab_pool).

For every request: an answer or a refusal within the per-call timeout (no hang), never INTERNAL or
UNKNOWN (a traceback on our side), a refusal's message bounded and naming what it refuses, and a refused
request leaves every stored Group, slot and NodeClaim exactly as it was.
test_input_bounds.py holds the hand-picked cases these properties generalise.
"""
from __future__ import annotations

import grpc
import pytest
from google.protobuf.timestamp_pb2 import Timestamp
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from provider_lab_pool import GROUPS, SLOTS, ProviderLabPool

from homecluster.provider.proto import externalgrpc_pb2 as pb
from homecluster.provider.proto import k8s_core_pb2 as core
from homecluster.provider.wireinput import MAX_MESSAGE

pytestmark = pytest.mark.lab

CALL_TIMEOUT = 5.0  # seconds; a call that takes longer is a hang
EXAMPLES = 60
# a refusal is one of these; INTERNAL/UNKNOWN mean an exception escaped, DEADLINE_EXCEEDED a hang
REFUSALS = {grpc.StatusCode.INVALID_ARGUMENT, grpc.StatusCode.NOT_FOUND, grpc.StatusCode.FAILED_PRECONDITION,
            grpc.StatusCode.OUT_OF_RANGE, grpc.StatusCode.UNIMPLEMENTED, grpc.StatusCode.UNAVAILABLE,
            grpc.StatusCode.RESOURCE_EXHAUSTED}
PROPERTY = settings(max_examples=EXAMPLES, deadline=None, derandomize=True, database=None,
                    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow,
                                           HealthCheck.data_too_large])

# -- strategies from the proto's fields ------------------------------------------------------------------
HUGE = "g" * (1 << 20)
ALL_SLOTS = [s for slots in SLOTS.values() for s in slots]
ids = st.one_of(st.sampled_from(GROUPS), st.just(""), st.just(HUGE), st.text(max_size=300),
                st.text(min_size=250, max_size=5000))
int32 = st.one_of(st.sampled_from([0, 1, -1, 2, -2, 2**31 - 1, -2**31]), st.integers(-2**31, 2**31 - 1))
int64 = st.one_of(st.sampled_from([0, -1, 2**63 - 1, -2**63, 253402300800, -62135596801]),
                  st.integers(-2**63, 2**63 - 1))
timestamps = st.builds(Timestamp, seconds=int64, nanos=int32)
k8s_times = st.builds(pb.K8sTime, seconds=int64, nanos=int32)
provider_ids = st.one_of(st.just(""), st.sampled_from([f"homecluster://{s}" for s in ALL_SLOTS]),
                         st.just(HUGE), st.text(max_size=300))
names = st.one_of(st.just(""), st.sampled_from(ALL_SLOTS), st.text(max_size=300))
small_maps = st.dictionaries(st.text(max_size=60), st.text(max_size=60), max_size=4)
nodes = st.builds(pb.ExternalGrpcNode, providerID=provider_ids, name=names, labels=small_maps,
                  annotations=small_maps)


def _pod(cpu: str) -> bytes:
    pod = core.Pod()
    pod.spec.containers.add(name="app").resources.requests["cpu"].string = cpu
    return pod.SerializeToString()


pod_bytes = st.one_of(st.binary(max_size=512), st.text(max_size=20).map(_pod),
                      st.sampled_from(["1", "500m", "1e99999", "-1", "NaN", ""]).map(_pod))


def _with_times(cls, **fields):
    return st.builds(lambda start, end, legacy_start, **kw: cls(**kw, **({"startTimestamp": start} if start else {}),
                                                               **({"endTimestamp": end} if end else {}),
                                                               **({"startTime": legacy_start} if legacy_start else {})),
                     st.none() | timestamps, st.none() | timestamps, st.none() | k8s_times, **fields)


# every RPC of the proto, each with a strategy for its request message
REQUESTS = {
    "NodeGroups": st.just(pb.NodeGroupsRequest()),
    "NodeGroupForNode": st.builds(pb.NodeGroupForNodeRequest, node=nodes),
    "PricingNodePrice": _with_times(pb.PricingNodePriceRequest, node=nodes),
    "PricingPodPrice": st.one_of(_with_times(pb.PricingPodPriceRequest, pod_bytes=pod_bytes),
                                 st.builds(pb.PricingPodPriceRequest, pod=pod_bytes)),
    "GPULabel": st.just(pb.GPULabelRequest()),
    "GetAvailableGPUTypes": st.just(pb.GetAvailableGPUTypesRequest()),
    "Cleanup": st.just(pb.CleanupRequest()),
    "Refresh": st.just(pb.RefreshRequest()),
    "NodeGroupTargetSize": st.builds(pb.NodeGroupTargetSizeRequest, id=ids),
    "NodeGroupIncreaseSize": st.builds(pb.NodeGroupIncreaseSizeRequest, id=ids, delta=int32),
    "NodeGroupDeleteNodes": st.builds(pb.NodeGroupDeleteNodesRequest, id=ids, nodes=st.lists(nodes, max_size=4)),
    "NodeGroupDecreaseTargetSize": st.builds(pb.NodeGroupDecreaseTargetSizeRequest, id=ids, delta=int32),
    "NodeGroupNodes": st.builds(pb.NodeGroupNodesRequest, id=ids),
    "NodeGroupTemplateNodeInfo": st.builds(pb.NodeGroupTemplateNodeInfoRequest, id=ids),
    "NodeGroupGetOptions": st.builds(pb.NodeGroupAutoscalingOptionsRequest, id=ids),
}


def test_every_rpc_of_the_proto_has_a_strategy():
    service = pb.DESCRIPTOR.services_by_name["CloudProvider"]
    assert sorted(m.name for m in service.methods) == sorted(REQUESTS)


@pytest.fixture(scope="module")
def pool(tmp_path_factory):
    started = ProviderLabPool(tmp_path_factory.mktemp("provider-bad-input")).start()
    stored = started.stored()
    assert (len(stored["groups"]), len(stored["nodes"])) == (2, 4), stored  # the comparisons compare something
    yield started
    started.stop()


def _names_what_it_refuses(rpc: str, request, details: str) -> bool:
    """The refusal names the request's field, its group or node, or the RPC (with the rule)."""
    words = {rpc, "node group", "Group", "pod_bytes", "delta"}
    for field in ("id", "delta"):
        value = getattr(request, field, None)
        if value not in (None, "") and len(str(value)) <= 253:
            words.add(str(value))
    return any(word in details for word in words)


def check_one(pool: ProviderLabPool, rpc: str, request) -> None:
    before = pool.stored()
    try:
        getattr(pool.stub, rpc)(request, timeout=CALL_TIMEOUT)
    except grpc.RpcError as err:
        code, details = err.code(), err.details() or ""
        assert code in REFUSALS, f"{rpc} answered {code.name}: {details[:300]}"
        assert details and len(details) <= MAX_MESSAGE, f"{rpc}: refusal of {len(details)} characters"
        assert _names_what_it_refuses(rpc, request, details), f"{rpc}: {details!r} names nothing"
        assert pool.stored() == before, f"{rpc} refused ({details[:200]}) but stored objects changed"


@PROPERTY
@given(data=st.data())
def test_random_requests_to_every_rpc(pool, data):
    rpc = data.draw(st.sampled_from(sorted(REQUESTS)), label="rpc")
    check_one(pool, rpc, data.draw(REQUESTS[rpc], label="request"))


@pytest.mark.parametrize("rpc, request_", [
    ("NodeGroupIncreaseSize", pb.NodeGroupIncreaseSizeRequest(id="workers", delta=-2**31)),
    ("NodeGroupIncreaseSize", pb.NodeGroupIncreaseSizeRequest(id="workers", delta=2**31 - 1)),
    ("NodeGroupIncreaseSize", pb.NodeGroupIncreaseSizeRequest(id="", delta=1)),
    ("NodeGroupDecreaseTargetSize", pb.NodeGroupDecreaseTargetSizeRequest(id="workers", delta=2**31 - 1)),
    ("NodeGroupDecreaseTargetSize", pb.NodeGroupDecreaseTargetSizeRequest(id="workers", delta=-2**31)),
    ("NodeGroupDeleteNodes", pb.NodeGroupDeleteNodesRequest(id="workers", nodes=[pb.ExternalGrpcNode(name="w1")])),
    ("NodeGroupDeleteNodes", pb.NodeGroupDeleteNodesRequest(id="gpus", nodes=[
        pb.ExternalGrpcNode(providerID="homecluster://w1", name="w1")])),
    ("NodeGroupForNode", pb.NodeGroupForNodeRequest(node=pb.ExternalGrpcNode())),
    ("PricingNodePrice", pb.PricingNodePriceRequest(node=pb.ExternalGrpcNode(providerID="homecluster://w1"),
                                                    endTimestamp=Timestamp(seconds=-2**63))),
    ("PricingPodPrice", pb.PricingPodPriceRequest(pod=b"\x0a\xff\xff\xff\xff\x0f")),
])
def test_boundary_requests(pool, rpc, request_):
    check_one(pool, rpc, request_)


@PROPERTY
@given(rpc=st.sampled_from(sorted(REQUESTS)), garbage=st.binary(min_size=1, max_size=256))
@example(rpc="NodeGroupIncreaseSize", garbage=b"\xff\xff\xff")
@example(rpc="NodeGroupDeleteNodes", garbage=b"\x0a\x05\xff")
def test_garbage_bytes_to_every_rpc(pool, rpc, garbage):
    """Bytes that are no request message at all (sent with no serializer): refused, never INTERNAL."""
    method = pool.channel.unary_unary(f"/clusterautoscaler.cloudprovider.v1.externalgrpc.CloudProvider/{rpc}")
    before = pool.stored()
    try:
        method(garbage, timeout=CALL_TIMEOUT)
    except grpc.RpcError as err:
        assert err.code() in REFUSALS, f"{rpc} answered {err.code().name} to garbage: {err.details()[:300]}"
        assert pool.stored() == before
