"""node_drain's pod selectors, disable_eviction and skip_wait_for_delete_timeout, through ansible-playbook
against the lab API server (its field and label selectors, Eviction API with PodDisruptionBudgets, and
finalizers that keep a deleted pod Terminating, as the kubelet of a NotReady node never confirms a deletion)."""
from __future__ import annotations

import time

from hc_ansible import run_module, run_modules
from test_node_modules import create, get, lab, node, owner, pod  # noqa: F401  pylint: disable=unused-import

HOLD = "example.com/never-confirmed"  # a finalizer nobody removes: the pod stays Terminating


def kube(lab, **extra):  # noqa: F811
    return dict({"kubeconfig": str(lab.server.kubeconfig_path), "name": "worker-01", "retry_interval": 0.2}, **extra)


def test_selectors_limit_the_drain_to_the_pods_they_match(tmp_path, lab):  # noqa: F811
    node(lab, "worker-01")
    rs = owner(lab, "ReplicaSet", "web")
    sys_rs = owner(lab, "ReplicaSet", "sys", namespace="kube-system")
    pod(lab, "web-1", owner_ref=rs, labels={"app": "web"})
    pod(lab, "db-1", owner_ref=rs, labels={"app": "db"})
    pod(lab, "sys-1", owner_ref=sys_rs, labels={"app": "web"}, namespace="kube-system")
    by_label, proc, _ = run_module(tmp_path, "homecluster.infra.node_drain",
                                   kube(lab, pod_selectors=["app=web"], pod_field_selectors=["metadata.namespace=default"],
                                        timeout=15))
    assert not by_label.get("failed"), proc.stdout[-3000:]
    assert by_label["evicted"] == ["default/web-1"] and by_label["remaining"] == []
    assert get(lab, "pods", "db-1", "default") is not None and get(lab, "pods", "sys-1", "kube-system") is not None
    by_alias, proc, _ = run_module(tmp_path, "homecluster.infra.node_drain",
                                   kube(lab, label_selectors=["app in (web)"], timeout=15))
    assert by_alias["evicted"] == ["kube-system/sys-1"], proc.stdout[-3000:]
    assert get(lab, "pods", "db-1", "default") is not None
    lists = [e for e in lab.server.audit.select("pods", verbs=["list"]) if "spec.nodeName=worker-01" in e.field_selector]
    assert any(e.field_selector == "spec.nodeName=worker-01,metadata.namespace=default" for e in lists)


def test_disable_eviction_deletes_what_a_pdb_would_refuse(tmp_path, lab):  # noqa: F811
    node(lab, "worker-01")
    pod(lab, "db-0", owner_ref=owner(lab, "ReplicaSet", "db"), labels={"app": "db"})
    create(lab, {"apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
                 "metadata": {"name": "db", "namespace": "default"},
                 "spec": {"minAvailable": 1, "selector": {"matchLabels": {"app": "db"}}}})
    (evicting, deleting), proc, _ = run_modules(tmp_path, "homecluster.infra.node_drain",
                                                [kube(lab, timeout=2), kube(lab, timeout=15, disable_eviction=True)])
    assert evicting["failed"] and "PodDisruptionBudget" in evicting["msg"]
    assert not deleting.get("failed"), proc.stdout[-3000:]
    assert deleting["evicted"] == ["default/db-0"] and get(lab, "pods", "db-0", "default") is None
    deletes = lab.server.audit.select("pods", verbs=["delete"])
    assert [(e.name, e.subresource) for e in deletes] == [("db-0", "")]


def test_skip_wait_for_delete_timeout_ends_the_wait_for_a_deletion_nobody_confirms(tmp_path, lab):  # noqa: F811
    node(lab, "worker-01")
    rs = owner(lab, "ReplicaSet", "web")
    create(lab, {"apiVersion": "v1", "kind": "Pod",
                 "metadata": {"name": "web-1", "namespace": "default", "labels": {"app": "web"},
                              "ownerReferences": [rs], "finalizers": [HOLD]},
                 "spec": {"nodeName": "worker-01", "containers": [{"name": "c", "image": "busybox"}]},
                 "status": {"phase": "Running"}}, keep_status=True)

    waiting, proc, _ = run_module(tmp_path, "homecluster.infra.node_drain", kube(lab, timeout=3))
    assert waiting["failed"] and waiting["remaining"] == ["default/web-1"], proc.stdout[-3000:]
    assert "still terminating" in waiting["msg"]
    assert get(lab, "pods", "web-1", "default")["metadata"].get("deletionTimestamp")

    started = time.monotonic()
    skipped, proc, _ = run_module(tmp_path, "homecluster.infra.node_drain",
                                  kube(lab, timeout=60, skip_wait_for_delete_timeout=1))
    assert not skipped.get("failed"), proc.stdout[-3000:]
    assert skipped["left_terminating"] == ["default/web-1"] and skipped["remaining"] == []
    assert time.monotonic() - started < 30, "the drain waited instead of leaving the Terminating pod"
