"""`homecluster run` (the operator) against the real API server, authenticated with a token of its
`homecluster-controller` ServiceAccount (TokenRequest) and authorized by the real RBAC authorizer with the
rules of config/rbac, applied as a user applies them (kustomize). It starts and lists its kinds (its
provider answers SERVING only once its caches hold every kind); its admission webhook, registered by URL
as the lab registers it, is called by the real API server's ValidatingAdmissionWebhook plugin; and the
audit log shows that none of its requests was forbidden.
"""
from __future__ import annotations

import asyncio
import contextlib
import datetime as dt
import json
import re

import pytest
import pytest_asyncio
from k8s_objects import apply_rbac, install_crds, path_of, sample
from k8s_rest import Rest
from support.waits import until

from homecluster import tls
from homecluster.operator.main import WEBHOOK_PATH
from homecluster_lab import readiness
from homecluster_lab.config import free_port
from homecluster_lab.k8s import pki
from homecluster_lab.k8s.controlplane import RealControlPlane
from homecluster_lab.operator_proc import OperatorOptions, OperatorProcess, unavailable_reason
from homecluster_lab.webhook_registration import webhook_configuration

pytestmark = pytest.mark.asyncio(loop_scope="module")
NAMESPACE = "homecluster-system"
ACCOUNT = "homecluster-controller"
OPERATOR_USER = f"system:serviceaccount:{NAMESPACE}:{ACCOUNT}"

async def _token(rest: Rest) -> str:
    request = {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": {"expirationSeconds": 3600}}
    status, body = await rest.request("POST", f"/api/v1/namespaces/{NAMESPACE}/serviceaccounts/{ACCOUNT}/token",
                                      request)
    assert status == 201, body
    return body["status"]["token"]


async def _prepare(rest: Rest) -> None:
    """Our CRDs, the operator's namespace, and a pool with two slots (worker-01, worker-02), so claims
    stay live."""
    await install_crds(rest)
    status, body = await rest.request("POST", "/api/v1/namespaces", {
        "apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE}})
    assert status in (201, 409), body
    for name in ("infra_v2alpha1_group.yaml", "infra_v2alpha1_node_ipmi.yaml", "infra_v2alpha1_node_redfish.yaml"):
        obj = sample(name)
        status, body = await rest.request("POST", path_of(obj), obj)
        assert status == 201, body


@contextlib.asynccontextmanager
async def _running_operator(rest: Rest, kubeconfig, workdir):
    """`homecluster run` with `kubeconfig`, serving, its webhook registered by URL through `rest`."""
    reason = unavailable_reason()
    if reason:
        pytest.skip(reason)
    ca = tls.make_ca("homecluster-k8s-test-webhook-ca")
    cert, key = tls.issue(ca, "homecluster-webhook", ["127.0.0.1", "localhost"]).write(workdir, "webhook")
    webhook_address = f"127.0.0.1:{free_port('127.0.0.1')}"
    provider_address = f"127.0.0.1:{free_port('127.0.0.1')}"
    proc = OperatorProcess(OperatorOptions(kubeconfig=kubeconfig, namespace=NAMESPACE,
                                           provider_address=provider_address, webhook_address=webhook_address,
                                           webhook_cert=cert, webhook_key=key), workdir / "operator.log")
    await proc.start()
    try:
        await readiness.wait_serving(provider_address, 120, proc.exited, proc.log_tail, str(proc.log_path))
        await readiness.wait_listening(webhook_address, 60, "the operator's webhook", str(proc.log_path))
        status, body = await rest.request(
            "POST", "/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations",
            webhook_configuration(f"https://{webhook_address}{WEBHOOK_PATH}", ca.cert_pem))
        assert status == 201, body
        yield proc
    finally:
        await proc.stop()


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def operator(real_k8s: RealControlPlane, real_rest: Rest, tmp_path_factory: pytest.TempPathFactory):
    """The operator on the real API server, as its ServiceAccount through config/rbac."""
    await _prepare(real_rest)
    await apply_rbac(real_rest)
    workdir = tmp_path_factory.mktemp("operator")
    kubeconfig = pki.write_user_kubeconfig(workdir / "kubeconfig", real_k8s.pki, real_k8s.url,
                                           {"token": await _token(real_rest)})
    async with _running_operator(real_rest, kubeconfig, workdir) as proc:
        yield proc


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def lab_operator(lab_api, lab_rest: Rest, tmp_path_factory: pytest.TempPathFactory):
    """The same operator on the in-memory API server (which has no authorization)."""
    await _prepare(lab_rest)
    async with _running_operator(lab_rest, lab_api.kubeconfig_path, tmp_path_factory.mktemp("lab-operator")) as proc:
        yield proc


async def test_operator_serves_against_the_real_api_server(operator: OperatorProcess) -> None:
    assert operator.exited() is None, operator.log_tail()


async def test_real_api_server_calls_our_webhook(operator: OperatorProcess, real_rest: Rest) -> None:
    first = _claim("first")
    status, body = await real_rest.request("POST", path_of(first), first)
    assert status == 201, body
    # the webhook answers from the operator's cache: wait until the operator has seen the first claim
    # (it has a phase). Two creates at once are the controller's to settle (Superseded), not admission's.
    seen = await _until_acted_on(real_rest, first["metadata"]["name"], operator)
    assert seen["status"]["phase"] not in ("failed", "completed"), seen["status"]
    second = _claim("second")
    status, body = await real_rest.request("POST", path_of(second), second)
    assert status == 403, body
    assert 'admission webhook "nodeclaim-v2alpha1.kb.io" denied the request' in body["message"], body
    assert f'slot "{first["spec"]["slotRef"]}" already has the live NodeClaim "{first["metadata"]["name"]}"' \
        in body["message"], body


def _claim(name: str, slot: str = "worker-01") -> dict:
    """The sample claim, named `name`, on `slot`, asked for now with an hour to go (it stays live)."""
    claim = sample("infra_v2alpha1_nodeclaim.yaml")
    now = dt.datetime.now(dt.timezone.utc).replace(microsecond=0)
    claim["metadata"] = {"name": name}
    claim["spec"].update(slotRef=slot, requestedAt=now.isoformat().replace("+00:00", "Z"),
                         deadlineAt=(now + dt.timedelta(hours=1)).isoformat().replace("+00:00", "Z"))
    return claim


async def _until_acted_on(rest: Rest, name: str, operator: OperatorProcess, timeout: float = 60) -> dict:
    """The claim `name` once the operator has recorded a phase for it."""
    async def acted_on() -> dict | None:
        status, body = await rest.request("GET", f"/apis/infra.homecluster.dev/v2alpha1/nodeclaims/{name}")
        return body if status == 200 and (body.get("status") or {}).get("phase") else None

    return await until(acted_on, f"the operator to take claim {name}", timeout, interval=0.2,
                       detail=lambda: f"its log:\n{operator.log_tail()}")


async def test_no_request_of_the_operator_is_forbidden(operator: OperatorProcess, real_k8s: RealControlPlane,
                                                       real_rest: Rest) -> None:
    # the operator acts on a claim (its status): a write beyond the startup lists
    claim = _claim("acted-on", slot="no-such-slot")
    status, body = await real_rest.request("POST", path_of(claim), claim)
    assert status == 201, body

    await _until_acted_on(real_rest, "acted-on", operator)

    def operator_events() -> list[dict]:
        events = [json.loads(line) for line in real_k8s.files.audit_log.read_text().splitlines()]
        return [e for e in events if e["user"]["username"] == OPERATOR_USER]

    def patch_logged() -> bool:
        return any(e["verb"] == "patch" and (e.get("objectRef") or {}).get("name") == "acted-on"
                   for e in operator_events())

    # kube-apiserver writes a request's ResponseComplete event after the response has gone out, so the claim's
    # phase can be read before its patch's line is in the file (seen with four test workers on 2 cores)
    await until(patch_logged, "the operator's patch of the claim in the audit log", 30)
    forbidden = [(e["verb"], e.get("objectRef"), e["requestURI"]) for e in operator_events()
                 if e["responseStatus"]["code"] == 403]
    assert forbidden == [], f"the real authorizer refused the operator: {forbidden}"
    done = {(e["verb"], (e.get("objectRef") or {}).get("resource")) for e in operator_events()}
    # it listed and watched its kinds, recorded claim status, and launched the first claim's startup Job
    assert {("list", "nodeclaims"), ("watch", "nodeclaims"), ("patch", "nodeclaims"), ("create", "jobs")} <= done, done


async def test_webhook_denial_reads_alike(operator: OperatorProcess, lab_operator: OperatorProcess,
                                          real_rest: Rest, lab_rest: Rest) -> None:
    """The same second claim refused through kube-apiserver's admission chain and through the in-memory
    server's: the same status, reason, message and causes."""
    answers = {}
    for server, rest, proc in (("real", real_rest, operator), ("lab", lab_rest, lab_operator)):
        first, second = _claim("alike-first", slot="worker-02"), _claim("alike-second", slot="worker-02")
        status, body = await rest.request("POST", path_of(first), first)
        assert status == 201, body
        await _until_acted_on(rest, "alike-first", proc)
        status, body = await rest.request("POST", path_of(second), second)
        # the phase the first claim had reached is timing, not the server: normalised, in the causes too
        message = re.sub(r'in phase "[a-z]+"', 'in phase "<phase>"', body.get("message") or "")
        details = json.loads(re.sub(r'in phase \\"[a-z]+\\"', 'in phase \\"<phase>\\"',
                                    json.dumps(body.get("details"))))
        answers[server] = (status, body.get("reason"), message, details)
    assert answers["real"][0] == 403, answers
    assert answers["lab"] == answers["real"], answers
