"""mTLS: the provider refuses clients without a certificate or with one from another CA."""
from __future__ import annotations

import grpc
import pytest
from provider_objects import MemoryWriter, filled_cache, group, slot

from homecluster import tls
from homecluster.provider.proto import externalgrpc_pb2 as pb
from homecluster.provider.proto import externalgrpc_pb2_grpc as pb_grpc
from homecluster.provider.server import ProviderServer, TLSFiles


@pytest.fixture
async def mtls_server(tmp_path):
    ca = tls.make_ca("provider-ca")
    server_cert, server_key = tls.issue(ca, "homecluster-provider", ["127.0.0.1", "localhost"]).write(tmp_path, "server")
    client_ca = tmp_path / "client-ca.crt"
    client_ca.write_bytes(ca.cert_pem)
    server = ProviderServer(filled_cache([group()], [slot("w1")]), MemoryWriter(), address="127.0.0.1:0",
                            tls=TLSFiles(server_cert, server_key, client_ca))
    await server.start()
    yield server, ca
    await server.stop(0)


async def _node_groups(port: int, ca_pem: bytes, client: tls.KeyPair | None):
    creds = grpc.ssl_channel_credentials(root_certificates=ca_pem,
                                         private_key=client.key_pem if client else None,
                                         certificate_chain=client.cert_pem if client else None)
    async with grpc.aio.secure_channel(f"127.0.0.1:{port}", creds) as channel:
        return await pb_grpc.CloudProviderStub(channel).NodeGroups(pb.NodeGroupsRequest(), timeout=5)


async def test_client_with_a_cert_from_the_client_ca_is_served(mtls_server):
    server, ca = mtls_server
    client = tls.issue(ca, "cluster-autoscaler", server=False, client=True)
    reply = await _node_groups(server.port, ca.cert_pem, client)
    assert [g.id for g in reply.nodeGroups] == ["workers"]


async def test_client_without_cert_is_refused(mtls_server):
    server, ca = mtls_server
    with pytest.raises(grpc.aio.AioRpcError) as err:
        await _node_groups(server.port, ca.cert_pem, None)
    assert err.value.code() == grpc.StatusCode.UNAVAILABLE


async def test_client_with_cert_from_another_ca_is_refused(mtls_server):
    server, ca = mtls_server
    stranger = tls.issue(tls.make_ca("someone-else"), "cluster-autoscaler", server=False, client=True)
    with pytest.raises(grpc.aio.AioRpcError) as err:
        await _node_groups(server.port, ca.cert_pem, stranger)
    assert err.value.code() == grpc.StatusCode.UNAVAILABLE


def test_plaintext_must_be_asked_for():
    with pytest.raises(ValueError, match="insecure=True"):
        ProviderServer(filled_cache(), MemoryWriter(), address="127.0.0.1:0")
