"""`helm install` of charts/homecluster with `certificates.mode=cert-manager` on the lab's real node, with
cert-manager itself running there: its controller and cainjector built from its Go module (`make cert-manager`,
lab/cert-manager), one-file images in the node's containerd, our own minimal manifests
(homecluster_lab.k8s.certmanager), its CRDs from the same module.

The install step, as docs/install.md orders it: cert-manager first (its CRDs, `kubectl apply --server-side`; its
namespace, RBAC and Deployments), then the namespace and `helm install ... --set certificates.mode=cert-manager`
(one value added, as in test_k8s_realnode_helm: the pod's nodeSelector names the real node); or, the second
run, `kubectl apply --server-side -f dist/install.yaml` (the Deployment's nodeSelector patched the same way). Then:
- cert-manager issues the chart's certificates (the self-signed root, the homecluster CA, the leaves): each
  Certificate Ready, the leaves' Secrets signed by the CA's;
- cainjector fills the webhook configuration's caBundle with that CA (the chart leaves it empty);
- the operator's pod, which mounts the leaves, is Ready; kube-apiserver calls its webhook through the Service
  (a Group off the allow-list refused, before the pool is made); a claim goes ready; a second claim for the slot
  is refused with the webhook's exact text;
- the claim's lifecycle Jobs run on the real node as containers of the runner image (as test_k8s_realnode_helm):
  the startup pod confined, the shutdown pod's `cordon-drain` init container run to 0 with its projected token
  once the claim is deleted, and the audit log shows the operator pod's own token made the writes, the drain's
  token the reads, and neither ServiceAccount refused (k8s_realnode_jobs).
"""
from __future__ import annotations

import base64
import os
from pathlib import Path

import pytest
import yaml
from k8s_install_proof import run_program
from k8s_realnode import boot, established, release, skip_if_the_controller_image_is_stale, skip_unless_here
from k8s_realnode_jobs import JobPods, assert_pods_identities, audit_events, shutdown_pod, startup_pod
from test_k8s_realnode_helm import NS, REFUSED, SLOT, HelmOnTheRealNode, ready

from homecluster_lab.config import LabConfig
from homecluster_lab.k8s import binaries, certmanager, nodeimages, realnode

pytestmark = [pytest.mark.asyncio(loop_scope="module"), skip_unless_here("controller", "runner"),
              pytest.mark.skipif(binaries.helm() is None, reason=str(binaries.helm_missing_reason())),
              pytest.mark.skipif(certmanager.missing_reason() is not None, reason=str(certmanager.missing_reason()))]
DIST = binaries.REPO / "dist" / "install.yaml"
CLAIM = "helm-node-boot-1"  # REFUSED names it
CERTIFICATES = ("homecluster-ca", "homecluster-webhook-cert", "homecluster-provider-server",
                "homecluster-provider-client")
CRDS = ("certificates.cert-manager.io", "certificaterequests.cert-manager.io", "issuers.cert-manager.io",
        "clusterissuers.cert-manager.io", "orders.acme.cert-manager.io", "challenges.acme.cert-manager.io")


class CertManagerOnTheRealNode(HelmOnTheRealNode):
    """The chart in cert-manager mode, after cert-manager itself (its pods on the real node too)."""

    mode = "cert-manager"
    install = "helm"  # or "dist": dist/install.yaml

    def kubectl_env(self) -> dict[str, str]:
        assert self.control_plane is not None
        return {**os.environ, "KUBECONFIG": str(self.control_plane.kubeconfig_path),
                "HOME": str(self.workdir / "kubectl-home")}

    async def _install(self) -> None:
        self.node_images = (nodeimages.archive("controller"), nodeimages.archive("runner"),
                            *certmanager.write_images(self.workdir / "images"))
        kubectl, env = str(binaries.find("kubectl")), self.kubectl_env()
        await run_program(kubectl, "apply", "--server-side", "-f", str(certmanager.crd_dir()), env=env)
        await established(self.api.kube, *CRDS)
        manifest = self.workdir / "cert-manager.yaml"
        manifest.write_text(yaml.safe_dump_all(certmanager.manifests(realnode.NODE)))
        await run_program(kubectl, "apply", "--server-side", "-f", str(manifest), env=env)
        if self.install == "helm":
            await super()._install()
            return
        await run_program(kubectl, "apply", "--server-side", "-f", str(DIST), env=env)
        await established(self.api.kube, "nodeclaims.infra.homecluster.dev")
        await self.api.kube.merge_patch(f"/apis/apps/v1/namespaces/{NS}/deployments/homecluster-controller",
                                        {"spec": {"template": {"spec": {
                                            "nodeSelector": {"kubernetes.io/hostname": realnode.NODE}}}}})

    def operator_pod_log(self) -> str:
        logs = sorted((self.workdir / "realnode" / "varlog" / "pods").glob("cert-manager_*/*/*.log"))
        return super().operator_pod_log() + "".join(f"\n--- {p.parent.parent.name}:\n{p.read_text()[-1500:]}"
                                                    for p in logs)


def condition(obj: dict, kind: str) -> str | None:
    return next((c["status"] for c in (obj.get("status") or {}).get("conditions") or [] if c["type"] == kind), None)


@pytest.mark.parametrize("install", ["helm", "dist"])
async def test_the_cert_manager_install_with_cert_manager_on_the_real_node(tmp_path: Path, install: str):
    skip_if_the_controller_image_is_stale()
    config = LabConfig(slots=1, driver="ipmi", boot_seconds=1, provider_address="127.0.0.1:0",
                       workdir=tmp_path / "lab", operator=False, control_plane="kubernetes", real_node=True)
    async with type("Lab", (CertManagerOnTheRealNode,), {"install": install})(config) as lab:
        kube = lab.api.kube
        # cert-manager's own pods, from the images built here, on the real node
        for program in certmanager.PROGRAMS:
            pods = (await kube.get(f"/api/v1/namespaces/{certmanager.NAMESPACE}/pods",
                                   query={"labelSelector": f"app.kubernetes.io/name={program}"}))["items"]
            assert len(pods) == 1 and ready(pods[0]), pods
            assert pods[0]["spec"]["nodeName"] == realnode.NODE
            assert pods[0]["spec"]["containers"][0]["image"] == certmanager.reference(program)

        # the chart's certificates, issued by cert-manager: the leaves signed by the CA cert-manager made
        certificates = {c["metadata"]["name"]: c for c in
                        (await kube.get(f"/apis/cert-manager.io/v1/namespaces/{NS}/certificates"))["items"]}
        assert set(certificates) == set(CERTIFICATES), sorted(certificates)
        assert all(condition(c, "Ready") == "True" for c in certificates.values()), certificates
        ca = (await kube.get(f"/api/v1/namespaces/{NS}/secrets/homecluster-ca"))["data"]["tls.crt"]
        leaf = (await kube.get(f"/api/v1/namespaces/{NS}/secrets/homecluster-webhook-cert"))["data"]
        assert leaf["ca.crt"] == ca and leaf["tls.crt"] != ca

        # cainjector put that CA into the webhook configuration the chart left without one
        webhook = await kube.get("/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations/"
                                 "homecluster-validating-webhook-configuration")
        assert [w["clientConfig"].get("caBundle") for w in webhook["webhooks"]] == [ca] * len(webhook["webhooks"])
        assert base64.b64decode(ca).startswith(b"-----BEGIN CERTIFICATE-----")

        pods = await lab.operator_pods()
        assert len(pods) == 1 and ready(pods[0]), pods
        assert pods[0]["spec"]["nodeName"] == realnode.NODE
        assert pods[0]["spec"]["containers"][0]["image"] == nodeimages.reference("controller")

        jobs = JobPods(lab)
        detail = lambda: f"{lab.operator_pod_log()}\n{jobs.evidence()}"  # noqa: E731
        reached = await boot(lab, CLAIM, SLOT, detail, jobs.look)
        assert reached == "ready", (lab.claims(), detail())
        assert lab.machine(SLOT).power_state() == "on"
        startup_pod(jobs, CLAIM, f"{SLOT}-bmc")
        assert f"HTTP 403: {REFUSED}" in await lab.second_claim_refusal()
        await release(lab, CLAIM, SLOT, detail, jobs.look)
        shutdown = shutdown_pod(jobs, CLAIM, f"{SLOT}-bmc")
        assert_pods_identities(audit_events(lab), [shutdown["metadata"]["name"]])
