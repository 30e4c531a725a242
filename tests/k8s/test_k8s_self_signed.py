"""Self-signed mode (`homecluster run --self-signed-certs`) against the real kube-apiserver.

The operator runs as its ServiceAccount (a TokenRequest token) with the RBAC of config/rbac and of
config/components/self-signed-certs, applied as a user applies them, and starts with no certificate
Secret present. It must create the CA and the three leaves, write the files its servers read and set
the caBundle of its own webhooks in config/webhook's ValidatingWebhookConfiguration. The proof that the
chain is right is the API server's: it calls the webhook through the Service (by the Service's DNS name,
verifying the serving certificate against the caBundle the operator patched), and a refusal from our
webhook -- not "failed calling webhook ... x509" -- comes back. The provider is reached over mTLS with the
client certificate from its Secret, by the Service name the autoscaler dials.

Then the certificates rotate without a restart: short lifetimes (leaves 60 s, CA 150 s) make a leaf due
after ~40 s and the CA after ~100 s; the test waits for the new certificate to be served and the
caBundle to follow, and the API server's call to keep working.

How the API server reaches a Service with no pod network here: kube-apiserver runs with
--enable-aggregator-routing (it then dials a webhook Service's endpoint instead of its ClusterIP), and
the Service's Endpoints name the webhook's port on this machine's own address (the Endpoints API refuses
loopback addresses). That stands in for kube-proxy and a pod; the TLS name checked is still the Service's.
"""
from __future__ import annotations

import asyncio
import base64
import contextlib
import os
import socket
import ssl
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
import pytest_asyncio
import yaml
from k8s_objects import REPO, apply_rbac, install_crds, kustomize, path_of, sample
from k8s_rest import Rest, watch_events
from support.waits import until

from homecluster_lab.config import free_port
from homecluster_lab.k8s import pki
from homecluster_lab.k8s.controlplane import RealControlPlane
from homecluster_lab.sessionproc import stop_session, with_pdeathsig

pytestmark = pytest.mark.asyncio(loop_scope="module")
NAMESPACE = "homecluster-system"
ACCOUNT = "homecluster-controller"
VWC = "homecluster-validating-webhook-configuration"
VWC_PATH = "/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations"
SECRETS = f"/api/v1/namespaces/{NAMESPACE}/secrets"
WEBHOOK_DNS = f"homecluster-webhook-service.{NAMESPACE}.svc"
PROVIDER_DNS = f"homecluster-provider.{NAMESPACE}.svc"
OUR_WEBHOOKS = ("nodeclaim-v2alpha1.kb.io", "group-v2alpha1.kb.io", "node-v2alpha1.kb.io",
                "pods-eviction.homecluster.dev")
RBAC_PATHS = {
    "Role": f"/apis/rbac.authorization.k8s.io/v1/namespaces/{NAMESPACE}/roles",
    "RoleBinding": f"/apis/rbac.authorization.k8s.io/v1/namespaces/{NAMESPACE}/rolebindings",
    "ClusterRole": "/apis/rbac.authorization.k8s.io/v1/clusterroles",
    "ClusterRoleBinding": "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings",
}


class RoutedControlPlane(RealControlPlane):
    """The real control plane, its API server dialing a webhook Service's endpoints (module docstring)."""

    async def _run(self, name, argv_for, ready_url, ssl_context, *own_ports):
        if name == "kube-apiserver":
            plain = argv_for
            argv_for = lambda *a: plain(*a) + ["--enable-aggregator-routing=true"]  # noqa: E731
        await super()._run(name, argv_for, ready_url, ssl_context, *own_ports)


def host_address() -> str:
    """This machine's own non-loopback IPv4 address (the route's source; no packet is sent)."""
    address = ""
    for target in ("198.51.100.1", "10.255.255.254"):  # documentation / private: routed, never sent to
        with contextlib.closing(socket.socket(socket.AF_INET, socket.SOCK_DGRAM)) as s:
            try:
                s.connect((target, 9))
                address = s.getsockname()[0]
                break
            except OSError:
                continue
    if not address or address.startswith("127."):
        pytest.skip("this machine has no non-loopback IPv4 address for the webhook's Endpoints")
    return address


def secret_pem(secret: dict, key: str) -> bytes:
    return base64.b64decode(secret["data"][key])


async def get(rest: Rest, path: str) -> dict:
    status, body = await rest.request("GET", path)
    assert status == 200, body
    return body


def log_tail(log: Path) -> Callable[[], str]:
    """A wait's detail (support.waits.until): the operator's log tail when the wait gives up."""
    return lambda: "operator log:\n" + "\n".join(log.read_text(errors="replace").splitlines()[-30:])


async def served_certificate(address: str, ca_pem: bytes, name: str) -> bytes | None:
    """The DER certificate served at address, verified against ca_pem for `name`; None when it does not verify."""
    context = ssl.create_default_context(cadata=ca_pem.decode())
    host, port = address.rsplit(":", 1)
    try:
        _, writer = await asyncio.wait_for(asyncio.open_connection(host, int(port), ssl=context,
                                                                   server_hostname=name), 5)
    except (ssl.SSLError, OSError, asyncio.TimeoutError):
        return None
    der = writer.get_extra_info("ssl_object").getpeercert(binary_form=True)
    writer.close()
    with contextlib.suppress(Exception):
        await writer.wait_closed()
    return der


def der(pem: bytes) -> bytes:
    return ssl.PEM_cert_to_DER_cert(pem.decode())


async def provider_serving(address: str, client: dict) -> bool:
    """A health Check over mTLS with the autoscaler's Secret, by the Service name the autoscaler dials."""
    import grpc
    from grpc_health.v1 import health_pb2, health_pb2_grpc

    credentials = grpc.ssl_channel_credentials(root_certificates=secret_pem(client, "ca.crt"),
                                               private_key=secret_pem(client, "tls.key"),
                                               certificate_chain=secret_pem(client, "tls.crt"))
    async with grpc.aio.secure_channel(address, credentials,
                                       options=[("grpc.ssl_target_name_override", PROVIDER_DNS)]) as channel:
        try:
            answer = await health_pb2_grpc.HealthStub(channel).Check(health_pb2.HealthCheckRequest(service=""),
                                                                     timeout=3.0)
        except grpc.aio.AioRpcError:
            return False
    return answer.status == health_pb2.HealthCheckResponse.SERVING


async def _prepare(rest: Rest, host: str, webhook_port: int) -> None:
    await install_crds(rest)
    status, body = await rest.request("POST", "/api/v1/namespaces", {
        "apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE}})
    assert status in (201, 409), body
    await apply_rbac(rest)
    for obj in yaml.safe_load_all((REPO / "config/components/self-signed-certs/rbac.yaml").read_text()):
        status, body = await rest.request("POST", RBAC_PATHS[obj["kind"]], obj)
        assert status == 201, body
    # before the webhooks are registered (they refuse while nobody answers)
    for name in ("infra_v2alpha1_group.yaml", "infra_v2alpha1_node_ipmi.yaml"):
        obj = sample(name)
        status, body = await rest.request("POST", path_of(obj), obj)
        assert status == 201, body
    for obj in kustomize(REPO / "config" / "webhook"):
        if obj["kind"] == "Service":
            obj["spec"].pop("selector")  # no pod here: the Endpoints below stand in for one
            status, body = await rest.request("POST", f"/api/v1/namespaces/{NAMESPACE}/services", obj)
        else:
            assert not any("caBundle" in w["clientConfig"] for w in obj["webhooks"])
            status, body = await rest.request("POST", VWC_PATH, obj)
        assert status == 201, body
    status, body = await rest.request("POST", f"/api/v1/namespaces/{NAMESPACE}/endpoints", {
        "apiVersion": "v1", "kind": "Endpoints", "metadata": {"name": "homecluster-webhook-service"},
        "subsets": [{"addresses": [{"ip": host}], "ports": [{"name": "https", "port": webhook_port}]}]})
    assert status == 201, body
    # someone else's webhook configuration, which the operator may not touch
    status, body = await rest.request("POST", VWC_PATH, {
        "apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingWebhookConfiguration",
        "metadata": {"name": "someone-else"}, "webhooks": []})
    assert status == 201, body


class Operator:
    def __init__(self, proc: asyncio.subprocess.Process, log: Path, webhook: str, provider: str, files: Path):
        self.proc, self.log, self.webhook, self.provider, self.files = proc, log, webhook, provider, files


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def routed(tmp_path_factory: pytest.TempPathFactory):
    async with RoutedControlPlane(tmp_path_factory.mktemp("k8s")) as cp:
        rest = Rest(cp.url, ssl_context=cp.ssl_context())
        yield cp, rest
        await rest.close()


async def _token(rest: Rest) -> str:
    status, body = await rest.request("POST", f"/api/v1/namespaces/{NAMESPACE}/serviceaccounts/{ACCOUNT}/token", {
        "apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": {"expirationSeconds": 3600}})
    assert status == 201, body
    return body["status"]["token"]


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def account(routed) -> Rest:
    """REST as the operator's ServiceAccount (its real RBAC)."""
    cp, admin = routed
    host = host_address()
    port = free_port(host)
    await _prepare(admin, host, port)
    rest = Rest(cp.url, ssl_context=ssl.create_default_context(cafile=str(cp.pki.ca_cert)),
                token=await _token(admin))
    rest.webhook_address = f"{host}:{port}"  # type: ignore[attr-defined]
    yield rest
    await rest.close()


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def operator(routed, account: Rest, tmp_path_factory: pytest.TempPathFactory):
    cp, admin = routed
    assert (await admin.request("GET", f"{SECRETS}/homecluster-ca"))[0] == 404  # nothing made beforehand
    work = tmp_path_factory.mktemp("operator")
    kubeconfig = pki.write_user_kubeconfig(work / "kubeconfig", cp.pki, cp.url,
                                           {"token": account._headers["Authorization"].split(" ", 1)[1]})
    files = work / "certs"
    webhook = account.webhook_address  # type: ignore[attr-defined]
    provider = f"127.0.0.1:{free_port('127.0.0.1')}"
    argv = [sys.executable, "-m", "homecluster", "run", "--kubeconfig", str(kubeconfig), "--namespace", NAMESPACE,
            "--webhook-address", webhook, "--webhook-cert", str(files / "webhook/tls.crt"),
            "--webhook-key", str(files / "webhook/tls.key"), "--provider-address", provider,
            "--provider-cert", str(files / "provider/tls.crt"), "--provider-key", str(files / "provider/tls.key"),
            "--provider-client-ca", str(files / "provider/ca.crt"),
            "--self-signed-certs", "--self-signed-leaf-lifetime", "60s", "--self-signed-ca-lifetime", "150s"]
    env = {k: v for k, v in os.environ.items() if not k.startswith("HOMECLUSTER_")}
    log = work / "operator.log"
    with open(log, "ab") as out:
        proc = await asyncio.create_subprocess_exec(*with_pdeathsig(argv), stdin=asyncio.subprocess.DEVNULL,
                                                    stdout=out, stderr=asyncio.subprocess.STDOUT, env=env,
                                                    start_new_session=True)
    op = Operator(proc, log, webhook, provider, files)
    try:
        yield op
    finally:
        await stop_session(proc, 10.0)


async def our_secrets(admin: Rest) -> dict[str, dict]:
    names = ("homecluster-ca", "homecluster-webhook-cert", "homecluster-provider-server", "homecluster-provider-client")
    out = {}
    for name in names:
        status, body = await admin.request("GET", f"{SECRETS}/{name}")
        if status != 200:
            return {}
        out[name] = body
    return out


async def ca_bundles(admin: Rest) -> dict[str, bytes]:
    config = await get(admin, f"{VWC_PATH}/{VWC}")
    return {w["name"]: base64.b64decode(w["clientConfig"].get("caBundle", "")) for w in config["webhooks"]}


async def refused_by_our_webhook(admin: Rest, name: str) -> dict:
    """Create a Group whose jobs image is not allowed: our Group webhook must refuse it (a 403 from it)."""
    group = sample("infra_v2alpha1_group.yaml")
    group["metadata"] = {"name": name}
    group["spec"]["jobs"]["image"] = "registry.example/not-allowed:1"
    status, body = await admin.request("POST", path_of(group), group)
    return {"status": status, "message": body.get("message", "")}


def denied(answer: dict) -> bool:
    return answer["status"] == 403 and 'admission webhook "group-v2alpha1.kb.io" denied the request' \
        in answer["message"]


async def test_the_operator_makes_its_secrets_and_sets_our_ca_bundle(routed, operator: Operator) -> None:
    _, admin = routed
    secrets = await until(lambda: our_secrets(admin), "the four Secrets exist", 120, detail=log_tail(operator.log))
    assert {s["type"] for s in secrets.values()} == {"kubernetes.io/tls"}
    ca = secret_pem(secrets["homecluster-ca"], "tls.crt")
    for name in ("homecluster-webhook-cert", "homecluster-provider-server", "homecluster-provider-client"):
        assert secret_pem(secrets[name], "ca.crt") == ca
    bundles = await until(lambda: _bundles_if_set(admin), "the caBundle is set", 30, detail=log_tail(operator.log))
    assert bundles == {name: ca for name in OUR_WEBHOOKS}
    assert (await get(admin, f"{VWC_PATH}/someone-else")).get("webhooks") in (None, [])
    # the files the servers read are the Secrets' (written before anything served)
    assert (operator.files / "webhook/tls.crt").read_bytes() == secret_pem(secrets["homecluster-webhook-cert"], "tls.crt")
    assert (operator.files / "webhook/tls.key").stat().st_mode & 0o077 == 0


async def _bundles_if_set(admin: Rest) -> dict[str, bytes] | None:
    bundles = await ca_bundles(admin)
    return bundles if all(bundles.values()) else None


async def test_the_api_server_calls_the_webhook_through_its_service_with_the_patched_ca(routed, operator) -> None:
    _, admin = routed
    answer = await until(lambda: _denied_or_none(admin, "bad-1"), "the API server reaches our webhook", 60,
                         detail=log_tail(operator.log))
    assert denied(answer), answer
    ok = sample("infra_v2alpha1_group.yaml")
    ok["metadata"] = {"name": "allowed"}
    status, body = await admin.request("POST", path_of(ok), ok)
    assert status == 201, body  # admitted by our webhook over the same TLS


async def _denied_or_none(admin: Rest, name: str) -> dict | None:
    answer = await refused_by_our_webhook(admin, name)
    return answer if denied(answer) else None


async def test_the_provider_serves_mtls_to_the_autoscalers_secret(routed, operator) -> None:
    _, admin = routed
    client = await get(admin, f"{SECRETS}/homecluster-provider-client")
    assert await until(lambda: provider_serving(operator.provider, client), "the provider answers SERVING over mTLS",
                       120, detail=log_tail(operator.log))


async def test_renewal_is_served_and_the_ca_bundle_follows_without_a_restart(routed, operator) -> None:
    _, admin = routed
    before = await our_secrets(admin)
    old_ca = secret_pem(before["homecluster-ca"], "tls.crt")
    old_leaf = secret_pem(before["homecluster-webhook-cert"], "tls.crt")
    await until(lambda: _serves(operator.webhook, old_ca, old_leaf), "the Secret's certificate is served", 30,
                detail=log_tail(operator.log))
    # garbage in one Secret (as the admin): the next pass replaces it and says which Secret it was
    status, body = await admin.request("PATCH", f"{SECRETS}/homecluster-provider-client",
                                       {"data": {"tls.crt": base64.b64encode(b"garbage").decode()}},
                                       "application/merge-patch+json")
    assert status == 200, body

    async def leaf_renewed():
        now = await our_secrets(admin)
        return now if now and secret_pem(now["homecluster-webhook-cert"], "tls.crt") != old_leaf else None
    renewed = await until(leaf_renewed, "the webhook's certificate is renewed", 90, detail=log_tail(operator.log))
    new_leaf = secret_pem(renewed["homecluster-webhook-cert"], "tls.crt")
    # served without a restart: the webhook server re-reads its files
    await until(lambda: _serves(operator.webhook, old_ca, new_leaf), "the renewed certificate is served", 30,
                detail=log_tail(operator.log))
    assert denied(await refused_by_our_webhook(admin, "bad-2"))

    async def ca_renewed():
        now = await our_secrets(admin)
        return now if now and secret_pem(now["homecluster-ca"], "tls.crt") != old_ca else None
    rotated = await until(ca_renewed, "the CA is renewed", 120, detail=log_tail(operator.log))
    new_ca = secret_pem(rotated["homecluster-ca"], "tls.crt")
    bundles = await until(lambda: _bundles_equal(admin, new_ca),
                          "the caBundle follows the new CA", 30, detail=log_tail(operator.log))
    assert set(bundles) == set(OUR_WEBHOOKS)
    await until(lambda: served_certificate(operator.webhook, new_ca, WEBHOOK_DNS),
                "a certificate of the new CA is served", 30, detail=log_tail(operator.log))
    answer = await until(lambda: _denied_or_none(admin, "bad-3"),
                         "the API server reaches our webhook with the new CA", 30, detail=log_tail(operator.log))
    assert denied(answer)
    client = await get(admin, f"{SECRETS}/homecluster-provider-client")
    assert secret_pem(client, "ca.crt") == new_ca
    assert await until(lambda: provider_serving(operator.provider, client),
                       "the provider serves the new CA's certificate", 30, detail=log_tail(operator.log))
    assert operator.proc.returncode is None  # one process throughout
    log = operator.log.read_text(errors="replace")
    assert "Secret homecluster-provider-client: unusable: data['tls.crt'] is not a PEM certificate; replacing it" \
        in log
    assert "pass failed" not in log and "BEGIN" not in log  # no failed pass; no key material in the log
    assert_no_key_material(log, before, renewed, rotated, {"client": client})


def key_fragments(*secret_sets: dict[str, dict]) -> set[str]:
    """Every private key the tests saw, as they could reach a log line: each base64 line of the PEM body
    (the DER key) and the start of the Secret's base64 value (the PEM itself)."""
    fragments = set()
    for secrets in secret_sets:
        for secret in secrets.values():
            value = (secret.get("data") or {}).get("tls.key")
            if not value:
                continue
            fragments.add(value[:40])
            pem = base64.b64decode(value).decode()
            fragments.update(line for line in pem.splitlines() if line and not line.startswith("-----"))
    return fragments


def assert_no_key_material(log: str, *secret_sets: dict[str, dict]) -> None:
    assert "PRIVATE KEY" not in log
    fragments = key_fragments(*secret_sets)
    assert len(fragments) >= 8, "the check saw the keys of the CA and the leaves"  # it cannot pass vacuously
    leaked = sum(1 for f in fragments if f in log)
    if leaked:  # not an `assert` on the list: pytest would print the key fragments
        raise AssertionError(f"key material in the operator's log: {leaked} fragment(s)")


async def _serves(address: str, ca: bytes, leaf: bytes) -> bool:
    return await served_certificate(address, ca, WEBHOOK_DNS) == der(leaf)


async def _bundles_equal(admin: Rest, ca: bytes) -> dict | None:
    bundles = await ca_bundles(admin)
    return bundles if all(b == ca for b in bundles.values()) else None


async def test_rbac_allows_only_our_secrets_and_our_webhook_configuration(account: Rest) -> None:
    patch = {"metadata": {"labels": {"touched": "yes"}}}
    status, body = await account.request("PATCH", f"{VWC_PATH}/someone-else", patch, "application/merge-patch+json")
    assert status == 403, body
    status, body = await account.request("GET", f"{VWC_PATH}/someone-else")
    assert status == 403, body
    status, body = await account.request("GET", f"{VWC_PATH}")
    assert status == 403, body  # no list either
    status, body = await account.request("POST", SECRETS, {
        "apiVersion": "v1", "kind": "Secret", "metadata": {"name": "someone-elses"}, "stringData": {"a": "b"}})
    assert status == 201, body  # create cannot be limited by name (config/components/self-signed-certs/rbac.yaml)
    for verb, path in (("GET", f"{SECRETS}/someone-elses"), ("GET", SECRETS),
                       ("DELETE", f"{SECRETS}/homecluster-ca")):
        status, body = await account.request(verb, path)
        assert status == 403, (verb, path, body)
    assert (await account.request("GET", f"{VWC_PATH}/{VWC}"))[0] == 200
    assert (await account.request("GET", f"{SECRETS}/homecluster-ca"))[0] == 200
    # operator/certwatch.py's watches: by name (fieldSelector metadata.name), which the authorizer checks against
    # resourceNames; the same watch without the name, or naming another object, is refused
    for path, name in ((SECRETS, "homecluster-ca"), (VWC_PATH, VWC)):
        events = await watch_events(account, f"{path}?watch=1&timeoutSeconds=1&fieldSelector=metadata.name%3D{name}",
                                    stop_after=15)
        assert [(e["type"], e["object"]["metadata"]["name"]) for e in events] == [("ADDED", name)], events
    for path in (f"{SECRETS}?watch=1&timeoutSeconds=1", f"{SECRETS}?watch=1&fieldSelector=metadata.name%3Dsomeone-elses",
                 f"{VWC_PATH}?watch=1&fieldSelector=metadata.name%3Dsomeone-else"):
        assert (await account.request("GET", path))[0] == 403, path


async def test_a_secret_of_another_type_is_named_and_made_again_once_deleted(routed, operator) -> None:
    """The type of a Secret is immutable: the operator says which Secret and what to do, and makes it again."""
    _, admin = routed
    name = "homecluster-provider-client"
    assert (await admin.request("DELETE", f"{SECRETS}/{name}"))[0] == 200
    status, body = await admin.request("POST", SECRETS, {"apiVersion": "v1", "kind": "Secret", "type": "Opaque",
                                                         "metadata": {"name": name}, "stringData": {"x": "y"}})
    assert status == 201, body
    words = f"Secret {NAMESPACE}/{name} has type 'Opaque', not kubernetes.io/tls, and a Secret's type cannot " \
            f"change: delete it and the operator makes it again"

    async def said():
        return words in operator.log.read_text(errors="replace")
    await until(said, "the operator names the Secret of another type", 120, detail=log_tail(operator.log))
    assert (await admin.request("DELETE", f"{SECRETS}/{name}"))[0] == 200

    async def remade():
        status, body = await admin.request("GET", f"{SECRETS}/{name}")
        return body if status == 200 and body.get("type") == "kubernetes.io/tls" else None
    client = await until(remade, "the operator makes the Secret again", 90, detail=log_tail(operator.log))
    assert await until(lambda: provider_serving(operator.provider, client),
                       "the provider accepts the new client certificate", 30, detail=log_tail(operator.log))
    assert operator.proc.returncode is None
    # the deletions were heard by the watches (operator/certwatch.py), which the real authorizer let through
    assert "cannot watch" not in operator.log.read_text(errors="replace")
