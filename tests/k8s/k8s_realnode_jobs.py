"""Shared by the real node's tests whose lifecycle Jobs run as containers there (RealLabCluster.jobs_on_real_node):
the Job pods as seen, their confinement, the shutdown's `cordon-drain` init container, and the audit log's verdict
on the pods' own identities.

Used by test_k8s_realnode_bmc_jobs (the lab's `homecluster run` as operator) and by every install path
(test_k8s_realnode_operator: dist/install-self-signed.yaml; test_k8s_realnode_helm: the chart, self-signed and
secrets; test_k8s_realnode_certmanager: the chart and dist/install.yaml with cert-manager), whose operator is the
install's own pod. Import by name: `from k8s_realnode_jobs import JobPods, assert_confined, ...`.
"""
from __future__ import annotations

import json
from typing import Any

from homecluster_lab.k8s import nodeconfig, nodeimages, realnode

NS = "homecluster-system"
OPERATOR_ACCOUNT = f"system:serviceaccount:{NS}:homecluster-controller"


def job_account(namespace: str) -> str:
    """The Jobs' ServiceAccount where the Jobs run (the chart's jobNamespace, else the operator's)."""
    return f"system:serviceaccount:{namespace}:homecluster-job"


JOB_ACCOUNT = job_account(NS)
OPERATOR_POD_PREFIX = "homecluster-controller-"  # the Deployment's pods (dist/ and the chart)
POD_NAME = "authentication.kubernetes.io/pod-name"  # a pod-bound token's pod, in the audit event's user.extra
TOKEN_MOUNT = {"name": "kube-api-access", "mountPath": "/var/run/secrets/kubernetes.io/serviceaccount",
               "readOnly": True}
# the operator's writes of one claim's cycle (boot and release), as the audit log names them
CLAIM_CYCLE_WRITES = {("create", "jobs", ""), ("patch", "nodeclaims", "status")}
# the init container's reads before it cordons and drains (through the `kubernetes` Service)
DRAIN_READS = {("get", "nodes", ""), ("list", "pods", "")}


class JobPods:
    """The Job pods as last seen, and their containers' logs as last read (the operator removes finished Jobs,
    and the kubelet their pods' logs). Call `look()` in a wait's check, so nothing between two reads is lost."""

    def __init__(self, lab: Any):
        self.lab, self.pods, self.logs = lab, {}, {}

    async def look(self) -> None:
        for pod in (await self.lab.api.kube.get(f"/api/v1/namespaces/{self.lab.config.namespace}/pods"))["items"]:
            if pod["metadata"].get("labels", {}).get("job-name"):
                self.pods[pod["metadata"]["name"]] = pod
        for path in (self.lab.workdir / "realnode" / "varlog" / "pods").glob("*/*/*.log"):
            try:
                self.logs[f"{path.parent.parent.name}/{path.parent.name}"] = path.read_text()
            except OSError:  # removed with its pod
                pass

    def of_job(self, prefix: str) -> list[dict[str, Any]]:
        return [p for p in self.pods.values() if p["metadata"]["labels"]["job-name"].startswith(prefix)]

    def log(self, pod: dict[str, Any], container: str) -> str:
        key = f"{NS}_{pod['metadata']['name']}_{pod['metadata']['uid']}/{container}"
        return self.logs.get(key, "")

    def evidence(self) -> str:
        return json.dumps({"pods": {n: p["status"] for n, p in self.pods.items()},
                           "logs": {k: v[-1500:] for k, v in self.logs.items()}}, indent=1)[-8000:]


def assert_confined(pod: dict[str, Any], secret: str | None, *, host_network: bool = False) -> None:
    """The operator's manifest, as the real node ran it: non-root, read-only root, no capability, the pod network
    (the host's for a `wol` power-on: `host_network`), the slot's Secret as read-only files (none: `secret` None),
    no token in the BMC container, the runner image."""
    spec = pod["spec"]
    assert spec["nodeName"] == realnode.NODE and bool(spec.get("hostNetwork")) is host_network, spec
    assert spec["securityContext"]["runAsNonRoot"] and spec["securityContext"]["runAsUser"] == 1000
    [container] = spec["containers"]
    assert container["image"] == nodeimages.reference("runner")
    confinement = container["securityContext"]
    assert confinement["readOnlyRootFilesystem"] is True and confinement["capabilities"] == {"drop": ["ALL"]}
    volumes = {v["name"]: v for v in spec["volumes"]}
    mounts = {m["name"]: m for m in container["volumeMounts"]}
    assert "kube-api-access" not in mounts
    if secret is None:  # a magic packet needs no credentials: no Secret in the pod at all
        assert "credentials" not in volumes and "credentials" not in mounts, spec
    else:
        assert volumes["credentials"]["secret"]["secretName"] == secret
        assert mounts["credentials"]["readOnly"] is True
    status = pod["status"]
    if host_network:  # the node's own address; the cluster's DNS still, as the manifest asks of such a pod
        assert status.get("podIP") == status.get("hostIP"), status
        assert spec["dnsPolicy"] == "ClusterFirstWithHostNet", spec
    else:  # an address of its own in the pod CIDR (the node's, the bridge's, is in it too)
        assert status.get("podIP", "").startswith(nodeconfig.POD_CIDR.rsplit(".", 1)[0] + "."), status
        assert status.get("podIP") != status.get("hostIP"), status


def _ran(status: dict[str, Any] | None) -> bool:
    """A container status last seen running, or finished with 0."""
    state = (status or {}).get("state") or {}
    return "running" in state or (state.get("terminated") or {}).get("exitCode") == 0


def startup_pod(pods: JobPods, claim: str, secret: str | None, *, host_network: bool = False) -> dict[str, Any]:
    """The claim's one startup pod, confined (assert_confined), its container seen started from the runner image
    by the real node's containerd (running, or finished with 0: the operator removes a finished Job)."""
    [pod] = pods.of_job(f"{claim}-startup")
    assert_confined(pod, secret, host_network=host_network)
    [status] = pod["status"].get("containerStatuses") or [None]
    assert status is not None and _ran(status), (pod["status"], pods.evidence())
    assert status["image"] == nodeimages.reference("runner") and status["containerID"].startswith("containerd://")
    return pod


def shutdown_pod(pods: JobPods, claim: str, secret: str) -> dict[str, Any]:
    """The claim's one shutdown pod, confined, whose `cordon-drain` init container (alone with the projected
    token) ran to its end with 0 before the IPMI container started."""
    [pod] = pods.of_job(f"{claim}-shutdown")
    assert_confined(pod, secret)
    [init] = pod["spec"]["initContainers"]
    assert init["name"] == "cordon-drain" and TOKEN_MOUNT in init["volumeMounts"], init
    assert init["image"] == nodeimages.reference("runner")
    volumes = {v["name"]: v for v in pod["spec"]["volumes"]}
    assert any("serviceAccountToken" in s for s in volumes["kube-api-access"]["projected"]["sources"])
    [done] = pod["status"].get("initContainerStatuses") or [None]
    assert done is not None and (done["state"].get("terminated") or {}).get("exitCode") == 0, \
        (pod["status"], pods.evidence())
    return pod


def audit_events(lab: Any) -> list[dict[str, Any]]:
    """The control plane's audit log, one JSON event per line (a last line still being written is left out)."""
    out = []
    for line in lab.control_plane.files.audit_log.read_text().splitlines():
        try:
            out.append(json.loads(line))
        except json.JSONDecodeError:
            pass
    return out


def _of(events: list[dict[str, Any]], user: str) -> list[dict[str, Any]]:
    return [e for e in events if e["user"]["username"] == user]


def _request(event: dict[str, Any]) -> tuple[str, str, str]:
    ref = event.get("objectRef") or {}
    return event["verb"], ref.get("resource", ""), ref.get("subresource", "")


def _pod_of(event: dict[str, Any]) -> str:
    return ((event["user"].get("extra") or {}).get(POD_NAME) or [""])[0]


def assert_operator_pod_wrote(events: list[dict[str, Any]],
                              writes: set[tuple[str, str, str]] = CLAIM_CYCLE_WRITES) -> None:
    """The operator's ServiceAccount made `writes` with 2xx, and every request of it came with a token bound to an
    operator pod (the Deployment's own token, not one requested for it from outside)."""
    operator = _of(events, OPERATOR_ACCOUNT)
    wrote = {_request(e) for e in operator if e["responseStatus"]["code"] < 300}
    assert writes <= wrote, sorted(wrote)
    unbound = [(e["verb"], e["requestURI"], _pod_of(e)) for e in operator
               if not _pod_of(e).startswith(OPERATOR_POD_PREFIX)]
    assert unbound == [], f"the operator's account, not from its pod: {unbound[:10]}"


def assert_drain_token_read(events: list[dict[str, Any]], shutdown_pods: list[str],
                            job_namespace: str = NS) -> None:
    """The Job's ServiceAccount made the init container's reads with 2xx, and every request of it came with the
    token bound to one of `shutdown_pods` (the projected token of the pod that cordoned and drained)."""
    job = _of(events, job_account(job_namespace))
    read = {_request(e) for e in job if e["responseStatus"]["code"] < 300}
    assert DRAIN_READS <= read, sorted(read)
    unbound = [(e["verb"], e["requestURI"], _pod_of(e)) for e in job if _pod_of(e) not in shutdown_pods]
    assert unbound == [], f"the Job's account, not from {shutdown_pods}: {unbound[:10]}"


def assert_never_refused(events: list[dict[str, Any]], *users: str) -> None:
    """None of `users` got a 403 (the authorizer, or an admission plugin)."""
    refused = [(e["user"]["username"], e["verb"], e["requestURI"]) for e in events
               if e["user"]["username"] in users and e["responseStatus"]["code"] == 403]
    assert refused == [], f"refused: {refused}"


def assert_pods_identities(events: list[dict[str, Any]], shutdown_pods: list[str],
                           job_namespace: str = NS) -> None:
    """The audit log of a claim's cycle with the operator and its Jobs as pods: the operator pod's writes, the
    drain's token, and no 403 for either ServiceAccount (the Jobs' in `job_namespace`)."""
    assert_operator_pod_wrote(events)
    assert_drain_token_read(events, shutdown_pods, job_namespace)
    assert_never_refused(events, OPERATOR_ACCOUNT, job_account(job_namespace))
