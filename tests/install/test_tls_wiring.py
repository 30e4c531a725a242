"""The names that must agree across manifests, and a real mTLS handshake with the generated certificates.

A name the API server or the autoscaler dials must be a SAN of the certificate it is shown (the
autoscaler uses ServerName = the host of its cloud-config `address`); the cainjector annotation must
name the webhook's Certificate; the autoscaler's give-up time must not undercut a claim's boot budget.
"""
from __future__ import annotations

import base64
from datetime import timedelta
from pathlib import Path

import grpc
import pytest
import yaml
from cryptography import x509
from grpc_health.v1 import health, health_pb2, health_pb2_grpc

from install_helpers import find
from homecluster.durations import parse_duration
from homecluster.provider.server import TLSFiles

BOOT_FLOOR = timedelta(minutes=12, seconds=10)


def _cloud_config(autoscaler_objects) -> dict:
    (cm,) = find(autoscaler_objects, "ConfigMap", "cluster-autoscaler-cloud-config")
    return yaml.safe_load(cm["data"]["cloud-config"])


def _ca_container(autoscaler_objects) -> dict:
    (dep,) = find(autoscaler_objects, "Deployment", "cluster-autoscaler")
    return dep["spec"]["template"]["spec"]["containers"][0]


def test_webhook_service_name_is_in_its_certificate(default_objects):
    (vwc,) = find(default_objects, "ValidatingWebhookConfiguration")
    (cert,) = find(default_objects, "Certificate", "homecluster-webhook-cert")
    for hook in vwc["webhooks"]:
        svc = hook["clientConfig"]["service"]
        assert find(default_objects, "Service", svc["name"]), f"webhook {hook['name']} calls a missing Service"
        assert f"{svc['name']}.{svc['namespace']}.svc" in cert["spec"]["dnsNames"]
    md = cert["metadata"]
    assert vwc["metadata"]["annotations"]["cert-manager.io/inject-ca-from"] == f"{md['namespace']}/{md['name']}"


def test_autoscaler_dials_a_name_the_provider_certificate_carries(default_objects, autoscaler_objects):
    config = _cloud_config(autoscaler_objects)
    host, _, port = config["address"].rpartition(":")
    (svc,) = find(default_objects, "Service", "homecluster-provider")
    assert host == f"{svc['metadata']['name']}.{svc['metadata']['namespace']}.svc"
    assert int(port) in [p["port"] for p in svc["spec"]["ports"]]
    (cert,) = find(default_objects, "Certificate", "homecluster-provider-server")
    assert host in cert["spec"]["dnsNames"]
    assert parse_duration(config["grpc_timeout"]) >= timedelta(seconds=5)


def test_autoscaler_mounts_the_client_certificate_its_config_names(default_objects, autoscaler_objects):
    config = _cloud_config(autoscaler_objects)
    container = _ca_container(autoscaler_objects)
    (dep,) = find(autoscaler_objects, "Deployment", "cluster-autoscaler")
    volumes = {v["name"]: v for v in dep["spec"]["template"]["spec"]["volumes"]}
    mounts = {m["mountPath"]: volumes[m["name"]] for m in container["volumeMounts"]}
    client_dir = str(Path(config["cert"]).parent)
    assert mounts[client_dir]["secret"]["secretName"] == "homecluster-provider-client"
    assert {Path(config[k]).name for k in ("cert", "key", "cacert")} == {"tls.crt", "tls.key", "ca.crt"}
    (client,) = find(default_objects, "Certificate", "homecluster-provider-client")
    assert client["spec"]["secretName"] == "homecluster-provider-client" and "client auth" in client["spec"]["usages"]
    assert "--cloud-config=/config/cloud-config" in container["args"]
    assert mounts["/config"]["configMap"]["name"] == "cluster-autoscaler-cloud-config"


def test_autoscaler_waits_at_least_one_boot_budget(autoscaler_objects):
    args = dict(a.split("=", 1) for a in _ca_container(autoscaler_objects)["args"])
    assert args["--cloud-provider"] == "externalgrpc"
    assert parse_duration(args["--max-node-provision-time"]) >= BOOT_FLOOR
    assert "--scale-down-delay-after-add" in args


def test_autoscaler_image_is_pinned(autoscaler_objects):
    image = _ca_container(autoscaler_objects)["image"]
    assert image.startswith("registry.k8s.io/autoscaling/cluster-autoscaler:v1.")


# ---------------------------------------------------------------- the generated certificates, for real

def _secret_files(certs: Path, tmp: Path) -> dict[str, dict[str, Path]]:
    """Each Secret of secrets.yaml written out as files, as a pod would see them mounted."""
    out = {}
    for secret in yaml.safe_load_all((certs / "secrets.yaml").read_text()):
        directory = tmp / secret["metadata"]["name"]
        directory.mkdir()
        out[secret["metadata"]["name"]] = {}
        for key, value in secret["data"].items():
            (directory / key).write_bytes(base64.b64decode(value))
            out[secret["metadata"]["name"]][key] = directory / key
    return out


def test_generated_certificates_carry_the_service_names(no_certmanager, tmp_path):
    certs, _ = no_certmanager
    files = _secret_files(certs, tmp_path)
    for name, service in (("homecluster-webhook-cert", "homecluster-webhook-service"),
                          ("homecluster-provider-server", "homecluster-provider")):
        cert = x509.load_pem_x509_certificate(files[name]["tls.crt"].read_bytes())
        sans = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value.get_values_for_type(
            x509.DNSName)
        assert f"{service}.homecluster-system.svc" in sans
    assert oct(certs.joinpath("secrets.yaml").stat().st_mode & 0o777) == "0o600", "private keys readable by others"


async def _health(port: int, host: str, root: bytes, key: bytes | None, chain: bytes | None) -> int:
    creds = grpc.ssl_channel_credentials(root_certificates=root, private_key=key, certificate_chain=chain)
    options = [("grpc.ssl_target_name_override", host)]  # what CA does: ServerName = the address's host
    async with grpc.aio.secure_channel(f"127.0.0.1:{port}", creds, options=options) as channel:
        stub = health_pb2_grpc.HealthStub(channel)
        reply = await stub.Check(health_pb2.HealthCheckRequest(), timeout=5)
        return reply.status


@pytest.fixture
async def provider_tls_server(no_certmanager, tmp_path):
    """A gRPC server with the provider's own TLS code (TLSFiles) and the generated server Secret."""
    certs, _ = no_certmanager
    files = _secret_files(certs, tmp_path)
    server_files = files["homecluster-provider-server"]
    creds = TLSFiles(server_files["tls.crt"], server_files["tls.key"], server_files["ca.crt"]).credentials()
    server = grpc.aio.server()
    servicer = health.aio.HealthServicer()
    health_pb2_grpc.add_HealthServicer_to_server(servicer, server)
    port = server.add_secure_port("127.0.0.1:0", creds)
    await server.start()
    await servicer.set("", health_pb2.HealthCheckResponse.SERVING)
    try:
        yield port, files
    finally:
        await server.stop(None)


async def test_autoscaler_client_certificate_completes_mtls(provider_tls_server, autoscaler_objects):
    port, files = provider_tls_server
    host = _cloud_config(autoscaler_objects)["address"].rpartition(":")[0]
    client = files["homecluster-provider-client"]
    status = await _health(port, host, client["ca.crt"].read_bytes(), client["tls.key"].read_bytes(),
                           client["tls.crt"].read_bytes())
    assert status == health_pb2.HealthCheckResponse.SERVING


async def test_mtls_refuses_a_client_without_certificate_and_a_wrong_name(provider_tls_server, autoscaler_objects):
    port, files = provider_tls_server
    host = _cloud_config(autoscaler_objects)["address"].rpartition(":")[0]
    client = files["homecluster-provider-client"]
    ca, key, chain = client["ca.crt"].read_bytes(), client["tls.key"].read_bytes(), client["tls.crt"].read_bytes()
    with pytest.raises(grpc.aio.AioRpcError):
        await _health(port, host, ca, None, None)
    with pytest.raises(grpc.aio.AioRpcError):
        await _health(port, "homecluster-provider.elsewhere.svc", ca, key, chain)
