"""The real control plane as the launcher starts it: authentication, RBAC, the controller manager and the
scheduler at work, the audit log, and every process gone after stop."""
from __future__ import annotations

import json
import os
import ssl

import pytest
from k8s_rest import Rest
from support.waits import until

from homecluster_lab.k8s.controlplane import RealControlPlane

pytestmark = pytest.mark.asyncio(loop_scope="module")


async def test_admin_is_served_and_others_are_not(real_k8s: RealControlPlane, real_rest: Rest) -> None:
    status, body = await real_rest.request("GET", "/api/v1/namespaces")
    assert status == 200, body
    assert {"default", "kube-system"} <= {n["metadata"]["name"] for n in body["items"]}

    # a certificate from the lab's CA for a user no RBAC rule names: authenticated, not authorized
    cert, key = real_k8s.pki.client("nobody-in-particular")
    context = ssl.create_default_context(cafile=str(real_k8s.pki.ca_cert))
    context.load_cert_chain(str(cert), str(key))
    nobody = Rest(real_k8s.url, ssl_context=context)
    try:
        status, body = await nobody.request("GET", "/api/v1/namespaces")
        assert status == 403, body
        assert 'User "nobody-in-particular" cannot list resource "namespaces"' in body["message"]
    finally:
        await nobody.close()

    # no certificate and a token nobody signed: not authenticated
    stranger = Rest(real_k8s.url, ssl_context=ssl.create_default_context(cafile=str(real_k8s.pki.ca_cert)),
                    token="not-a-token")
    try:
        status, body = await stranger.request("GET", "/api/v1/namespaces")
        assert status == 401, body
    finally:
        await stranger.close()


async def test_controller_manager_and_scheduler_act(real_rest: Rest) -> None:
    ns = "cp-check"
    status, body = await real_rest.request("POST", "/api/v1/namespaces",
                                           {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}})
    assert status == 201, body

    # the ServiceAccount controller makes the namespace's default account; the root CA publisher its ConfigMap
    async def account():
        status, _ = await real_rest.request("GET", f"/api/v1/namespaces/{ns}/serviceaccounts/default")
        return status == 200
    await until(account, "the default ServiceAccount (kube-controller-manager)", 60)

    async def root_ca():
        status, _ = await real_rest.request("GET", f"/api/v1/namespaces/{ns}/configmaps/kube-root-ca.crt")
        return status == 200
    await until(root_ca, "the kube-root-ca.crt ConfigMap (kube-controller-manager)", 60)

    # no node exists, so the scheduler says the pod is Unschedulable (what cluster-autoscaler scales up on)
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "waits"},
           "spec": {"containers": [{"name": "c", "image": "registry.invalid/none:1"}]}}
    status, body = await real_rest.request("POST", f"/api/v1/namespaces/{ns}/pods", pod)
    assert status == 201, body

    async def unschedulable():
        _, body = await real_rest.request("GET", f"/api/v1/namespaces/{ns}/pods/waits")
        for c in (body.get("status") or {}).get("conditions") or []:
            if c["type"] == "PodScheduled" and c["status"] == "False":
                return c
        return None
    condition = await until(unschedulable, "PodScheduled=False (kube-scheduler)", 60)
    assert condition["reason"] == "Unschedulable"


async def test_audit_log_records_writes(real_k8s: RealControlPlane, real_rest: Rest) -> None:
    cm = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "audited"}, "data": {"a": "b"}}
    status, body = await real_rest.request("POST", "/api/v1/namespaces/default/configmaps", cm)
    assert status == 201, body

    def found():
        for line in real_k8s.files.audit_log.read_text().splitlines():
            event = json.loads(line)
            ref = event.get("objectRef") or {}
            if event["verb"] == "create" and ref.get("resource") == "configmaps" and ref.get("name") == "audited":
                return event
        return None

    async def check():
        return found()
    event = await until(check, "the audit event of the ConfigMap's create", 10)
    assert event["user"]["username"] == "homecluster-lab-admin"
    assert event["responseStatus"]["code"] == 201
    assert event["stage"] == "ResponseComplete"
    assert {"requestReceivedTimestamp", "stageTimestamp", "userAgent"} <= event.keys()


async def test_stop_ends_every_process(tmp_path) -> None:
    cp = RealControlPlane(tmp_path / "k8s")
    await cp.start()
    pids = [c.pid for c in cp.components]
    assert len(pids) == 4 and all(pids)
    await cp.stop()
    alive = [p for p in pids if _alive(p)]
    assert not alive, f"still running after stop: {alive}"


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True
