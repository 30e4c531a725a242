"""mTLS as shipped, under the real autoscaler (newest version found), and the provider's certificate rotated.

The operator serves the provider with client certificates required (--provider-cert/-key/-client-ca, not the
lab's usual --provider-insecure); the autoscaler runs with config/autoscaler's cloud-config: `cert`, `key`,
`cacert`, and the address by the Service's name `homecluster-provider.<namespace>.svc`, the name in the
provider's certificate, which the autoscaler checks (homecluster_lab.k8s.provider_tls: that name resolves
to loopback in the autoscaler's own mount namespace only).

1. A scale-up over mTLS: one pod, one NodeClaim, the pod Running. On the same port, plaintext and a client
   certificate from another CA are refused.
2. The provider's serving certificate rotated while the autoscaler runs (new key and serial, same CA, files
   swapped as a Secret volume swaps them): the provider serves the new certificate to the next connection
   without a restart, and the autoscaler keeps working: the next scale-up buys exactly one machine.
3. The operator restarted (a rolling update): the autoscaler's next connection shakes hands with the rotated
   certificate, and the scale-up after it works too.
"""
from __future__ import annotations

import grpc
import pytest
import pytest_asyncio
from cryptography import x509
from k8s_autoscaler import NS, Pool, claims_created, clocks, newest_lab, now, story, until_running, workload
from support.waits import until

from homecluster import tls
from homecluster.provider.proto import externalgrpc_pb2 as pb
from homecluster.provider.proto import externalgrpc_pb2_grpc as pb_grpc
from homecluster_lab.k8s.autoscaler import Autoscaler

pytestmark = pytest.mark.asyncio(loop_scope="module")
BOUND = 400.0  # the waits end when the thing happens; generous for 2 loaded cores
DEPLOYMENTS = f"/apis/apps/v1/namespaces/{NS}/deployments"


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def pool(tmp_path_factory: pytest.TempPathFactory):
    async with newest_lab(tmp_path_factory, "ca-mtls-", slots=3, provider_tls=True) as (lab, build):
        assert lab.provider_tls is not None
        async with Autoscaler.for_lab(lab, build, clocks=clocks()) as ca:
            assert "cacert:" in (ca.workdir / "cloud-config").read_text()
            yield Pool(lab, ca, build)


def _host_port(pool: Pool) -> tuple[str, int]:
    host, port = pool.lab.provider_address.rsplit(":", 1)
    return host, int(port)


def _serial(pem_or_der: bytes) -> int:
    load = x509.load_pem_x509_certificate if pem_or_der.startswith(b"-----") else x509.load_der_x509_certificate
    return load(pem_or_der).serial_number


async def _scale_up_of_one(pool: Pool, app: str) -> str:
    """A Deployment of one pod that needs a machine: exactly one NodeClaim bought, the pod Running; its node."""
    since = now()
    await pool.lab.api.kube.create(DEPLOYMENTS, workload(app, 1))
    placed = await until_running(pool.lab, pool.ca, {app: 1}, f"the pod of {app} Running on a machine it bought",
                                 BOUND, since=since)
    assert len(claims_created(pool.lab, since)) == 1, story(pool.lab, pool.ca)
    return placed[0]["spec"]["nodeName"]


async def _node_groups(channel: grpc.aio.Channel) -> list[str]:
    answer = await pb_grpc.CloudProviderStub(channel).NodeGroups(pb.NodeGroupsRequest(), timeout=10)
    return [g.id for g in answer.nodeGroups]


async def test_the_autoscaler_scales_up_over_mtls_and_others_are_refused(pool: Pool, record_property) -> None:
    record_property("cluster_autoscaler", pool.build.release)
    await _scale_up_of_one(pool, "mtls-1")
    address, files = pool.lab.provider_address, pool.lab.provider_tls
    async with grpc.aio.secure_channel(address, files.channel_credentials(), options=files.channel_options()) as ok:
        assert await _node_groups(ok) == [pool.lab.config.group]
    async with grpc.aio.insecure_channel(address) as plaintext:
        with pytest.raises(grpc.aio.AioRpcError) as refused:
            await _node_groups(plaintext)
        assert refused.value.code() == grpc.StatusCode.UNAVAILABLE, refused.value
    stranger_ca = tls.make_ca("not-the-provider-client-ca")
    stranger = tls.issue(stranger_ca, "cluster-autoscaler", server=False, client=True)
    creds = grpc.ssl_channel_credentials(root_certificates=files.ca.cert_pem, private_key=stranger.key_pem,
                                         certificate_chain=stranger.cert_pem)
    async with grpc.aio.secure_channel(address, creds, options=files.channel_options()) as wrong:
        with pytest.raises(grpc.aio.AioRpcError) as refused:
            await _node_groups(wrong)
        assert refused.value.code() == grpc.StatusCode.UNAVAILABLE, refused.value


async def test_the_rotated_certificate_is_served_and_the_autoscaler_keeps_working(pool: Pool,
                                                                                  record_property) -> None:
    record_property("cluster_autoscaler", pool.build.release)
    files, (host, port) = pool.lab.provider_tls, _host_port(pool)
    old = _serial(files.served_certificate(host, port))
    assert old == _serial(files.server_cert.read_bytes())
    new = _serial(files.rotate_server())
    assert new != old

    async def served():
        return _serial(files.served_certificate(host, port)) == new
    await until(served, "the provider to serve the rotated certificate to a new connection", 60)
    await _scale_up_of_one(pool, "mtls-2")
    assert pool.ca.exited() is None


async def test_after_a_restart_the_autoscaler_shakes_hands_with_the_rotated_certificate(pool: Pool,
                                                                                        record_property) -> None:
    record_property("cluster_autoscaler", pool.build.release)
    files, (host, port) = pool.lab.provider_tls, _host_port(pool)
    rotated = _serial(files.server_cert.read_bytes())
    await pool.lab.restart_operator()
    assert _serial(files.served_certificate(host, port)) == rotated
    await _scale_up_of_one(pool, "mtls-3")
    failed = [line for line in pool.ca.log_text().splitlines() if "handshake failed" in line]
    assert not failed, f"the autoscaler's TLS handshakes failed: {failed[:3]}\n{story(pool.lab, pool.ca)}"
