"""Every RPC of the provider, through the generated stub over TCP to the real grpc.aio server."""
from __future__ import annotations

from datetime import timedelta

import grpc
import pytest
import provider_wire as wire
from google.protobuf.timestamp_pb2 import Timestamp
from grpc_health.v1 import health_pb2, health_pb2_grpc
from provider_objects import NOW, MemoryWriter, claim, corev1_node, filled_cache, group, slot

from homecluster.kube.cache import CLAIMS, GROUPS, NODES, SLOTS
from homecluster.provider.proto import externalgrpc_pb2 as pb
from homecluster.provider.proto import k8s_core_pb2 as core
from homecluster.provider.server import ProviderServer


def pool_cache():
    return filled_cache(
        [group(min_size=1, max_size=4, autoscaling={"scaleDownUnneededTime": "5m"}, maxNodeProvisionTime="20m",
               pricing={"energyPricePerKWh": 0.3}, gpu={"label": "homecluster.dev/gpu", "types": ["rtx-3060"]}),
         group("spare", max_size=1)],
        [slot("w1", powerDrawWatts=60), slot("w2", providerID="k3s://w2"), slot("w3"), slot("w4"),
         slot("s1", "spare")],
        [claim("w1", "ready"), claim("w2", "booting")],
        [corev1_node("w1", "homecluster://w1"), corev1_node("cp", "k3s://cp")])


async def test_node_groups_and_for_node_return_the_same_group(provider):
    _, stub = await provider(pool_cache())
    groups = (await stub.NodeGroups(pb.NodeGroupsRequest())).nodeGroups
    assert [(g.id, g.minSize, g.maxSize) for g in groups] == [("spare", 0, 1), ("workers", 1, 4)]
    workers = groups[1]
    for node in (pb.ExternalGrpcNode(providerID="homecluster://w1", name="w1"),
                 pb.ExternalGrpcNode(providerID="k3s://w2", name="k3s://w2"),  # CA's placeholder node
                 pb.ExternalGrpcNode(providerID="homecluster://w4", name="homecluster://w4")):
        answer = (await stub.NodeGroupForNode(pb.NodeGroupForNodeRequest(node=node))).nodeGroup
        assert answer == workers, node
    unmanaged = await stub.NodeGroupForNode(pb.NodeGroupForNodeRequest(
        node=pb.ExternalGrpcNode(providerID="k3s://cp", name="cp")))
    assert unmanaged.nodeGroup.id == ""


async def test_a_groups_max_size_is_told_capped_at_its_slots_and_follows_them(provider):
    """maxSize 5 over two free slots: NodeGroups and NodeGroupForNode both say 2 (provider/logic.reported_group),
    and a slot added later raises it at the next call (the memo is keyed by the cache's version)."""
    cache = filled_cache([group(min_size=3, max_size=5)], [slot("w1"), slot("w2")], [], [])
    _, stub = await provider(cache)
    (told,) = (await stub.NodeGroups(pb.NodeGroupsRequest())).nodeGroups
    assert (told.minSize, told.maxSize) == (2, 2) and "maxSize 5; its slots give 2 now" in told.debug
    for_node = await stub.NodeGroupForNode(pb.NodeGroupForNodeRequest(
        node=pb.ExternalGrpcNode(providerID="homecluster://w1", name="w1")))
    assert for_node.nodeGroup == told
    cache.upsert(SLOTS, slot("w3"))
    (told,) = (await stub.NodeGroups(pb.NodeGroupsRequest())).nodeGroups
    assert (told.minSize, told.maxSize) == (3, 3)


async def test_target_size_nodes_and_errors(provider):
    _, stub = await provider(pool_cache())
    assert (await stub.NodeGroupTargetSize(pb.NodeGroupTargetSizeRequest(id="workers"))).targetSize == 2
    instances = (await stub.NodeGroupNodes(pb.NodeGroupNodesRequest(id="workers"))).instances
    assert [(i.id, i.status.instanceState) for i in instances] == [
        ("homecluster://w1", pb.InstanceStatus.instanceRunning), ("k3s://w2", pb.InstanceStatus.instanceCreating)]
    assert not instances[0].status.HasField("errorInfo")
    with pytest.raises(grpc.aio.AioRpcError) as err:
        await stub.NodeGroupTargetSize(pb.NodeGroupTargetSizeRequest(id="ghost"))
    assert err.value.code() == grpc.StatusCode.NOT_FOUND and "'ghost'" in err.value.details()
    for rpc, request in ((stub.NodeGroupIncreaseSize, pb.NodeGroupIncreaseSizeRequest(id="workers", delta=0)),
                         (stub.NodeGroupIncreaseSize, pb.NodeGroupIncreaseSizeRequest(id="workers", delta=-1)),
                         (stub.NodeGroupDecreaseTargetSize, pb.NodeGroupDecreaseTargetSizeRequest(id="workers", delta=1))):
        with pytest.raises(grpc.aio.AioRpcError) as err:
            await rpc(request)
        assert err.value.code() == grpc.StatusCode.INVALID_ARGUMENT
        assert "'workers'" in err.value.details() and "delta must be" in err.value.details()


async def test_increase_decrease_delete_change_claims_and_target_at_once(provider):
    cache = pool_cache()
    writer = MemoryWriter()
    _, stub = await provider(cache, writer)
    await stub.NodeGroupIncreaseSize(pb.NodeGroupIncreaseSizeRequest(id="workers", delta=2))
    assert (await stub.NodeGroupTargetSize(pb.NodeGroupTargetSizeRequest(id="workers"))).targetSize == 4
    created = sorted(writer.store.values(), key=lambda c: c["spec"]["slotRef"])
    assert [c["spec"]["slotRef"] for c in created] == ["w3", "w4"]
    body = created[0]
    assert body["metadata"]["generateName"] == "w3-"
    assert body["metadata"]["labels"] == {"infra.homecluster.dev/slot": "w3", "infra.homecluster.dev/group": "workers"}
    assert body["spec"]["requestedBy"] == "cluster-autoscaler" and "status" not in body
    assert body["spec"]["requestedAt"] == "2026-03-04T09:38:15Z"
    assert body["spec"]["deadlineAt"] == "2026-03-04T09:58:15Z"  # maxNodeProvisionTime 20m > 12m10s floor
    with pytest.raises(grpc.aio.AioRpcError) as err:  # at maxSize
        await stub.NodeGroupIncreaseSize(pb.NodeGroupIncreaseSizeRequest(id="workers", delta=1))
    assert err.value.code() == grpc.StatusCode.FAILED_PRECONDITION and "maxSize 4" in err.value.details()

    # decrease: only the two pending claims can be cancelled
    with pytest.raises(grpc.aio.AioRpcError) as err:
        await stub.NodeGroupDecreaseTargetSize(pb.NodeGroupDecreaseTargetSizeRequest(id="workers", delta=-3))
    assert err.value.code() == grpc.StatusCode.FAILED_PRECONDITION and "only 2" in err.value.details()
    await stub.NodeGroupDecreaseTargetSize(pb.NodeGroupDecreaseTargetSizeRequest(id="workers", delta=-1))
    assert len(writer.deletes) == 1
    assert (await stub.NodeGroupTargetSize(pb.NodeGroupTargetSizeRequest(id="workers"))).targetSize == 3

    # delete: a node of another group refuses the whole call, nothing deleted
    with pytest.raises(grpc.aio.AioRpcError) as err:
        await stub.NodeGroupDeleteNodes(pb.NodeGroupDeleteNodesRequest(id="workers", nodes=[
            pb.ExternalGrpcNode(providerID="homecluster://w1", name="w1"),
            pb.ExternalGrpcNode(providerID="homecluster://s1", name="s1")]))
    assert err.value.code() == grpc.StatusCode.INVALID_ARGUMENT and "'s1'" in err.value.details()
    assert len(writer.deletes) == 1
    await stub.NodeGroupDeleteNodes(pb.NodeGroupDeleteNodesRequest(id="workers", nodes=[
        pb.ExternalGrpcNode(providerID="homecluster://w1", name="w1")]))
    assert writer.deletes[-1].startswith("w1-")
    assert (await stub.NodeGroupTargetSize(pb.NodeGroupTargetSizeRequest(id="workers"))).targetSize == 2


async def test_template_bytes_decode_with_kubernetes_field_numbers(provider):
    _, stub = await provider(pool_cache())
    response = await stub.NodeGroupTemplateNodeInfo(pb.NodeGroupTemplateNodeInfoRequest(id="workers"))
    raw = response.SerializeToString()
    top = wire.fields(raw)
    assert top[1][0][0] == 2 and top[2][0][0] == 2  # both length-delimited
    node_bytes = top[2][0][1]
    assert node_bytes and top[1][0][1] == node_bytes  # the same Node in field 1 (legacy) and 2
    assert not node_bytes.startswith(b"k8s\x00")
    metadata, spec, status = (wire.one(node_bytes, n) for n in (1, 2, 3))  # Node: metadata 1, spec 2, status 3
    assert wire.text(metadata, 1) == "template-workers"  # ObjectMeta.name = 1
    labels = {k: v.decode() for k, v in wire.string_map(metadata, 11).items()}  # ObjectMeta.labels = 11
    assert labels["infra.homecluster.dev/group"] == "workers" and labels["kubernetes.io/os"] == "linux"
    assert labels["homecluster.dev/gpu"] == "rtx-3060"
    taint = wire.one(spec, 5)  # NodeSpec.taints = 5; Taint key 1, value 2, effect 3
    assert (wire.text(taint, 1), wire.text(taint, 2), wire.text(taint, 3)) == ("homecluster.dev/pool", "workers",
                                                                                "NoSchedule")
    quantity = lambda q: wire.text(q, 1)  # Quantity.string = 1
    capacity = {k: quantity(v) for k, v in wire.string_map(status, 1).items()}  # NodeStatus.capacity = 1
    allocatable = {k: quantity(v) for k, v in wire.string_map(status, 2).items()}  # allocatable = 2
    assert capacity == {"cpu": "4", "memory": "16Gi", "pods": "110", "ephemeral-storage": "100Gi"}
    assert allocatable == {"cpu": "3800m", "memory": "15Gi", "pods": "110", "ephemeral-storage": "100Gi"}
    conditions = {wire.text(c, 1): wire.text(c, 2) for _, c in wire.fields(status)[4]}  # conditions = 4: type 1, status 2
    assert conditions["Ready"] == "True" and conditions["MemoryPressure"] == "False"


async def test_get_options_in_both_duration_encodings_and_unimplemented(provider):
    _, stub = await provider(pool_cache())
    defaults = pb.NodeGroupAutoscalingOptions(scaleDownUtilizationThreshold=0.5, scaleDownGpuUtilizationThreshold=0.5,
                                              ignoreDaemonSetsUtilization=True)
    defaults.scaleDownUnneededDuration.FromTimedelta(timedelta(minutes=10))
    defaults.scaleDownUnreadyDuration.FromTimedelta(timedelta(minutes=20))
    defaults.MaxNodeProvisionDuration.FromTimedelta(timedelta(minutes=15))  # 1.35 sends only 8/9/10
    response = await stub.NodeGroupGetOptions(pb.NodeGroupAutoscalingOptionsRequest(id="workers", defaults=defaults))
    options = wire.one(response.SerializeToString(), 1)
    got = wire.fields(options)
    for legacy, new, seconds in ((3, 8, 300), (4, 9, 1200), (5, 10, 1200)):
        assert wire.one(wire.one(options, legacy), 1) == seconds * 10**9, legacy  # K8sDuration: ns in field 1
        assert wire.one(wire.one(options, new), 1) == seconds, new  # Duration.seconds = 1
    assert got[7][0][1] == 1  # ignoreDaemonSetsUtilization echoed from defaults
    with pytest.raises(grpc.aio.AioRpcError) as err:
        await stub.NodeGroupGetOptions(pb.NodeGroupAutoscalingOptionsRequest(id="spare", defaults=defaults))
    assert err.value.code() == grpc.StatusCode.UNIMPLEMENTED


async def test_pricing_gpu_refresh_cleanup(provider):
    _, stub = await provider(pool_cache())
    start, end = Timestamp(), Timestamp()
    start.FromDatetime(NOW)
    end.FromDatetime(NOW + timedelta(hours=10))
    price = await stub.PricingNodePrice(pb.PricingNodePriceRequest(
        node=pb.ExternalGrpcNode(providerID="homecluster://w1", name="w1"), startTimestamp=start, endTimestamp=end))
    assert price.price == pytest.approx(0.06 * 0.3 * 10)
    legacy = await stub.PricingNodePrice(pb.PricingNodePriceRequest(
        node=pb.ExternalGrpcNode(providerID="homecluster://w1", name="w1"),
        startTime=pb.K8sTime(seconds=start.seconds), endTime=pb.K8sTime(seconds=end.seconds)))
    assert legacy.price == pytest.approx(price.price)
    pod = core.Pod()
    pod.spec.nodeSelector["infra.homecluster.dev/group"] = "workers"
    pod.spec.containers.add(name="a").resources.requests["cpu"].string = "3800m"
    pod_price = await stub.PricingPodPrice(pb.PricingPodPriceRequest(
        pod_bytes=pod.SerializeToString(), startTimestamp=start, endTimestamp=end))
    assert pod_price.price == pytest.approx(0.06 / 4 * 0.3 * 10)  # whole node; mean draw of 4 slots (60, 0, 0, 0 W)
    assert (await stub.GPULabel(pb.GPULabelRequest())).label == "homecluster.dev/gpu"
    assert list((await stub.GetAvailableGPUTypes(pb.GetAvailableGPUTypesRequest())).gpuTypes) == ["rtx-3060"]
    await stub.Refresh(pb.RefreshRequest())
    await stub.Cleanup(pb.CleanupRequest())


async def test_failed_claim_is_a_creation_error_and_delete_nodes_clears_it(provider):
    cache = pool_cache()
    cache.upsert(CLAIMS, claim("w3", "failed", reason="AttemptLimitExceeded", message="3 attempts failed",
                               finishedAt=NOW.isoformat()))
    writer = MemoryWriter()
    _, stub = await provider(cache, writer)
    instances = {i.id: i for i in (await stub.NodeGroupNodes(pb.NodeGroupNodesRequest(id="workers"))).instances}
    failed = instances["homecluster://w3"].status
    assert failed.instanceState == pb.InstanceStatus.instanceCreating
    assert (failed.errorInfo.errorCode, failed.errorInfo.instanceErrorClass) == ("AttemptLimitExceeded", 1)
    await stub.NodeGroupDeleteNodes(pb.NodeGroupDeleteNodesRequest(id="workers", nodes=[
        pb.ExternalGrpcNode(providerID="homecluster://w3", name="homecluster://w3",
                            annotations={"k8s.io/cluster-autoscaler/fake-node-reason": "create-error"})]))
    assert writer.deletes and writer.deletes[-1].startswith("w3-")
    instances = {i.id for i in (await stub.NodeGroupNodes(pb.NodeGroupNodesRequest(id="workers"))).instances}
    assert "homecluster://w3" not in instances


async def test_health_and_reads_wait_for_sync(provider):
    cache = filled_cache([group()], [slot("w1")], synced=False)
    server, stub = await provider(cache)
    channel = grpc.aio.insecure_channel(f"127.0.0.1:{server.port}")
    health = health_pb2_grpc.HealthStub(channel)
    for service in ("", "clusterautoscaler.cloudprovider.v1.externalgrpc.CloudProvider"):
        reply = await health.Check(health_pb2.HealthCheckRequest(service=service))
        assert reply.status == health_pb2.HealthCheckResponse.NOT_SERVING
    for call in (stub.NodeGroups(pb.NodeGroupsRequest()), stub.Refresh(pb.RefreshRequest())):
        with pytest.raises(grpc.aio.AioRpcError) as err:
            await call
        assert err.value.code() == grpc.StatusCode.UNAVAILABLE and "not synced" in err.value.details()
    for kind in (GROUPS, SLOTS, CLAIMS, NODES):
        cache.set_synced(kind)
    for _ in range(100):
        reply = await health.Check(health_pb2.HealthCheckRequest(service=""))
        if reply.status == health_pb2.HealthCheckResponse.SERVING:
            break
    assert reply.status == health_pb2.HealthCheckResponse.SERVING
    assert [g.id for g in (await stub.NodeGroups(pb.NodeGroupsRequest())).nodeGroups] == ["workers"]
    await channel.close()


async def test_a_second_provider_on_a_taken_port_fails_instead_of_sharing_it(provider):
    """gRPC binds with SO_REUSEPORT unless told not to: two operators (a rolling update, a leftover process) told the
    same port would both start and split the autoscaler's connections between them. The second must fail to bind."""
    first, _ = await provider(filled_cache())
    second = ProviderServer(filled_cache(), MemoryWriter(), address=f"127.0.0.1:{first.port}", insecure=True)
    with pytest.raises((OSError, RuntimeError)) as caught:
        await second.start()
    assert str(first.port) in str(caught.value) or "bind" in str(caught.value).lower()
    await second.stop(0)


class FinalizingWriter(MemoryWriter):
    """Deletes as the API server does a claim with the reversal finalizer: marked, not gone."""

    async def delete_claim(self, name, resource_version, timeout):
        await super().delete_claim(name, resource_version, timeout)
        return claim("w1", "ready", name=name, deleting=True)


async def test_a_second_delete_nodes_for_the_same_node_deletes_nothing_and_says_so(provider, caplog):
    """The autoscaler may ask again for a node whose claim is already being deleted (its drain finishing, the
    machine shutting down): the answer is OK, no second delete reaches the API server, and the provider's log
    has one line per ask (tests/k8s count them to prove the autoscaler asked once)."""
    import logging
    cache = pool_cache()
    writer = FinalizingWriter()
    _, stub = await provider(cache, writer)
    ask = pb.NodeGroupDeleteNodesRequest(id="workers", nodes=[pb.ExternalGrpcNode(providerID="homecluster://w1",
                                                                                   name="w1")])
    with caplog.at_level(logging.INFO, logger="homecluster.provider.actions"):
        await stub.NodeGroupDeleteNodes(ask)
        await stub.NodeGroupDeleteNodes(ask)
    assert len(writer.deletes) == 1 and writer.deletes[0].startswith("w1-")
    asked = [r.getMessage() for r in caplog.records if "NodeGroupDeleteNodes asked for slot w1" in r.getMessage()]
    assert len(asked) == 2, asked
    assert f"deleting NodeClaim {writer.deletes[0]}" in asked[0] and "nothing to do" in asked[1], asked
    assert (await stub.NodeGroupTargetSize(pb.NodeGroupTargetSizeRequest(id="workers"))).targetSize == 1
