"""`helm install` of charts/homecluster into the lab's real control plane, then a claim that boots a machine.

The lab (RealLabCluster, no operator of its own) brings the control plane, the runner node, one IPMI machine
and the pool; our CRDs and the namespace come first (the chart's `crds/` then finds them, as helm does on
any upgrade). `helm install` (without cert-manager) renders and applies everything else: RBAC, the webhook
configuration, Services, the operator's Deployment.

What cannot run here, and what stands in for it (issue 16 asks for this proof):
- the operator's image: there is no container runtime. The chart's Deployment is installed with a
  nodeSelector no node matches, so its pod stays Pending (nothing pretends to run it); the operator runs as
  a local `homecluster run` process instead, with a TokenRequest token of the chart's
  `homecluster-controller` ServiceAccount, so every request passes the RBAC the chart installed. The
  Deployment's flags (args, env) are not what the process runs with: that is left unproven.
- the webhook Service: nothing routes Service IPs, so the chart's ValidatingWebhookConfiguration gets its
  clientConfig pointed at the process on loopback (`url`, keeping the chart's paths, names, rules and
  failurePolicy Fail), with the CA that signed the process's serving certificate as `caBundle` (given to
  helm as the chart asks without cert-manager). A claim is created only if the real API server reached
  the webhook through the chart's configuration.
"""
from __future__ import annotations

import asyncio
import base64
import json
import os
import time

import pytest
from k8s_install_proof import BOUND, boot_claim, run_program
from support.waits import until

from homecluster import tls
from homecluster_lab import readiness
from homecluster_lab.config import LabConfig
from homecluster_lab.k8s import binaries, install
from homecluster_lab.k8s.labcluster import RealLabCluster
from homecluster_lab.operator_proc import OperatorOptions, OperatorProcess, unavailable_reason

pytestmark = pytest.mark.asyncio(loop_scope="module")
NS = "homecluster-system"
SLOT = "worker-01"
CLAIM = "helm-boot-1"
WEBHOOKS = "/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations"
CHART_WEBHOOKS = "homecluster-validating-webhook-configuration"


class ChartLab(RealLabCluster):
    """The lab with only our CRDs and the namespace installed: helm brings the rest."""

    async def _install(self) -> None:
        await install.install_crds(self.api)
        await self.api.create_or_keep(install.namespace_manifest(self.config.namespace, host_network=False))





async def test_helm_installed_operator_boots_and_powers_off_a_machine(tmp_path) -> None:
    helm = binaries.helm()
    if helm is None:
        pytest.skip(binaries.helm_missing_reason())
    if unavailable_reason():
        pytest.skip(unavailable_reason())
    config = LabConfig(slots=1, driver="ipmi", boot_seconds=1, provider_address="127.0.0.1:0",
                       workdir=tmp_path / "lab", operator=False, control_plane="kubernetes")
    async with ChartLab(config) as lab:
        home = tmp_path / "helm-home"
        env = {**os.environ, "KUBECONFIG": str(lab.kubeconfig_path), "HOME": str(home),
               "HELM_CACHE_HOME": str(home / "cache"), "HELM_CONFIG_HOME": str(home / "config"),
               "HELM_DATA_HOME": str(home / "data")}
        ca = tls.make_ca("homecluster-helm-lab-webhook-ca")
        cert, key = tls.issue(ca, "homecluster-webhook", ["127.0.0.1", "localhost"]).write(tmp_path, "webhook")
        out = await run_program(str(helm), "install", "homecluster", str(binaries.REPO / "charts" / "homecluster"),
                         "--namespace", NS, "--set", "certificates.mode=secrets",
                         "--set", f"webhook.caBundle={base64.b64encode(ca.cert_pem).decode()}",
                         "--set-json", 'nodeSelector={"lab.homecluster.dev/no-container-runtime":"true"}', env=env)
        assert "STATUS: deployed" in out, out

        assert lab.control_plane is not None and lab.control_plane.pki is not None
        kubeconfig = await install.service_account_kubeconfig(lab.api, tmp_path / "operator.kubeconfig",
                                                              lab.control_plane.pki, NS)
        # both servers on port 0: the ports the kernel gave them are read from the operator's log
        operator = OperatorProcess(OperatorOptions(
            kubeconfig=kubeconfig, namespace=NS, provider_address="127.0.0.1:0",
            webhook_address="127.0.0.1:0", webhook_cert=cert, webhook_key=key,
            settings={"job_poll_interval": "2s"}), tmp_path / "operator.log")
        await operator.start()
        try:
            webhook_address, provider_address = await operator.served_addresses(BOUND)
            # the chart's webhook configuration, pointed at the operator process on loopback
            chart_webhooks = await lab.api.kube.get(f"{WEBHOOKS}/{CHART_WEBHOOKS}")
            patch = [{"op": "replace", "path": f"/webhooks/{i}/clientConfig", "value": {
                "url": f"https://{webhook_address}{w['clientConfig']['service']['path']}",
                "caBundle": w["clientConfig"]["caBundle"]}} for i, w in enumerate(chart_webhooks["webhooks"])]
            await lab.api.kube.request("PATCH", f"{WEBHOOKS}/{CHART_WEBHOOKS}", patch,
                                       content_type="application/json-patch+json")
            await readiness.wait_serving(provider_address, 180, operator.exited, operator.log_tail,
                                         str(operator.log_path))
            await readiness.wait_listening(webhook_address, 60, "the operator's webhook", str(operator.log_path))
            # the Deployment is there, its pod Pending: no node has the selector's label (no runtime here)
            deadline = time.monotonic() + BOUND
            while True:
                pods = [p for p in (await lab.api.kube.get(f"/api/v1/namespaces/{NS}/pods"))["items"]
                        if any(o["kind"] == "ReplicaSet" for o in p["metadata"].get("ownerReferences") or [])]
                scheduled = {c["type"]: c for c in (pods[0]["status"].get("conditions") or [])
                             }.get("PodScheduled") if pods else None
                if scheduled and scheduled["status"] == "False":
                    break
                assert time.monotonic() < deadline, f"the chart's operator pod was never judged unschedulable: {pods}"
                await asyncio.sleep(0.5)
            assert len(pods) == 1 and pods[0]["status"]["phase"] == "Pending", pods
            assert scheduled["reason"] == "Unschedulable", scheduled

            await lab.api.create(boot_claim(CLAIM, SLOT))  # admitted only through the chart's webhook configuration

            def phase() -> str | None:
                claim = next((c for c in lab.claims() if c["metadata"]["name"] == CLAIM), None)
                return ((claim or {}).get("status") or {}).get("phase")

            reached = await until(lambda: phase() if phase() in ("ready", "failed") else None,
                                  "the claim to be ready or failed", BOUND)
            assert reached == "ready", (lab.claims(), operator.log_tail())
            assert lab.machine(SLOT).power_state() == "on"

            await lab.api.kube.delete(f"/apis/infra.homecluster.dev/v2alpha1/nodeclaims/{CLAIM}")
            await until(lambda: not any(c["metadata"]["name"] == CLAIM for c in lab.claims()),
                        "the claim to be gone", BOUND)
            assert lab.machine(SLOT).power_state() == "off"
        finally:
            await operator.stop()
        events = [json.loads(line) for line in lab.control_plane.files.audit_log.read_text().splitlines()]

    operator_user = f"system:serviceaccount:{NS}:homecluster-controller"
    mine = [e for e in events if e["user"]["username"] == operator_user]
    assert any(e["verb"] == "create" and (e.get("objectRef") or {}).get("resource") == "jobs" for e in mine)
    refused = [(e["verb"], e["requestURI"]) for e in mine if e["responseStatus"]["code"] == 403]
    assert refused == [], f"the chart's RBAC refused the operator: {refused}"
