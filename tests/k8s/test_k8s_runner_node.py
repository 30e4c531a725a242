"""Our runner kubelet (homecluster_lab.executor.runnernode) on the real control plane, as a node.

It authenticates with a client certificate `CN=system:node:<name>, O=system:nodes`, so the Node authorizer
and NodeRestriction judge it; kube-controller-manager's Job controller creates the pods, kube-scheduler binds
them to the runner's Node (a nodeSelector on its label), and the kubelet runs them as local processes and
reports their status, which the real Job controller turns into the Job's conditions. A pod that mounts a
ServiceAccount token gets its own (TokenRequest bound to the pod): the API server says who it is. A running
pod deleted is killed and its deletion finished. The audit log shows the node's requests were its own.
"""
from __future__ import annotations

import json
from pathlib import Path

import pytest
import pytest_asyncio

from homecluster_lab.executor import ExecutorConfig
from homecluster_lab.executor.runnernode import RUNNER_LABEL, RunnerNode, binding_lag
from homecluster_lab.k8s.controlplane import RealControlPlane
from homecluster_lab.k8s.install import node_kubeconfig
from homecluster_lab.k8s.realapi import RealApi
from support.waits import until

pytestmark = pytest.mark.asyncio(loop_scope="module")
NODE = "lab-runner"
NS = "runner-test"
ACCOUNT = "runner-test-account"

# Asks the API server who the pod's KUBECONFIG authenticates as (a SelfSubjectReview), with the standard
# library only: the answer is printed for the test to read in the pod's log.
WHOAMI = """
import json, os, ssl, base64, tempfile, urllib.request, yaml
doc = yaml.safe_load(open(os.environ["KUBECONFIG"]))
cluster, user = doc["clusters"][0]["cluster"], doc["users"][0]["user"]
ca = tempfile.NamedTemporaryFile(delete=False)
ca.write(base64.b64decode(cluster["certificate-authority-data"])); ca.close()
req = urllib.request.Request(cluster["server"] + "/apis/authentication.k8s.io/v1/selfsubjectreviews",
    data=json.dumps({"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"}).encode(),
    headers={"Authorization": "Bearer " + user["token"], "Content-Type": "application/json"}, method="POST")
answer = json.load(urllib.request.urlopen(req, context=ssl.create_default_context(cafile=ca.name)))
print("WHOAMI", answer["status"]["userInfo"]["username"])
print("TOKEN-FILE-MATCHES", open(os.environ["TOKEN_FILE"]).read() == user["token"])
"""


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def api(real_k8s: RealControlPlane):
    async with RealApi(real_k8s.url, real_k8s.kubeconfig_path, real_k8s.pki.ca.cert_pem) as api:
        await api.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NS}})
        await api.create({"apiVersion": "v1", "kind": "ServiceAccount",
                          "metadata": {"name": ACCOUNT, "namespace": NS}})
        yield api


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def runner(real_k8s: RealControlPlane, api: RealApi, tmp_path_factory: pytest.TempPathFactory):
    workdir = tmp_path_factory.mktemp("runner")
    kubeconfig = node_kubeconfig(workdir / "kubeconfig", real_k8s.pki, real_k8s.url, NODE)
    cfg = ExecutorConfig(kubeconfig_path=kubeconfig, workdir=workdir / "pods", node_name=NODE, pod_nice=None,
                         collections_path=None)
    async with RunnerNode(cfg, lease_seconds=2) as node:
        yield node


def _job(name: str, command: list[str], **pod: object) -> dict:
    return {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": name, "namespace": NS},
            "spec": {"backoffLimit": 0, "template": {"spec": {
                "restartPolicy": "Never", "nodeSelector": {RUNNER_LABEL: "true"},
                "automountServiceAccountToken": False, "terminationGracePeriodSeconds": 30,
                "containers": [{"name": "main", "image": "lab.invalid/none:0", "command": command}], **pod}}}}




async def _job_condition(api: RealApi, name: str) -> str | None:
    job = await api.kube.get(f"/apis/batch/v1/namespaces/{NS}/jobs/{name}")
    for cond in (job.get("status") or {}).get("conditions") or []:
        if cond["type"] in ("Complete", "Failed") and cond["status"] == "True":
            return cond["type"]
    return None


async def _pods_of(api: RealApi, job: str) -> list[dict]:
    listing = await api.kube.get(f"/api/v1/namespaces/{NS}/pods", {"labelSelector": f"job-name={job}"})
    return listing["items"]


async def test_node_registers_and_becomes_schedulable(runner: RunnerNode, api: RealApi) -> None:
    async def ready_and_untainted():
        node = await api.kube.get(f"/api/v1/nodes/{NODE}")
        ready = {c["type"]: c["status"] for c in node["status"].get("conditions") or []}.get("Ready")
        # the real node lifecycle controller lifts the not-ready taint TaintNodesByCondition put on at creation
        return node if ready == "True" and not (node["spec"].get("taints")) else None

    node = await until(ready_and_untainted, "the runner Node to be Ready without taints", timeout=90)
    assert node["metadata"]["labels"][RUNNER_LABEL] == "true"
    lease = await api.kube.get(f"/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/{NODE}")
    assert lease["spec"]["holderIdentity"] == NODE


async def test_job_runs_to_complete_through_the_real_job_controller(runner: RunnerNode, api: RealApi) -> None:
    await api.create(_job("hello", ["sh", "-c", "echo hello from $HOSTNAME"]))
    assert await until(lambda: _job_condition(api, "hello"), "Job hello to finish", timeout=90) == "Complete"
    [pod] = await _pods_of(api, "hello")
    assert pod["spec"]["nodeName"] == NODE  # bound by kube-scheduler
    assert pod["status"]["phase"] == "Succeeded"
    assert pod["status"]["containerStatuses"][0]["state"]["terminated"]["exitCode"] == 0
    log = runner.workdir / NS / pod["metadata"]["name"] / "container.log"
    assert f"hello from {pod['metadata']['name']}" in log.read_text()


async def test_failed_container_fails_the_job(runner: RunnerNode, api: RealApi) -> None:
    await api.create(_job("fails", ["sh", "-c", "echo broken; exit 3"]))
    assert await until(lambda: _job_condition(api, "fails"), "Job fails to finish", timeout=90) == "Failed"
    [pod] = await _pods_of(api, "fails")
    assert pod["status"]["phase"] == "Failed"
    assert pod["status"]["containerStatuses"][0]["state"]["terminated"]["exitCode"] == 3


async def test_pod_gets_its_own_service_account_token(runner: RunnerNode, api: RealApi) -> None:
    token_volume = {"name": "kube-api-access", "projected": {"sources": [
        {"serviceAccountToken": {"path": "token", "expirationSeconds": 3607}}]}}
    job = _job("whoami", ["python", "-c", WHOAMI], serviceAccountName=ACCOUNT, volumes=[token_volume])
    container = job["spec"]["template"]["spec"]["containers"][0]
    container["volumeMounts"] = [{"name": "kube-api-access", "mountPath": "/var/run/secrets/kubernetes.io/sa"}]
    container["env"] = [{"name": "TOKEN_FILE", "value": "/var/run/secrets/kubernetes.io/sa/token"}]
    await api.create(job)
    outcome = await until(lambda: _job_condition(api, "whoami"), "Job whoami to finish", timeout=90)
    [pod] = await _pods_of(api, "whoami")
    log = (runner.workdir / NS / pod["metadata"]["name"] / "container.log").read_text()
    assert outcome == "Complete", log
    assert f"WHOAMI system:serviceaccount:{NS}:{ACCOUNT}" in log
    assert "TOKEN-FILE-MATCHES True" in log


async def test_deleted_running_pod_is_killed_and_its_deletion_finished(runner: RunnerNode, api: RealApi) -> None:
    await api.create(_job("sleeper", ["sleep", "600"]))

    async def running():
        pods = await _pods_of(api, "sleeper")
        return pods[0] if pods and pods[0]["status"].get("phase") == "Running" else None

    pod = await until(running, "the sleeper pod to run", timeout=90)
    name = pod["metadata"]["name"]
    handle = runner.kubelet.handles[(NS, name)]
    process = handle.process
    await api.kube.request("DELETE", f"/api/v1/namespaces/{NS}/pods/{name}")  # graceful: 30 s

    async def gone():
        try:
            await api.kube.get(f"/api/v1/namespaces/{NS}/pods/{name}")
            return False
        except Exception as exc:  # noqa: BLE001 - KubeError 404 is what we wait for
            return getattr(exc, "status", None) == 404

    await until(gone, "the deleted pod to be gone", timeout=25)  # well inside its 30 s grace period
    assert process.proc.returncode is not None


async def test_audit_log_shows_the_node_identity_and_no_refusal(runner: RunnerNode, real_k8s: RealControlPlane,
                                                                api: RealApi) -> None:
    events = [json.loads(line) for line in Path(real_k8s.files.audit_log).read_text().splitlines()]
    mine = [e for e in events if e["user"]["username"] == f"system:node:{NODE}"]
    assert "system:nodes" in mine[0]["user"]["groups"]
    done = {(e["verb"], (e.get("objectRef") or {}).get("resource"), (e.get("objectRef") or {}).get("subresource"))
            for e in mine if e["responseStatus"]["code"] < 300}
    assert {("create", "nodes", None), ("patch", "nodes", "status"), ("watch", "pods", None),
            ("patch", "pods", "status"), ("create", "serviceaccounts", "token"), ("delete", "pods", None)} <= done, done
    refused = [(e["verb"], e["requestURI"], e["responseStatus"]["code"]) for e in mine
               if e["responseStatus"]["code"] == 403 and not binding_lag(e)]
    assert refused == [], refused
