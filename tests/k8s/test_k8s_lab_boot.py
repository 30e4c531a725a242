"""The lab on the real control plane boots a machine for a claim and powers it off when the claim goes.

RealLabCluster (`homecluster lab --control-plane kubernetes`): etcd, kube-apiserver, kube-controller-manager,
kube-scheduler; our CRDs, namespace and RBAC as a user applies them; the operator as its ServiceAccount; the
runner node's kubelet as `system:node:lab-runner`; one simulated machine speaking IPMI. A NodeClaim for its slot:
the operator creates the startup Job, the real Job controller its pod, the real scheduler binds the pod to the
runner node, our kubelet runs ansible-runner with the collection's startup playbook, the machine powers on,
its kubelet registers the Node, the claim reaches `ready`. Deleting the claim: the shutdown Job cordons and
drains (with the pod's own `homecluster-job` token) and powers the machine off, and the claim is gone.
The audit log says who did what: no part of ours was refused anything.
"""
from __future__ import annotations

import datetime as dt
import json
from typing import Any

import pytest
from support.waits import until

from homecluster_lab.config import LabConfig
from homecluster_lab.executor.runnernode import binding_lag
from homecluster_lab.k8s.install import CNI_USER
from homecluster_lab.k8s.labcluster import RUNNER, RealLabCluster
from homecluster_lab.operator_proc import unavailable_reason

pytestmark = pytest.mark.asyncio(loop_scope="module")
NS = "homecluster-system"
SLOT = "worker-01"
CLAIM = "boot-1"
# Generous bounds: the real control plane, the operator and ansible-runner share 2 loaded cores here
# (a boot took ~70 s and a power-off ~100 s at load 13). The waits end when the thing happens.
BOUND = 400.0


def _claim() -> dict[str, Any]:
    now = dt.datetime.now(dt.timezone.utc).replace(microsecond=0)
    stamp = lambda t: t.isoformat().replace("+00:00", "Z")  # noqa: E731
    return {"apiVersion": "infra.homecluster.dev/v2alpha1", "kind": "NodeClaim", "metadata": {"name": CLAIM},
            "spec": {"slotRef": SLOT, "requestedAt": stamp(now), "deadlineAt": stamp(now + dt.timedelta(minutes=20))}}


def _story(lab: RealLabCluster) -> str:
    """What a wait that gave up says: the claims and the operator's log then."""
    return f"claims: {lab.claims()}\noperator log:\n{lab.operator.log_tail() if lab.operator else ''}"


def _audit(lab: RealLabCluster) -> list[dict[str, Any]]:
    assert lab.control_plane is not None and lab.control_plane.files is not None
    return [json.loads(line) for line in lab.control_plane.files.audit_log.read_text().splitlines()]


async def test_claim_boots_a_machine_through_real_jobs_and_gives_it_back(tmp_path) -> None:
    if unavailable_reason():
        pytest.skip(unavailable_reason())
    config = LabConfig(slots=1, driver="ipmi", boot_seconds=1, provider_address="127.0.0.1:0", workdir=tmp_path,
                       require_operator=True, control_plane="kubernetes", ready_timeout=180,
                       settings={"job_poll_interval": "2s", "shutdown_holdoff": "1m"})
    async with RealLabCluster(config) as lab:
        machine = lab.machine(SLOT)
        assert machine.power_state() == "off"
        await lab.api.create(_claim())

        def phase() -> str | None:
            claim = next((c for c in lab.claims() if c["metadata"]["name"] == CLAIM), None)
            return ((claim or {}).get("status") or {}).get("phase")

        def ready_or_failed() -> str | None:
            return phase() if phase() in ("ready", "failed") else None

        assert await until(ready_or_failed, "the claim to be ready", BOUND, detail=lambda: _story(lab)) == "ready", \
            lab.claims()
        assert machine.power_state() == "on"
        node = lab.api.get("nodes", SLOT)
        assert node is not None and node["spec"]["providerID"] == f"homecluster://{SLOT}"
        assert {c["type"]: c["status"] for c in node["status"]["conditions"]}["Ready"] == "True"

        # the startup Job's pod: made by the real Job controller, bound by the real scheduler to the runner
        # (the claim is ready once the Node is; the Job's last task, its report, may still be running)
        async def finished() -> dict[str, Any] | None:
            [pod] = (await lab.api.kube.get(f"/api/v1/namespaces/{NS}/pods",
                                            {"labelSelector": f"job-name={CLAIM}-startup"}))["items"]
            return pod if pod["status"].get("phase") in ("Succeeded", "Failed") else None

        pod = await until(finished, "the startup pod to finish", BOUND, interval=0.5)
        assert pod["spec"]["nodeName"] == RUNNER
        log = lab.executor.log_file(NS, pod["metadata"]["name"]).read_text()
        assert pod["status"]["phase"] == "Succeeded", log
        assert "PLAY [Power a machine on]" in log and "failed=0" in log, log

        await lab.api.kube.delete(f"/apis/infra.homecluster.dev/v2alpha1/nodeclaims/{CLAIM}")
        await until(lambda: phase() is None and not any(c["metadata"]["name"] == CLAIM for c in lab.claims()),
                    "the claim to be gone", BOUND, detail=lambda: _story(lab))
        assert machine.power_state() == "off"

        events = _audit(lab)

    def by(user: str) -> list[dict[str, Any]]:
        return [e for e in events if e["user"]["username"] == user]

    def did(user: str) -> set[tuple[str, str, str]]:
        return {(e["verb"], (e.get("objectRef") or {}).get("resource", ""),
                 (e.get("objectRef") or {}).get("subresource", "")) for e in by(user)
                if e["responseStatus"]["code"] < 300}

    operator = f"system:serviceaccount:{NS}:homecluster-controller"
    job_account = f"system:serviceaccount:{NS}:homecluster-job"
    node = f"system:node:{RUNNER}"
    assert ("create", "jobs", "") in did(operator)
    assert ("create", "pods", "") in did("system:serviceaccount:kube-system:job-controller")
    assert ("create", "pods", "binding") in did("system:kube-scheduler")
    assert {("patch", "pods", "status"), ("create", "serviceaccounts", "token")} <= did(node)
    # the machine's kubelet as its node; its readiness taint lifted by the lab's "CNI" identity, since
    # NodeRestriction forbids a kubelet to touch its Node's taints
    machine_node = f"system:node:{SLOT}"
    assert {("create", "nodes", ""), ("patch", "nodes", "status"), ("create", "leases", "")} <= did(machine_node)
    assert ("patch", "nodes", "") in did(CNI_USER)
    # the shutdown's cordon-and-drain container, with its pod's own token: it read the Node, listed its pods
    assert {("get", "nodes", ""), ("list", "pods", "")} <= did(job_account)
    assert ("create", "events", "") in did(operator)  # in "default" too: config/rbac's events Role
    # every 403 of our identities but the lag the runner retries (see binding_lag)
    refused = [(e["user"]["username"], e["verb"], e["requestURI"]) for e in events
               if e["responseStatus"]["code"] == 403
               and e["user"]["username"] in (operator, job_account, node, machine_node, CNI_USER)
               and not (e["user"]["username"] == node and binding_lag(e))]
    assert refused == [], refused
