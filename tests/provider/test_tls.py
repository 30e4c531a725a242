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


# ---- renewal: the files change under a running server (issue 15, item 3) --------------------------

def _replace(path, data: bytes) -> None:
    """Atomic, as a Secret volume swaps its files (a new inode under the same name)."""
    tmp = path.with_name(path.name + ".new")
    tmp.write_bytes(data)
    tmp.replace(path)


async def _served(port: int, ca: tls.KeyPair, client: tls.KeyPair) -> bool:
    try:
        await _node_groups(port, ca.cert_pem, client)
        return True
    except grpc.aio.AioRpcError as err:
        assert err.code() == grpc.StatusCode.UNAVAILABLE, err
        return False


async def test_a_rotated_chain_is_served_to_new_connections_without_a_restart(tmp_path):
    old_ca, new_ca = tls.make_ca("provider-ca-1"), tls.make_ca("provider-ca-2")
    cert, key = tls.issue(old_ca, "homecluster-provider", ["127.0.0.1"]).write(tmp_path, "server")
    client_ca = tmp_path / "client-ca.crt"
    client_ca.write_bytes(old_ca.cert_pem)
    server = ProviderServer(filled_cache([group()], [slot("w1")]), MemoryWriter(), address="127.0.0.1:0",
                            tls=TLSFiles(cert, key, client_ca))
    await server.start()
    try:
        old_client = tls.issue(old_ca, "cluster-autoscaler", server=False, client=True)
        new_client = tls.issue(new_ca, "cluster-autoscaler", server=False, client=True)
        assert await _served(server.port, old_ca, old_client)
        assert not await _served(server.port, new_ca, new_client)  # trusts only the new chain: not yet

        renewed = tls.issue(new_ca, "homecluster-provider", ["127.0.0.1"])
        _replace(cert, renewed.cert_pem)  # half a rotation: the new certificate next to the old key
        assert await _served(server.port, old_ca, old_client), "a mismatched pair must not be served"
        _replace(key, renewed.key_pem)
        _replace(client_ca, new_ca.cert_pem)

        assert await _served(server.port, new_ca, new_client)  # the new chain, both ways
        assert not await _served(server.port, old_ca, old_client)  # the old CA's client is refused now

        again = tls.issue(new_ca, "homecluster-provider", ["127.0.0.1"])  # a renewal written in place
        key.write_bytes(again.key_pem)
        cert.write_bytes(again.cert_pem)
        reply = await _node_groups(server.port, new_ca.cert_pem, new_client)
        assert [g.id for g in reply.nodeGroups] == ["workers"]
    finally:
        await server.stop(0)
