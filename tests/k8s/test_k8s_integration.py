"""The integration scenarios on the real control plane, and RBAC both ways against their audit log.

One lab on kube-apiserver & co (RealLabCluster: the operator as its `homecluster-controller` ServiceAccount,
the lifecycle Jobs' pods run by the runner node with `homecluster-job` tokens, three IPMI machines), and
the scenarios of tests/integration run on it through the same code (their Pool on RealPoolApi, k8s_pool.py):
1. the provider end to end (test_provider_e2e.scale_up_then_down), over real gRPC to the operator's
   provider: IncreaseSize(2) -> two claims -> worker-01 and worker-02 on and ready; a workload pod bound to
   worker-02; DeleteNodes(worker-02) -> the shutdown Job cordons, drains (evicts the pod through the
   Eviction API) and powers it off -> the claim completes and goes;
2. side by side, on two slots:
   - a failed boot and the attempt after it (test_lifecycle.a_boot_past_its_deadline_fails_and_is_forced_off)
     on worker-02: a machine that never comes up, a claim with 6 s to go: failed DeadlineExceeded, its
     startup Job deleted, a forced shutdown Job powers the machine off, the slot's lastClaim says attempt 1;
     the next claim is attempt 2 and reaches ready;
   - the shutdown race (test_shutdown_race.claim_during_the_unwanted_shutdown) on worker-03: switched on
     through its BMC with ipmitool, nobody wants it, its shutdown Job (whose playbook cordons the Node
     itself) is running when a claim for the slot is made: the claim's startup waits for the Job to end,
     the claim is ready, and one boot window later the machine is still on.
Last, the real audit log of everything above is read (tests/install/audit_log.py) for both of our accounts:
no request refused; every grant of config/rbac used, or listed below with the reason it is not; none of the
requests each account must never make.

The module's tests share the lab and run in order; the audit test needs the scenarios before it.
"""
from __future__ import annotations

import asyncio
import uuid
from typing import Any

import pytest
import pytest_asyncio
from k8s_pool import real_lab_config, real_pool
from support.waits import until

from homecluster_lab.k8s import install
from homecluster_lab.node.kube import KubeError
from homecluster_lab.operator_proc import unavailable_reason

import audit_log
from provider_client import ProviderClient
from rbac_audit import JOB_SA, MANAGER_SA, Request, rules_for_service_account
from test_lifecycle import a_boot_past_its_deadline_fails_and_is_forced_off
from test_provider_e2e import scale_up_then_down
from test_shutdown_race import claim_during_the_unwanted_shutdown

pytestmark = pytest.mark.asyncio(loop_scope="module")
G = "infra.homecluster.dev"
# The scenarios' bounds (made for the in-memory lab) times 8: a boot took ~70 s and a power-off ~100 s on the
# real control plane at load 13 (test_k8s_lab_boot.py). The waits end when the thing happens.
BOUND_SCALE = 8.0
# The Jobs' timeouts: k8s_pool.REAL_ROOM. No scenario here waits a timeout out (the failed boot fails by its
# deadline); the shutdown race reads the longer boot window from the lab's settings.
DONE: set[str] = set()  # the scenarios that ran to the end, for the audit test

# Grants nothing in these scenarios uses, with the reason. Anything else granted and unused fails the test:
# drop it from config/rbac, or make a scenario use it.
OPERATOR_EXEMPT = {
    (G, "nodeclaims/finalizers", "update"):
        "needed only under the OwnerReferencesPermissionEnforcement admission plugin (a Job's ownerReference to "
        "its claim with blockOwnerDeletion), which a normal cluster may run; this control plane does not",
    (G, "nodes/finalizers", "update"): "the same admission plugin, for the Jobs a slot owns",
    ("batch", "jobs", "get"):
        "read only when a Job create answers 409 AlreadyExists and the operator's cache lacks that Job (a create "
        "that landed while its answer was lost): a race no scenario here can produce on demand",
    ("", "pods", "get"):
        "read only by the eviction webhook, which the lab registers for no scenario here (it registers the webhooks "
        "by URL, config/webhook's Service is not used); tests/k8s/test_k8s_job_confinement.py proves the grant",
}
# Grants a scenario may or may not use, by timing alone: neither idle nor stale is a finding.
OPERATOR_MAYBE = {
    ("", "events", "list"):
        "a startup pod's Events are read only while the pod is still Pending when the boot monitor looks",
    ("batch", "jobs", "delete"):
        "a startup Job is deleted only when its claim fails or is given back while the Job still runs; a machine "
        "that never boots fails its claim either by the Job's own failure or by its timeout, which is timing",
}
JOB_EXEMPT: dict[tuple[str, str, str], str] = {}

# What each account must never ask for, whatever the answer (docs/security.md): no Secret at all (the
# lifecycle pods' credentials reach them through the kubelet's volumes, never through these accounts), no
# deletion of Nodes or pods (a drain evicts), no RBAC writes; the Jobs' account touches none of our kinds.
NEVER = {
    MANAGER_SA: [Request("*", "", "secrets"), Request("delete", "", "nodes"), Request("delete", "", "pods"),
                 Request("create", "", "pods"), Request("create", "", "pods", "eviction"),
                 Request("update", "", "nodes"), Request("*", "rbac.authorization.k8s.io", "*"),
                 Request("*", "", "serviceaccounts", "token")],
    JOB_SA: [Request("*", "", "secrets"), Request("delete", "", "nodes"), Request("delete", "", "pods"),
             Request("*", G, "*"), Request("*", "batch", "*"), Request("*", "rbac.authorization.k8s.io", "*"),
             Request("*", "", "serviceaccounts", "token")],
}


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def real(tmp_path_factory: pytest.TempPathFactory):
    """(lab, pool, provider client): one RealLabCluster with three IPMI machines for the module."""
    if unavailable_reason():
        pytest.skip(unavailable_reason())
    config = real_lab_config(tmp_path_factory.mktemp("lab"), slots=3)
    async with real_pool(config, BOUND_SCALE) as (lab, pool):
        async with ProviderClient(lab.provider_address) as ca:
            yield lab, pool, ca


def workload_pod(node: str) -> dict[str, Any]:
    """A pod bound to `node`, as a scheduler would bind it. No controller owns it (the drain evicts such pods,
    its `force` defaults to true); no grace period, since the machine's kubelet runs nothing to stop."""
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "web-0", "namespace": "default"},
            "spec": {"nodeName": node, "terminationGracePeriodSeconds": 0,
                     "containers": [{"name": "web", "image": "registry.example/web:1"}]}}


async def test_provider_scale_up_then_delete_nodes(real) -> None:
    lab, _, ca = real
    pod_path = "/api/v1/namespaces/default/pods/web-0"

    async def bind_a_pod(node: dict[str, Any]) -> None:
        await lab.api.kube.create("/api/v1/namespaces/default/pods", workload_pod(node["metadata"]["name"]))

    await scale_up_then_down(lab, ca, before_delete=bind_a_pod)
    # the shutdown Job's drain evicted it (its `homecluster-job` token): gone before the machine went off
    with pytest.raises(KubeError) as gone:
        await lab.api.kube.get(pod_path)
    assert gone.value.status == 404, gone.value
    DONE.add("provider")


async def test_a_failed_boot_and_the_shutdown_race_side_by_side(real) -> None:
    _, pool, _ = real
    await asyncio.gather(a_boot_past_its_deadline_fails_and_is_forced_off(pool, slot="worker-02"),
                         claim_during_the_unwanted_shutdown(pool, slot="worker-03"))
    DONE.add("failed boot and race")


async def test_rbac_both_ways_on_the_real_audit_log(real) -> None:
    lab, _, _ = real
    if DONE != {"provider", "failed boot and race"}:
        pytest.skip(f"judges the scenarios' audit log, and only {sorted(DONE)} of them ran: run the whole module")
    assert lab.control_plane is not None and lab.control_plane.files is not None
    # the audit log is written as each request completes: once a marker request made now is in it, so are
    # the scenarios' requests, all answered before it
    marker = f"/api/v1/namespaces/default/configmaps/audit-marker-{uuid.uuid4().hex[:12]}"
    with pytest.raises(KubeError):
        await lab.api.kube.get(marker)

    async def logged() -> list[audit_log.Event] | None:
        events = audit_log.read(lab.control_plane.files.audit_log)
        return events if any(e.uri == marker for e in events) else None
    events = await until(logged, "the marker request in the audit log", timeout=30)
    findings = rbac_findings(events, install.kustomize(install.CONFIG / "rbac"))  # what the lab installed
    assert findings == [], "\n".join(findings)


def rbac_findings(events: list[audit_log.Event], objects: list[dict[str, Any]]) -> list[str]:
    """What is wrong with our two accounts' requests in `events` against the roles among `objects`."""
    findings = []
    for account, exempt, maybe in ((MANAGER_SA, OPERATOR_EXEMPT, OPERATOR_MAYBE), (JOB_SA, JOB_EXEMPT, {})):
        user = audit_log.service_account_user(account)
        if not audit_log.of(events, user):
            findings.append(f"no request of {user} in the audit log")
        result = audit_log.both_ways(events, user, rules_for_service_account(objects, *account), exempt)
        findings += [f"{user}: refused {r}" for r in result.refused]
        findings += [f"{user}: granted, never used in the whole run: {g}" for g in result.idle if g not in maybe]
        findings += [f"{user}: exempt, yet used (or no longer granted): {g}" for g in result.stale]
        findings += [f"{user}: must never ask {e.verb} {e.uri} (answered {e.code})"
                     for e in audit_log.never_made(events, user, NEVER[account])]
    return findings
