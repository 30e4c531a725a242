"""`homecluster run` (the operator) against the real API server: it starts, lists its kinds (its provider
answers SERVING only once its caches hold every kind), and its admission webhook, registered by URL the
way the lab registers it, is called by the real API server's ValidatingAdmissionWebhook plugin.

The operator authenticates as the admin here; through a ServiceAccount token and real RBAC is the next
part of issue 12.
"""
from __future__ import annotations

import copy

import pytest
import pytest_asyncio
from k8s_objects import install_crds, path_of, sample
from k8s_rest import Rest

from homecluster import tls
from homecluster.lab import readiness
from homecluster.lab.config import free_port
from homecluster.lab.k8s.controlplane import RealControlPlane
from homecluster.lab.operator_proc import OperatorOptions, OperatorProcess, unavailable_reason
from homecluster.lab.webhook_registration import webhook_configuration, webhook_path

pytestmark = pytest.mark.asyncio(loop_scope="module")
NAMESPACE = "homecluster-system"


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def operator(real_k8s: RealControlPlane, real_rest: Rest, tmp_path_factory: pytest.TempPathFactory):
    reason = unavailable_reason()
    if reason:
        pytest.skip(reason)
    await install_crds(real_rest)
    status, body = await real_rest.request("POST", "/api/v1/namespaces", {
        "apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE}})
    assert status == 201, body
    workdir = tmp_path_factory.mktemp("operator")
    ca = tls.make_ca("homecluster-k8s-test-webhook-ca")
    cert, key = tls.issue(ca, "homecluster-webhook", ["127.0.0.1", "localhost"]).write(workdir, "webhook")
    webhook_address = f"127.0.0.1:{free_port('127.0.0.1')}"
    provider_address = f"127.0.0.1:{free_port('127.0.0.1')}"
    proc = OperatorProcess(OperatorOptions(kubeconfig=real_k8s.kubeconfig_path, namespace=NAMESPACE,
                                           provider_address=provider_address, webhook_address=webhook_address,
                                           webhook_cert=cert, webhook_key=key), workdir / "operator.log")
    await proc.start()
    try:
        await readiness.wait_serving(provider_address, 120, proc.exited, proc.log_tail, str(proc.log_path))
        await readiness.wait_listening(webhook_address, 60, "the operator's webhook", str(proc.log_path))
        status, body = await real_rest.request(
            "POST", "/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations",
            webhook_configuration(f"https://{webhook_address}{webhook_path()}", ca.cert_pem))
        assert status == 201, body
        yield proc
    finally:
        await proc.stop()


async def test_operator_serves_against_the_real_api_server(operator: OperatorProcess) -> None:
    assert operator.exited() is None, operator.log_tail()


async def test_real_api_server_calls_our_webhook(operator: OperatorProcess, real_rest: Rest) -> None:
    first = sample("infra_v2alpha1_nodeclaim.yaml")
    status, body = await real_rest.request("POST", path_of(first), first)
    assert status == 201, body
    second = copy.deepcopy(first)
    second["metadata"]["name"] = "worker-01-second"
    status, body = await real_rest.request("POST", path_of(second), second)
    assert status == 403, body
    assert 'admission webhook "nodeclaim-v2alpha1.kb.io" denied the request' in body["message"], body
    assert f'slot "{first["spec"]["slotRef"]}" already has the live NodeClaim "{first["metadata"]["name"]}"' \
        in body["message"], body
