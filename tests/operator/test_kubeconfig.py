"""The product's kubeconfig loader: what users have connects, what it does not run is refused clearly.

The connections are proven against a real TLS server (aiohttp) that demands the client certificate
the kubeconfig carries and checks the bearer token: the same KubeClient the operator and the CLI use.
"""
from __future__ import annotations

import base64
import ssl

import aiohttp
import pytest
import yaml
from aiohttp import web

from homecluster import tls
from homecluster.kube import client as kube
from homecluster.kube.kubeconfig import KubeconfigError, from_kubeconfig, in_cluster, load


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def _kubeconfig(path, cluster: dict, user: dict, *, name: str = "c", current: str | None = "c") -> None:
    doc = {"apiVersion": "v1", "kind": "Config",
           "clusters": [{"name": name, "cluster": cluster}], "users": [{"name": name, "user": user}],
           "contexts": [{"name": name, "context": {"cluster": name, "user": name}}]}
    if current:
        doc["current-context"] = current
    path.write_text(yaml.safe_dump(doc))


@pytest.fixture
async def mtls_server(tmp_path, unused_tcp_port):
    """An https server that answers GET /api/v1/nodes/x only to the client certificate of our CA."""
    ca = tls.make_ca("kubeconfig-test-ca")
    server_cert, server_key = tls.issue(ca, "apiserver", ["127.0.0.1"]).write(tmp_path / "server", "server")
    client = tls.issue(ca, "alice", server=False, client=True)
    seen: list[str] = []

    async def node(request: web.Request) -> web.Response:
        seen.append(request.headers.get("Authorization", ""))
        return web.json_response({"kind": "Node", "metadata": {"name": request.match_info["name"]}})

    app = web.Application()
    app.router.add_get("/api/v1/nodes/{name}", node)
    ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH, cadata=ca.cert_pem.decode())
    ctx.verify_mode = ssl.CERT_REQUIRED
    ctx.load_cert_chain(server_cert, server_key)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", unused_tcp_port, ssl_context=ctx)
    await site.start()
    yield f"https://127.0.0.1:{unused_tcp_port}", ca, client, seen
    await runner.cleanup()


async def _get_node(connection) -> dict:
    api = kube.KubeClient(connection)
    try:
        return await api.get(kube.NODES, "x")
    finally:
        await api.close()


async def test_inline_client_certificate_and_ca_data_connect(mtls_server, tmp_path):
    url, ca, client, seen = mtls_server
    path = tmp_path / "config"
    _kubeconfig(path, {"server": url, "certificate-authority-data": _b64(ca.cert_pem)},
                {"client-certificate-data": _b64(client.cert_pem), "client-key-data": _b64(client.key_pem)})
    connection = load(str(path))
    assert (await _get_node(connection))["metadata"]["name"] == "x"
    assert seen == [""], "no token was configured, none is sent"
    assert client.key_pem.decode() not in repr(connection), "the key never reaches a log line"


async def test_files_relative_to_the_kubeconfig_and_a_token_connect(mtls_server, tmp_path):
    url, ca, client, seen = mtls_server
    folder = tmp_path / "kube"
    client.write(folder / "pki", "alice")
    (folder / "pki" / "ca.crt").write_bytes(ca.cert_pem)
    _kubeconfig(folder / "config", {"server": url, "certificate-authority": "pki/ca.crt"},
                {"client-certificate": "pki/alice.crt", "client-key": "pki/alice.key", "token": "t0ken"})
    assert (await _get_node(load(str(folder / "config"))))["metadata"]["name"] == "x"
    assert seen == ["Bearer t0ken"]


async def test_a_wrong_ca_is_refused_unless_tls_verification_is_skipped(mtls_server, tmp_path):
    url, _, client, _ = mtls_server
    user = {"client-certificate-data": _b64(client.cert_pem), "client-key-data": _b64(client.key_pem)}
    path = tmp_path / "config"
    _kubeconfig(path, {"server": url, "certificate-authority-data": _b64(tls.make_ca("other").cert_pem)}, user)
    with pytest.raises(aiohttp.ClientConnectorCertificateError, match="certificate verify failed"):
        await _get_node(load(str(path)))
    _kubeconfig(path, {"server": url, "insecure-skip-tls-verify": True}, user)
    assert (await _get_node(load(str(path))))["metadata"]["name"] == "x"


def test_merged_files_first_wins_and_a_context_can_be_chosen(tmp_path, monkeypatch):
    first, second = tmp_path / "a", tmp_path / "b"
    _kubeconfig(first, {"server": "https://first"}, {"token": "one"}, name="a", current="a")
    _kubeconfig(second, {"server": "https://second"}, {"token": "two"}, name="b", current="b")
    monkeypatch.setenv("KUBECONFIG", f"{first}:{second}")
    assert load().server == "https://first"
    assert load(context="b").current_token() == "two"
    with pytest.raises(KubeconfigError, match='no context "c" \\(known: a, b\\)'):
        load(context="c")


@pytest.mark.parametrize("user, what", [
    ({"exec": {"command": "aws", "apiVersion": "client.authentication.k8s.io/v1"}}, "a credential plugin"),
    ({"auth-provider": {"name": "oidc"}}, "an auth-provider"),
    ({"username": "admin", "password": "secret"}, "basic auth"),
])
def test_what_is_not_supported_is_named_with_the_fix(tmp_path, user, what):
    path = tmp_path / "config"
    _kubeconfig(path, {"server": "https://x"}, user)
    with pytest.raises(KubeconfigError) as info:
        from_kubeconfig([path])
    text = str(info.value)
    assert str(path) in text and 'user "c"' in text and what in text and "kubectl create token" in text
    assert "secret" not in text


def test_no_current_context_and_bad_data_name_the_fix(tmp_path):
    path = tmp_path / "config"
    _kubeconfig(path, {"server": "https://x"}, {}, current=None)
    with pytest.raises(KubeconfigError, match="no current-context: pass --context"):
        from_kubeconfig([path])
    _kubeconfig(path, {"server": "https://x", "certificate-authority-data": "not base64!"}, {})
    with pytest.raises(KubeconfigError, match='cluster "c": certificate-authority-data is not base64'):
        from_kubeconfig([path])


def test_in_cluster_reads_the_service_account_and_rereads_its_token(tmp_path):
    (tmp_path / "token").write_text("sa-token\n")
    (tmp_path / "ca.crt").write_text("pem")
    c = in_cluster({"KUBERNETES_SERVICE_HOST": "fd00::1", "KUBERNETES_SERVICE_PORT": "6443"}, str(tmp_path))
    assert c.server == "https://[fd00::1]:6443" and c.ca_path == f"{tmp_path}/ca.crt"
    assert c.current_token() == "sa-token" and c.token_file is not None
