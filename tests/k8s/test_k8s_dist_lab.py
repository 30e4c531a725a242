"""`kubectl apply --server-side -f dist/install-self-signed.yaml` into the lab's real control plane, no
cert-manager anywhere, then a claim that boots a machine and a deletion that powers it off.

The lab (RealLabCluster, no operator of its own) brings the control plane, the runner node, one IPMI machine
and the pool. It installs nothing of ours: the single file brings the CRDs, the namespace, RBAC (the
self-signed rights included), the Services, the webhook configuration and the operator's Deployment. The file
is applied first (in the lab's install step, before any Node registers), so the pool itself -- the Group and
its slot -- is created through the file's webhook configuration, with the caBundle the operator patched in.

What cannot run here, and what stands in for it (as tests/k8s/test_k8s_helm_lab.py):
- the operator's image: there is no container runtime. Right after the apply, while no Node exists yet, the
  file's Deployment gets a nodeSelector no node matches, so its pod stays Pending (nothing pretends to run it);
  the operator runs as a local `homecluster run --self-signed-certs` process instead, with a TokenRequest
  token of the file's `homecluster-controller` ServiceAccount, so every request (its Secrets, the caBundle
  patch, Jobs, status) passes the RBAC the file installed. The Deployment's own flags, env
  (HOMECLUSTER_SELF_SIGNED_CERTS) and in-memory volumes are not what the process runs with: unproven here.
- the webhook Service: nothing routes Service IPs. kube-apiserver runs with --enable-aggregator-routing (it
  dials a webhook Service's endpoint, still checking the certificate for the Service's DNS name against the
  caBundle), the file's Service loses its selector and its Endpoints name the operator's webhook port on this
  machine's address (as tests/k8s/test_k8s_self_signed.py). The operator makes its own CA and serving
  certificate and patches the caBundle: without that patch the API server refuses the TLS and nothing is
  admitted (failurePolicy Fail).
"""
from __future__ import annotations

import base64
import json
import os
from pathlib import Path

import pytest
from k8s_install_proof import BOUND, boot_claim, run_program
from support.waits import until
from k8s_objects import established, sample
from test_k8s_self_signed import RoutedControlPlane, host_address

from homecluster_lab import readiness
from homecluster_lab.config import LabConfig
from homecluster_lab.k8s import binaries, install, labcluster
from homecluster_lab.k8s.labcluster import RealLabCluster
from homecluster_lab.node.kube import KubeError
from homecluster_lab.operator_proc import OperatorOptions, OperatorProcess, unavailable_reason

pytestmark = pytest.mark.asyncio(loop_scope="module")
DIST = binaries.REPO / "dist" / "install-self-signed.yaml"
NS = "homecluster-system"
SLOT = "worker-01"
CLAIM = "dist-boot-1"
VWC = ("/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations/"
       "homecluster-validating-webhook-configuration")
OUR_WEBHOOKS = {"nodeclaim-v2alpha1.kb.io", "group-v2alpha1.kb.io", "node-v2alpha1.kb.io",
                "pods-eviction.homecluster.dev"}
NO_RUNTIME = {"lab.homecluster.dev/no-container-runtime": "true"}




class DistLab(RealLabCluster):
    """The lab whose install step is `kubectl apply --server-side -f dist/install-self-signed.yaml` and the
    operator, run locally as the file's ServiceAccount (module docstring)."""

    operator_proc: OperatorProcess | None = None
    last_answer = ""  # the API server's last answer to the probe Group (a TLS error while the caBundle is wrong)

    async def _install(self) -> None:
        cp = self.control_plane
        assert cp is not None and cp.pki is not None
        kubectl = binaries.find("kubectl")
        assert kubectl is not None, binaries.missing_reason(("kubectl",))
        env = {**os.environ, "KUBECONFIG": str(cp.kubeconfig_path), "HOME": str(self.workdir / "kubectl-home")}
        await run_program(str(kubectl), "apply", "--server-side", "-f", str(DIST), env=env)
        await established(self.api.kube, "groups.infra.homecluster.dev", "nodes.infra.homecluster.dev",
                          "nodeclaims.infra.homecluster.dev")
        # no Node exists yet: the pod can be scheduled nowhere, before and after this change
        await self.api.kube.merge_patch(f"/apis/apps/v1/namespaces/{NS}/deployments/homecluster-controller",
                                        {"spec": {"template": {"spec": {"nodeSelector": NO_RUNTIME}}}})
        host = host_address()
        kubeconfig = await install.service_account_kubeconfig(self.api, self.workdir / "operator.kubeconfig",
                                                              cp.pki, NS)
        files = self.workdir / "operator-certs"
        self.operator_proc = OperatorProcess(OperatorOptions(
            kubeconfig=kubeconfig, namespace=NS, provider_address="127.0.0.1:0",  # port 0: read from its log
            webhook_address=f"{host}:0", webhook_cert=files / "webhook/tls.crt",
            webhook_key=files / "webhook/tls.key", settings={"job_poll_interval": "2s"},
            extra_args=("--self-signed-certs", "--provider-cert", str(files / "provider/tls.crt"),
                        "--provider-key", str(files / "provider/tls.key"),
                        "--provider-client-ca", str(files / "provider/ca.crt"))), self.workdir / "operator.log")
        await self.operator_proc.start()
        self._stack.push_async_callback(self.operator_proc.stop)
        op = self.operator_proc
        webhook, _ = await op.served_addresses(BOUND)
        # the webhook Service's endpoint: the operator's port on this machine (no kube-proxy, no pod network)
        await self.api.kube.request("PATCH", f"/api/v1/namespaces/{NS}/services/homecluster-webhook-service",
                                    [{"op": "remove", "path": "/spec/selector"}],
                                    content_type="application/json-patch+json")
        endpoints = {"apiVersion": "v1", "kind": "Endpoints", "metadata": {"name": "homecluster-webhook-service"},
                     "subsets": [{"addresses": [{"ip": host}],
                                  "ports": [{"name": "https", "port": int(webhook.rsplit(":", 1)[1])}]}]}
        for _ in range(5):  # ours, not the one the endpoints controller made while the Service had its selector
            try:
                await self.api.kube.create(f"/api/v1/namespaces/{NS}/endpoints", endpoints)
                break
            except KubeError as exc:
                if exc.status != 409:
                    raise
                await self.api.kube.delete(f"/api/v1/namespaces/{NS}/endpoints/homecluster-webhook-service")
        await readiness.wait_listening(webhook, BOUND, "the operator's webhook", str(op.log_path))
        # the pool is created next, through the webhooks: wait until the API server reaches them over TLS
        # checked against the caBundle the operator patched (its informer sees the patch a moment later)
        await until(lambda: self._refused_by_our_webhook(),
                    "the API server to call our webhook with the operator's caBundle", BOUND,
                    detail=lambda: f"last answer: {self.last_answer}\noperator log:\n{op.log_tail()}")

    async def _refused_by_our_webhook(self) -> bool:
        """A Group whose Job image is off the allow-list: our Group webhook's own refusal, not a TLS error."""
        group = sample("infra_v2alpha1_group.yaml")
        group["metadata"] = {"name": "not-allowed"}
        group["spec"]["jobs"]["image"] = "registry.example/not-allowed:1"
        try:
            await self.api.kube.create("/apis/infra.homecluster.dev/v2alpha1/groups", group)
        except KubeError as exc:
            self.last_answer = str(exc)
            return exc.status == 403 and 'admission webhook "group-v2alpha1.kb.io" denied' in str(exc)
        raise AssertionError("a Group with a Job image off the allow-list was admitted")



async def test_dist_installed_operator_makes_its_certificates_boots_and_powers_off_a_machine(tmp_path: Path,
                                                                                           monkeypatch) -> None:
    if binaries.find("kubectl") is None:
        pytest.skip(binaries.missing_reason(("kubectl",)))
    if unavailable_reason():
        pytest.skip(unavailable_reason())
    monkeypatch.setattr(labcluster, "RealControlPlane", RoutedControlPlane)  # --enable-aggregator-routing
    config = LabConfig(slots=1, driver="ipmi", boot_seconds=1, provider_address="127.0.0.1:0",
                       workdir=tmp_path / "lab", operator=False, control_plane="kubernetes")
    async with DistLab(config) as lab:
        op = lab.operator_proc
        assert op is not None and lab.control_plane is not None
        kube = lab.api.kube
        # the operator's certificates: its CA in the Secret, and the same CA in each of our webhooks' caBundle
        ca = (await kube.get(f"/api/v1/namespaces/{NS}/secrets/homecluster-ca"))["data"]["tls.crt"]
        webhooks = (await kube.get(VWC))["webhooks"]
        assert {w["name"] for w in webhooks} == OUR_WEBHOOKS
        for hook in webhooks:
            assert hook["clientConfig"]["caBundle"] == ca, hook["name"]
            assert hook["failurePolicy"] == "Fail" and "service" in hook["clientConfig"], hook
        assert base64.b64decode(ca).startswith(b"-----BEGIN CERTIFICATE-----")

        # the file's Deployment is there, its pod Pending: no node has the selector's label (no runtime here)
        async def unschedulable() -> dict | None:
            pods = [p for p in (await kube.get(f"/api/v1/namespaces/{NS}/pods"))["items"]
                    if any(o["kind"] == "ReplicaSet" for o in p["metadata"].get("ownerReferences") or [])]
            conditions = {c["type"]: c for c in (pods[0]["status"].get("conditions") or [])} if len(pods) == 1 else {}
            scheduled = conditions.get("PodScheduled")
            return pods[0] if scheduled and scheduled["reason"] == "Unschedulable" else None

        pod = await until(unschedulable, "the file's operator pod to be judged unschedulable", BOUND, detail=op.log_tail)
        assert pod["status"]["phase"] == "Pending" and pod["spec"]["serviceAccountName"] == "homecluster-controller"

        await lab.api.create(boot_claim(CLAIM, SLOT))  # admitted only through the file's webhook (failurePolicy Fail)

        def phase() -> str | None:
            claim = next((c for c in lab.claims() if c["metadata"]["name"] == CLAIM), None)
            return ((claim or {}).get("status") or {}).get("phase")

        async def settled() -> str | None:
            return phase() if phase() in ("ready", "failed") else None

        reached = await until(settled, "the claim to be ready or failed", BOUND, detail=op.log_tail)
        assert reached == "ready", (lab.claims(), op.log_tail())
        assert lab.machine(SLOT).power_state() == "on"

        await kube.delete(f"/apis/infra.homecluster.dev/v2alpha1/nodeclaims/{CLAIM}")

        async def gone_and_off() -> bool:
            gone = not any(c["metadata"]["name"] == CLAIM for c in lab.claims())
            return gone and lab.machine(SLOT).power_state() == "off"

        await until(gone_and_off, "the claim to be gone and the machine off", BOUND, detail=op.log_tail)
        events = [json.loads(line) for line in lab.control_plane.files.audit_log.read_text().splitlines()]

    operator_user = f"system:serviceaccount:{NS}:homecluster-controller"
    mine = [e for e in events if e["user"]["username"] == operator_user]
    wrote = {(e["verb"], (e.get("objectRef") or {}).get("resource")) for e in mine if e["responseStatus"]["code"] < 300}
    assert {("create", "secrets"), ("patch", "validatingwebhookconfigurations"), ("create", "jobs")} <= wrote, wrote
    refused = [(e["verb"], e["requestURI"]) for e in mine if e["responseStatus"]["code"] == 403]
    assert refused == [], f"the file's RBAC refused the operator: {refused}"
