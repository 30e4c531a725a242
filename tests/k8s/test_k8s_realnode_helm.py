"""`helm install` of charts/homecluster onto the lab's real node, as a user runs it: then upgrade and uninstall.

The lab (`--control-plane kubernetes --real-node`, no operator of its own) brings the control plane, the real
node (with the controller image `make images` built, under the chart's own image name), the runner node and one
IPMI machine. Its install step is the namespace (Pod Security `restricted`) and
`helm install homecluster charts/homecluster --set certificates.mode=self-signed`, one value added: the pod's
nodeSelector names the real node (the lab's other Nodes are our own kubelets, which run no containers). The chart
brings the CRDs, RBAC, Services, the webhook configuration and the Deployment; the operator's pod makes its
certificates and patches the caBundle itself. The second run is `certificates.mode=secrets`: the Secrets of
scripts/make-certs.py first and their CA as `webhook.caBundle`, as docs/install.md says; and its pool is the one
a user with Wake-on-LAN machines runs (docs/install.md, "Wake-on-LAN"): one `wol` slot (on with a magic packet,
off over SSH), its Jobs and its Secret in a namespace of their own (`jobNamespace=homecluster-jobs`, Pod Security
`privileged` there, `restricted` in the release's), so its startup Job, made by the chart's pod, runs with the
host's network and wakes the machine through the lab's segment on the host's loopback. Either way
kube-apiserver reaches the pod's webhook through the Service (kube-proxy). Then, with helm's Deployment as the
only operator:
- the pod is Ready from the image, as the chart's Deployment says (probes, the ServiceAccount's token);
- a claim boots the machine; its startup Job, made by the chart's pod, runs on the real node as a container of
  the runner image (imported beside the controller's; the Group's `spec.jobs.nodeSelector` names the node),
  confined (non-root, read-only root, every capability dropped, the slot's Secret as files); a second claim for
  the slot is refused by the webhook, with its exact text;
- `helm upgrade --reuse-values --set operator.logLevel=debug`: the pod rolls (a new pod with the new flag, the old
  one gone) and the new one still works: it refuses the second claim again and, when the claim is deleted, its
  shutdown Job powers the machine off (the finalizer handled, as docs/install.md says: claims first), the Job's
  `cordon-drain` init container run to 0 with its projected token; the audit log shows the operator pods' own
  tokens made the writes (create jobs, patch nodeclaims/status), the drain's token the reads, and neither
  ServiceAccount (the Jobs' one where the Jobs run) refused (k8s_realnode_jobs);
- `helm uninstall`: every object of the release is gone; what stays is what docs/install.md says stays (the
  CRDs and the objects made from them, the certificates' Secrets and the operator's leader Lease); the Jobs'
  namespace holds only the user's Secret.
"""
from __future__ import annotations

import sys
from pathlib import Path

import pytest
import yaml
from k8s_install_proof import BOUND, run_program
from k8s_realnode import (boot, refusal, release, second_claim_refusal, skip_if_the_controller_image_is_stale,
                          skip_unless_here)
from k8s_realnode_jobs import JobPods, assert_pods_identities, audit_events, shutdown_pod, startup_pod
from support.waits import until
from test_k8s_realnode_operator import OperatorPodLab

from homecluster_lab.config import LabConfig
from homecluster_lab.k8s import binaries, install, nodeimages, realnode
from homecluster_lab.topology import secret_name

from helm_chart import helm_env  # tests/install: on sys.path by tests/conftest.py

pytestmark = [pytest.mark.asyncio(loop_scope="module"), skip_unless_here("controller", "runner"),
              pytest.mark.skipif(binaries.helm() is None, reason=str(binaries.helm_missing_reason()))]
NS = "homecluster-system"
SLOT = "worker-01"
CLAIM, SECOND = "helm-node-boot-1", "helm-node-boot-2"
CHART = binaries.REPO / "charts" / "homecluster"
ON_THE_NODE = f"nodeSelector.kubernetes\\.io/hostname={realnode.NODE}"  # helm's escaped dot: one key
REFUSED = refusal(SLOT, CLAIM)
LEAVES = {("secrets", "homecluster-webhook-cert"), ("secrets", "homecluster-provider-server"),
          ("secrets", "homecluster-provider-client")}
# each run's power method and the namespace of its Jobs and Secrets (the lab's namespace): see the docstring
RUNS = {"self-signed": ("ipmi", NS), "secrets": ("wol", "homecluster-jobs")}
# what `helm uninstall` leaves in the release's namespace, as docs/install.md says, by certificates.mode: the
# operator's leader Lease, and the certificates' Secrets (self-signed: the operator made them and the CA's, which
# helm never knew; secrets: the user made them); the slot's Secret, the user's, where the Jobs run
LEFT = {mode: {("leases", "homecluster-operator")} | LEAVES | extra
        for mode, extra in (("self-signed", {("secrets", "homecluster-ca")}), ("secrets", set()))}
KINDS = {"secrets": "/api/v1", "configmaps": "/api/v1", "services": "/api/v1", "serviceaccounts": "/api/v1",
         "pods": "/api/v1", "deployments": "/apis/apps/v1", "replicasets": "/apis/apps/v1",
         "jobs": "/apis/batch/v1", "roles": "/apis/rbac.authorization.k8s.io/v1",
         "rolebindings": "/apis/rbac.authorization.k8s.io/v1", "leases": "/apis/coordination.k8s.io/v1"}
BUILT_IN = {("configmaps", "kube-root-ca.crt"), ("serviceaccounts", "default")}


class HelmOnTheRealNode(OperatorPodLab):
    """OperatorPodLab (the operator as a pod on the real node, its webhook reached through the Service before the
    pool is made) whose install is the chart instead of the dist file."""

    def helm_env(self) -> dict[str, str]:
        assert self.control_plane is not None
        return helm_env(self.control_plane.kubeconfig_path, self.workdir / "helm-home")

    async def helm(self, *args: str) -> str:
        return await run_program(str(binaries.helm()), *args, env=self.helm_env())

    mode = "self-signed"

    async def _install(self) -> None:
        await self.api.create_or_keep(install.namespace_manifest(NS, host_network=False))
        values = ["--set", f"certificates.mode={self.mode}", "--set", ON_THE_NODE]
        jobs = self.config.namespace
        if jobs != NS:  # as docs/install.md: the Jobs' namespace first, labelled for what its Jobs need
            await self.api.create_or_keep(install.namespace_manifest(jobs, host_network=self.config.driver == "wol"))
            values += ["--set", f"jobNamespace={jobs}"]
        if self.mode == "secrets":  # as docs/install.md: scripts/make-certs.py's Secrets first, then their CA
            out = self.workdir / "certs"
            await run_program(sys.executable, str(binaries.REPO / "scripts" / "make-certs.py"), "--namespace", NS,
                              "--out", str(out), env=self.helm_env())
            await run_program(str(binaries.find("kubectl")), "apply", "-f", str(out / "secrets.yaml"),
                              env=self.helm_env())
            secret = await self.api.kube.get(f"/api/v1/namespaces/{NS}/secrets/homecluster-webhook-cert")
            values += ["--set", f"webhook.caBundle={secret['data']['ca.crt']}"]
        done = await self.helm("install", "homecluster", str(CHART), "--namespace", NS, *values)
        assert "STATUS: deployed" in done, done

    async def operator_pods(self) -> list[dict]:
        return [p for p in (await self.api.kube.get(f"/api/v1/namespaces/{NS}/pods"))["items"]
                if p["metadata"]["name"].startswith("homecluster-controller-")]

    async def second_claim_refusal(self) -> str:
        return await second_claim_refusal(self, SECOND, SLOT)


def ready(pod: dict) -> bool:
    return any(c["type"] == "Ready" and c["status"] == "True" for c in pod["status"].get("conditions") or [])


@pytest.mark.parametrize("mode", ["self-signed", "secrets"])
async def test_helm_install_upgrade_and_uninstall_on_the_real_node(tmp_path: Path, mode: str):
    skip_if_the_controller_image_is_stale()
    driver, jobs_ns = RUNS[mode]
    secret = secret_name(SLOT, driver)
    config = LabConfig(slots=1, driver=driver, namespace=jobs_ns, boot_seconds=1, provider_address="127.0.0.1:0",
                       workdir=tmp_path / "lab", operator=False, control_plane="kubernetes", real_node=True,
                       settings={"job_poll_interval": "2s"})
    async with type("Lab", (HelmOnTheRealNode,), {"mode": mode})(config) as lab:
        kube = lab.api.kube

        async def one_ready_pod() -> dict | None:
            pods = await lab.operator_pods()
            return pods[0] if len(pods) == 1 and ready(pods[0]) else None

        pod = await until(one_ready_pod, "the chart's operator pod Ready (its probes)", BOUND,
                          detail=lab.operator_pod_log)
        assert pod["spec"]["nodeName"] == realnode.NODE
        assert pod["spec"]["containers"][0]["image"] == nodeimages.reference("controller")

        jobs = JobPods(lab)
        detail = lambda: f"{lab.operator_pod_log()}\n{jobs.evidence()}"  # noqa: E731
        reached = await boot(lab, CLAIM, SLOT, detail, jobs.look)
        assert reached == "ready", (lab.claims(), detail())
        assert lab.machine(SLOT).power_state() == "on"
        wol = driver == "wol"  # the host's network, and no Secret: a magic packet needs no credentials
        startup_pod(jobs, CLAIM, None if wol else secret, host_network=wol)
        if wol:  # one magic packet, from the host's network (the segment is on its loopback)
            assert (await lab.fleet.wol_segment()).received == [lab.machine(SLOT).mac]
        answer = await lab.second_claim_refusal()
        assert f"HTTP 403: {REFUSED}" in answer, (answer, detail())

        # helm upgrade with a changed value: the pod rolls, and the new one serves
        await lab.helm("upgrade", "homecluster", str(CHART), "--namespace", NS, "--reuse-values",
                       "--set", "operator.logLevel=debug")

        async def rolled() -> dict | None:
            pods = await lab.operator_pods()
            new = [p for p in pods if p["metadata"]["uid"] != pod["metadata"]["uid"]]
            return new[0] if len(pods) == 1 and len(new) == 1 and ready(new[0]) else None

        new = await until(rolled, "the upgraded operator pod alone and Ready", BOUND, detail=lab.operator_pod_log)
        assert "--log-level=debug" in new["spec"]["containers"][0]["args"], new["spec"]["containers"][0]
        assert "--log-level=debug" not in pod["spec"]["containers"][0].get("args", [])

        # the new pod's webhook (the informer that answers it has seen the claim once it refuses it)
        async def refuses_again() -> str | None:
            message = await lab.second_claim_refusal()
            return message if f"HTTP 403: {REFUSED}" in message else None

        await until(refuses_again, "the upgraded pod to refuse the second claim", BOUND,
                    detail=lab.operator_pod_log)

        # remove, as docs/install.md says: the claims first (their finalizers power the machines off)
        await release(lab, CLAIM, SLOT, detail, jobs.look)
        shutdown = shutdown_pod(jobs, CLAIM, secret)
        if wol:  # off over SSH, from the pod network
            assert lab.fleet.ssh_commands(SLOT) == ["poweroff"]
        assert_pods_identities(audit_events(lab), [shutdown["metadata"]["name"]], jobs_ns)
        manifest = await lab.helm("get", "manifest", "homecluster", "--namespace", NS)
        await lab.helm("uninstall", "homecluster", "--namespace", NS, "--wait")
        released = [(d["kind"], d["metadata"]["name"]) for d in yaml.safe_load_all(manifest) if d]
        assert ("Deployment", "homecluster-controller") in released, released
        kubectl = str(binaries.find("kubectl"))
        out = await run_program(kubectl, "get", "--namespace", NS, "--ignore-not-found", "-o", "name",
                                *(f"{kind.lower()}/{name}" for kind, name in released), env=lab.helm_env())
        assert out.strip() == "", f"left after helm uninstall:\n{out}"

        left = {NS: LEFT[mode], jobs_ns: {("secrets", secret)}} if jobs_ns != NS else \
            {NS: LEFT[mode] | {("secrets", secret)}}
        seen: dict[str, set[tuple[str, str]]] = {}

        async def only_the_documented_left() -> bool:
            for namespace in left:
                seen[namespace] = {(kind, item["metadata"]["name"]) for kind, prefix in KINDS.items()
                                   for item in (await kube.get(f"{prefix}/namespaces/{namespace}/{kind}"))["items"]}
                seen[namespace] -= BUILT_IN
            return seen == left

        await until(only_the_documented_left, "the namespaces to hold only what docs/install.md says stays", BOUND,
                    detail=lambda: "; ".join(f"{n}: not documented: {sorted(seen.get(n, set()) - want)}, "
                                             f"documented, absent: {sorted(want - seen.get(n, set()))}"
                                             for n, want in left.items()))
        crds = (await kube.get("/apis/apiextensions.k8s.io/v1/customresourcedefinitions"))["items"]
        assert {c["metadata"]["name"] for c in crds} >= {"nodeclaims.infra.homecluster.dev"}  # helm keeps CRDs
