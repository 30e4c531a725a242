"""The lab's provider over mTLS (homecluster_lab.k8s.provider_tls): the operator's flags, the autoscaler's
cloud-config and mount namespace, and a rotation a real provider serves (tests/k8s/test_k8s_autoscaler_mtls.py
runs it under the real autoscaler)."""
from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from cryptography import x509

from homecluster.kube.cache import Cache
from homecluster.provider.server import ProviderServer, TLSFiles
from homecluster_lab.k8s.provider_tls import ProviderTLS
from homecluster_lab.operator_proc import OperatorOptions, command


def _options(**kw) -> OperatorOptions:
    return OperatorOptions(kubeconfig=Path("/k"), namespace="homecluster-system", provider_address="127.0.0.1:1", **kw)


def test_the_operator_serves_mtls_only_when_given_the_files(tmp_path):
    assert "--provider-insecure" in command(_options())
    files = ProviderTLS.create(tmp_path, "homecluster-system")
    argv = command(_options(provider_tls=files.operator_args()))
    assert "--provider-insecure" not in argv
    at = argv.index("--provider-cert")
    assert argv[at:at + 6] == ["--provider-cert", str(files.server_cert), "--provider-key", str(files.server_key),
                               "--provider-client-ca", str(files.client_ca)]
    TLSFiles(files.server_cert, files.server_key, files.client_ca).read()  # a matching pair that parses


def test_the_autoscaler_gets_the_shipped_cloud_config_and_its_own_hosts(tmp_path):
    files = ProviderTLS.create(tmp_path, "homecluster-system")
    config = yaml.safe_load(files.cloud_config(4242))
    assert config["address"] == "homecluster-provider.homecluster-system.svc:4242"
    assert {k: Path(config[k]).name for k in ("cert", "key", "cacert")} == \
        {"cert": "tls.crt", "key": "tls.key", "cacert": "ca.crt"}  # the Secret homecluster-provider-client's
    shipped = yaml.safe_load((Path(__file__).resolve().parents[2] / "docs" / "autoscaler.md").read_text()
                             .split("## The cloud-config", 1)[1].split("```yaml", 1)[1].split("```", 1)[0])
    assert set(config) == set(shipped)
    argv = files.wrap(["/bin/ca", "--v=4"])
    assert argv[0] == "unshare" and argv[-2:] == ["/bin/ca", "--v=4"] and "--mount" in argv
    hosts = Path(argv[-3]).read_text()
    assert "127.0.0.1 localhost homecluster-provider.homecluster-system.svc" in hosts


@pytest.mark.asyncio
async def test_a_rotated_serving_certificate_reaches_the_next_connection(tmp_path):
    files = ProviderTLS.create(tmp_path, "homecluster-system")
    # only handshakes here: no RPC reaches the cache or the writer
    server = ProviderServer(Cache(), None, address="127.0.0.1:0", tls=TLSFiles(*files.operator_args()))
    await server.start()
    try:
        serial = x509.load_der_x509_certificate(files.served_certificate("127.0.0.1", server.port)).serial_number
        assert serial == x509.load_pem_x509_certificate(files.server_cert.read_bytes()).serial_number
        new = x509.load_pem_x509_certificate(files.rotate_server())
        assert new.serial_number != serial
        served = x509.load_der_x509_certificate(files.served_certificate("127.0.0.1", server.port))
        assert served.serial_number == new.serial_number
        names = served.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
        assert names.get_values_for_type(x509.DNSName) == ["homecluster-provider.homecluster-system.svc"]
    finally:
        await server.stop(0)
