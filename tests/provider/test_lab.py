"""The provider against the lab API server: watch_into feeds the cache, the operator's ClaimWriter writes claims.

Skipped while the lab API server (homecluster_lab.apiserver.LabAPIServer) is not in the tree.
"""
from __future__ import annotations

import asyncio
from collections import Counter
from pathlib import Path

import grpc
import pytest
import yaml
from grpc_health.v1 import health_pb2, health_pb2_grpc
from provider_objects import group

from homecluster import API_GROUP, API_VERSION
from homecluster.kube.cache import Cache
from homecluster.provider.proto import externalgrpc_pb2 as pb
from homecluster.provider.proto import externalgrpc_pb2_grpc as pb_grpc
from homecluster.provider.server import ProviderServer
from homecluster_lab.provider.watch import client_from_kubeconfig, watch_into
from homecluster_lab.provider.writer import claim_writer

pytestmark = pytest.mark.lab
CRD_DIR = Path(__file__).resolve().parents[2] / "config" / "crd"


@pytest.fixture
async def api(request):
    """The shared `lab_api` fixture when it exists, else a LabAPIServer started here."""
    try:
        yield request.getfixturevalue("lab_api")
        return
    except pytest.FixtureLookupError:
        pass
    try:
        from homecluster_lab.apiserver import LabAPIServer
    except ImportError:
        pytest.skip("the lab API server (homecluster_lab.apiserver.LabAPIServer) is not in the tree yet")
    async with LabAPIServer() as server:
        yield server


async def _ensure_crds(api_client) -> None:
    from kubernetes_asyncio import client

    ext = client.ApiextensionsV1Api(api_client)
    for path in sorted(CRD_DIR.glob(f"{API_GROUP}_*.yaml")):
        try:
            await ext.create_custom_resource_definition(yaml.safe_load(path.read_text()))
        except client.ApiException as exc:
            if exc.status != 409:
                raise


async def test_fifty_concurrent_increases_against_the_lab_api_server(api):
    from kubernetes_asyncio import client, config

    api_client = await config.new_client_from_config(config_file=str(api.kubeconfig_path))
    provider_client = client_from_kubeconfig(str(api.kubeconfig_path))
    cache = Cache()
    watcher = None
    server = None
    try:
        await _ensure_crds(api_client)
        custom = client.CustomObjectsApi(api_client)
        await custom.create_cluster_custom_object(API_GROUP, API_VERSION, "groups", {
            "apiVersion": f"{API_GROUP}/{API_VERSION}", "kind": "Group", "metadata": {"name": "workers"},
            "spec": group(max_size=20)["spec"]})
        for i in range(20):
            await custom.create_cluster_custom_object(API_GROUP, API_VERSION, "nodes", {
                "apiVersion": f"{API_GROUP}/{API_VERSION}", "kind": "Node", "metadata": {"name": f"w{i:02d}"},
                "spec": {"groupRef": "workers", "power": {"method": "wol", "wol": {"macAddress": "52:54:00:00:00:01"},
                                                          "ssh": {"host": "127.0.0.1", "credentialsSecretRef": {"name": "ssh-key"}}}}})
        watcher = asyncio.create_task(watch_into(cache, client=provider_client))
        server = ProviderServer(cache, claim_writer(provider_client), address="127.0.0.1:0", insecure=True)
        await server.start()
        async with grpc.aio.insecure_channel(f"127.0.0.1:{server.port}") as channel:
            health = health_pb2_grpc.HealthStub(channel)
            for _ in range(200):
                if (await health.Check(health_pb2.HealthCheckRequest())).status == health_pb2.HealthCheckResponse.SERVING:
                    break
                await asyncio.sleep(0.05)
            else:
                raise AssertionError(f"the cache never synced: {cache.synced_kinds()}")
            stub = pb_grpc.CloudProviderStub(channel)
            results = await asyncio.gather(*(stub.NodeGroupIncreaseSize(
                pb.NodeGroupIncreaseSizeRequest(id="workers", delta=1), timeout=5) for _ in range(50)),
                return_exceptions=True)
            refused = [r for r in results if isinstance(r, grpc.aio.AioRpcError)]
            assert len(refused) == 30 and all(r.code() == grpc.StatusCode.FAILED_PRECONDITION for r in refused), refused
            listed = (await custom.list_cluster_custom_object(API_GROUP, API_VERSION, "nodeclaims"))["items"]
            assert len(listed) == 20
            per_slot = Counter(c["spec"]["slotRef"] for c in listed)
            assert set(per_slot.values()) == {1} and len(per_slot) == 20
            assert all("attempt" not in (c.get("status") or {}) for c in listed)
            target = await stub.NodeGroupTargetSize(pb.NodeGroupTargetSizeRequest(id="workers"))
            assert target.targetSize == 20
            # cancel the newest pending claim; the watch (or the write) removes it from the cache
            await stub.NodeGroupDecreaseTargetSize(pb.NodeGroupDecreaseTargetSizeRequest(id="workers", delta=-1))
            target = await stub.NodeGroupTargetSize(pb.NodeGroupTargetSizeRequest(id="workers"))
            assert target.targetSize == 19
    finally:
        if server is not None:
            await server.stop(0)
        if watcher is not None:
            watcher.cancel()
            await asyncio.gather(watcher, return_exceptions=True)
        await api_client.close()
        await provider_client.close()
