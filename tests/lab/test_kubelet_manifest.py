"""What the simulated kubelet writes, as pure functions: it keeps what others own."""
from __future__ import annotations

import datetime as dt

from homecluster_lab.machines.machine import Identity, Taint
from homecluster_lab.node import manifest as nm

CILIUM = Taint("node.cilium.io/agent-not-ready")
IDENT = Identity("m1", "slot-1", "52:54:00:00:00:01", "node-1", "k3s://node-1", labels={"pool": "small"},
                 readiness_taints=(CILIUM,))
T0 = dt.datetime(2026, 3, 4, 9, 38, 15, tzinfo=dt.timezone.utc)
CORDON = {"key": "node.kubernetes.io/unschedulable", "effect": "NoSchedule"}
CA = {"key": "ToBeDeletedByClusterAutoscaler", "value": "123", "effect": "NoSchedule"}


def test_registration_carries_identity_labels_and_readiness_taints():
    body = nm.registration(IDENT, True)
    assert body["metadata"] == {"name": "node-1", "labels": {
        "kubernetes.io/hostname": "node-1", "kubernetes.io/os": "linux", "kubernetes.io/arch": "amd64", "pool": "small"}}
    assert body["spec"] == {"providerID": "k3s://node-1", "taints": [{"key": CILIUM.key, "effect": "NoSchedule"}]}
    assert "taints" not in nm.registration(IDENT, False)["spec"]


def test_merge_taints_keeps_others_and_their_order():
    current = [CORDON, CA]
    added = nm.merge_taints(current, (CILIUM,), True)
    assert added == [CORDON, CA, CILIUM.to_api()]
    assert nm.merge_taints(added, (CILIUM,), False) == [CORDON, CA]
    assert nm.merge_taints(None, (CILIUM,), False) == []


def test_re_registration_never_touches_cordon_annotations_or_provider_id():
    node = {"metadata": {"name": "node-1", "resourceVersion": "42", "labels": {"kubernetes.io/hostname": "node-1",
                                                                               "team": "x"},
                         "annotations": {"infra.homecluster.dev/cordoned-by": "homecluster"}},
            "spec": {"unschedulable": True, "providerID": "k3s://elsewhere", "taints": [CORDON]}}
    patch = nm.registration_patch(IDENT, node, True)
    assert patch["metadata"]["resourceVersion"] == "42"  # conditional on what we read
    assert "annotations" not in patch["metadata"] and "unschedulable" not in patch["spec"]
    assert "providerID" not in patch["spec"]  # immutable once set
    assert patch["metadata"]["labels"] == {"kubernetes.io/os": "linux", "kubernetes.io/arch": "amd64", "pool": "small"}
    assert patch["spec"]["taints"] == [CORDON, CILIUM.to_api()]


def test_nothing_to_patch_when_already_registered():
    node = {"metadata": {"resourceVersion": "1", "labels": nm.registration(IDENT, True)["metadata"]["labels"]},
            "spec": {"providerID": "k3s://node-1", "taints": [CILIUM.to_api()]}}
    assert nm.registration_patch(IDENT, node, True) is None
    assert nm.taints_patch(IDENT, node, True) is None
    assert nm.taints_patch(IDENT, node, False) == {"metadata": {"resourceVersion": "1"}, "spec": {"taints": []}}


def test_conditions_keep_transition_time_while_status_holds():
    first = nm.conditions("True", None, T0)
    ready = {c["type"]: c for c in first}
    assert ready["Ready"]["status"] == "True" and ready["MemoryPressure"]["status"] == "False"
    later = T0 + dt.timedelta(seconds=30)
    again = {c["type"]: c for c in nm.conditions("True", first, later)}
    assert again["Ready"]["lastTransitionTime"] == "2026-03-04T09:38:15Z"
    assert again["Ready"]["lastHeartbeatTime"] == "2026-03-04T09:38:45Z"
    down = {c["type"]: c for c in nm.conditions("False", first, later)}
    assert down["Ready"]["status"] == "False" and down["Ready"]["lastTransitionTime"] == "2026-03-04T09:38:45Z"
    unknown = {c["type"]: c for c in nm.conditions("Unknown", first, later)}
    assert {c["status"] for c in unknown.values()} == {"Unknown"}
    assert unknown["Ready"]["reason"] == "NodeStatusUnknown"


def test_full_status_and_lease():
    status = nm.full_status(IDENT, nm.conditions("True", None, T0), 3)
    assert status["capacity"] == {"cpu": "4", "memory": "8Gi", "pods": "110"} == status["allocatable"]
    assert status["nodeInfo"]["bootID"] == nm.boot_id(IDENT, 3) != nm.boot_id(IDENT, 4)
    lease = nm.lease(IDENT, "uid-1", T0, 40)
    assert lease["metadata"]["namespace"] == "kube-node-lease"
    assert lease["metadata"]["ownerReferences"][0]["uid"] == "uid-1"
    assert lease["spec"]["renewTime"] == "2026-03-04T09:38:15.000000Z"
