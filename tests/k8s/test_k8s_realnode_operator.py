"""The operator as a pod on the real node, from the shipped `dist/install-self-signed.yaml`, and a claim that boots
a machine with it.

`kubectl apply --server-side -f dist/install-self-signed.yaml` is the lab's install step; the file's Deployment
runs the controller image `make images` built (imported into the node's containerd under the file's name) with
the file's flags, probes, in-memory volumes and ServiceAccount token (the pod reaches kube-apiserver through
the `kubernetes` Service). kube-apiserver calls the webhook through the webhook Service's ClusterIP, which
kube-proxy routes to the pod (a second claim for a booted slot is refused with the webhook's exact text). One
change to the file: the Deployment's nodeSelector names the real node, since the lab's other Nodes are our own
kubelets, which run no containers. The pool's machines stay simulated; their lifecycle Jobs run on the real node
too, as containers of the runner image (imported beside the controller's; the Group's `spec.jobs.nodeSelector`
names the node, RealLabCluster.jobs_on_real_node), made by the operator pod. A claim's cycle proves, as the
install runs it: the startup pod ran ansible-runner in the runner image, non-root, read-only root, every
capability dropped, the slot's Secret as files (the BMC powers on only with its password); the shutdown pod's
`cordon-drain` init container ran to 0 with its projected token; the audit log shows the operator pod's own token
made the writes (create jobs, patch nodeclaims/status) and the drain's token the reads, and neither
ServiceAccount got a 403 (k8s_realnode_jobs).

The second test kills the operator's process (SIGKILL of the container's pid, found through the node's
containerd) and proves the pod survives it: the kubelet restarts the container, its probes pass again and it
acts again (its webhook refuses a Group, a claim made after the restart goes ready, its startup Job a container).
"""
from __future__ import annotations

import os
import signal

import pytest
import pytest_asyncio
from k8s_install_proof import BOUND, run_program
from k8s_realnode import (boot, established, refusal, release, second_claim_refusal,
                          skip_if_the_controller_image_is_stale, skip_unless_here)
from k8s_realnode_jobs import JobPods, assert_pods_identities, audit_events, shutdown_pod, startup_pod
from support.waits import until
from test_k8s_dist_lab import DIST, DistLab, NS

from homecluster_lab.config import LabConfig
from homecluster_lab.k8s import binaries, nodeimages, realnode
from homecluster_lab.k8s.labcluster import RealLabCluster

pytestmark = [pytest.mark.asyncio(loop_scope="module"), skip_unless_here("controller", "runner")]
SLOTS = ("worker-01", "worker-02")
CLAIMS = ("pod-boot-1", "pod-boot-after-kill")
SECOND = "pod-boot-second"  # refused: SLOTS[0] has CLAIMS[0]
DEPLOYMENT = f"/apis/apps/v1/namespaces/{NS}/deployments/homecluster-controller"


class OperatorPodLab(RealLabCluster):
    """The lab whose install is the dist file, whose operator is the file's Deployment on the real node, and whose
    lifecycle Jobs are containers of the runner image there."""

    last_answer = ""
    kills = 0  # the operator containers this module killed (the kubelet restarts each)
    node_images = (nodeimages.archive("controller"), nodeimages.archive("runner"))
    jobs_on_real_node = True
    _refused_by_our_webhook = DistLab._refused_by_our_webhook

    async def _install(self) -> None:
        cp = self.control_plane
        assert cp is not None
        kubectl = str(binaries.find("kubectl"))
        env = {**os.environ, "KUBECONFIG": str(cp.kubeconfig_path), "HOME": str(self.workdir / "kubectl-home")}
        await run_program(kubectl, "apply", "--server-side", "-f", str(DIST), env=env)
        await established(self.api.kube, "groups.infra.homecluster.dev", "nodes.infra.homecluster.dev",
                          "nodeclaims.infra.homecluster.dev")
        await self.api.kube.merge_patch(DEPLOYMENT, {"spec": {"template": {"spec": {
            "nodeSelector": {"kubernetes.io/hostname": realnode.NODE}}}}})

    async def _start_real_node(self) -> None:
        await super()._start_real_node()
        # the pool is created next, through the webhooks: wait until the API server reaches the pod's webhook
        await until(self._refused_by_our_webhook,
                    "the API server to call the operator pod's webhook through its Service", BOUND,
                    detail=self.operator_pod_log)

    def operator_pod_log(self) -> str:
        logs = sorted((self.workdir / "realnode" / "varlog" / "pods").glob(f"{NS}_homecluster-controller-*/manager/*.log"))
        return f"last answer: {self.last_answer}\n" + (logs[-1].read_text()[-3000:] if logs else "(no pod log yet)")


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def lab(tmp_path_factory: pytest.TempPathFactory):
    skip_if_the_controller_image_is_stale()
    config = LabConfig(slots=len(SLOTS), driver="ipmi", boot_seconds=1, provider_address="127.0.0.1:0",
                       workdir=tmp_path_factory.mktemp("operator-pod") / "lab", operator=False,
                       control_plane="kubernetes", real_node=True)
    async with OperatorPodLab(config) as lab:
        yield lab


async def operator_pod(lab: OperatorPodLab) -> dict:
    pods = [p for p in (await lab.api.kube.get(f"/api/v1/namespaces/{NS}/pods"))["items"]
            if p["metadata"]["name"].startswith("homecluster-controller-")]
    assert len(pods) == 1, pods
    return pods[0]


async def test_the_dist_files_operator_runs_as_a_pod_on_the_real_node_and_a_claim_cycles(lab: OperatorPodLab):
    pod = await operator_pod(lab)
    assert pod["spec"]["nodeName"] == realnode.NODE
    assert pod["spec"]["containers"][0]["image"] == nodeimages.reference("controller")
    pods = JobPods(lab)
    detail = lambda: f"{lab.operator_pod_log()}\n{pods.evidence()}"  # noqa: E731
    reached = await boot(lab, CLAIMS[0], SLOTS[0], detail, pods.look)
    assert reached == "ready", (lab.claims(), detail())
    assert lab.machine(SLOTS[0]).power_state() == "on"
    startup_pod(pods, CLAIMS[0], f"{SLOTS[0]}-bmc")
    # kube-apiserver asks the pod's webhook, through the Service, about a second claim for the slot
    assert f"HTTP 403: {refusal(SLOTS[0], CLAIMS[0])}" in await second_claim_refusal(lab, SECOND, SLOTS[0])
    await release(lab, CLAIMS[0], SLOTS[0], detail, pods.look)
    shutdown = shutdown_pod(pods, CLAIMS[0], f"{SLOTS[0]}-bmc")
    assert_pods_identities(audit_events(lab), [shutdown["metadata"]["name"]])
    status = (await operator_pod(lab))["status"]["containerStatuses"][0]
    assert status["ready"] and status["started"] and status["restartCount"] == lab.kills, status


async def test_the_operator_pod_survives_a_kill_of_its_process(lab: OperatorPodLab):
    before = (await operator_pod(lab))["status"]["containerStatuses"][0]
    assert before["ready"], before
    node = lab.real_node
    assert node is not None
    pid = node.task_pid(before["containerID"].removeprefix("containerd://"))
    assert pid is not None, before
    os.kill(pid, signal.SIGKILL)
    lab.kills += 1

    async def restarted_and_ready() -> dict | None:
        status = (await operator_pod(lab))["status"]["containerStatuses"][0]
        return status if status["restartCount"] == before["restartCount"] + 1 and status["ready"] else None
    after = await until(restarted_and_ready, "the kubelet to restart the killed operator container and its "
                        "probes to pass", BOUND, detail=lab.operator_pod_log)
    assert after["lastState"]["terminated"]["exitCode"] == 128 + signal.SIGKILL, after
    assert after["containerID"] != before["containerID"] and after["started"], after
    # it acts again: the API server reaches its webhook through the Service, and its handlers boot a machine
    await until(lab._refused_by_our_webhook, "the restarted operator's webhook to refuse a Group", BOUND,
                detail=lab.operator_pod_log)
    pods = JobPods(lab)
    reached = await boot(lab, CLAIMS[1], SLOTS[1], lab.operator_pod_log, pods.look)
    assert reached == "ready", (lab.claims(), lab.operator_pod_log(), pods.evidence())
    assert lab.machine(SLOTS[1]).power_state() == "on"
    startup_pod(pods, CLAIMS[1], f"{SLOTS[1]}-bmc")
