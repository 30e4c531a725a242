"""RBAC: no wildcards, every binding resolves, and each identity is allowed what its code calls -- no more.

The expected requests are written down from the code (kube/client.py's callers, provider/writer.py,
plugins/modules): if a component starts calling something new, the integration suite's audit
comparison (rbac_audit.check_manager_rbac_against_audit) catches it against the lab's request log.
"""
from __future__ import annotations

from dataclasses import dataclass

import pytest

from install_helpers import CONFIG, find, render
from rbac_audit import (
    JOB_SA, MANAGER_SA, Request, Rule, allows, check_manager_rbac_against_audit, requests_from_audit,
    rules_for_service_account, uncovered, unused,
)

NS = "homecluster-system"
G = "infra.homecluster.dev"

# What the operator does (lifecycle/, provider/writer.py; kube/client.py is the only client).
MANAGER_CALLS = [
    *(Request(v, G, r) for r in ("groups", "nodes", "nodeclaims") for v in ("list", "watch")),
    Request("create", G, "nodeclaims"), Request("delete", G, "nodeclaims", name="w1-abc"),
    Request("patch", G, "nodeclaims", name="w1-abc"),
    Request("patch", G, "nodeclaims", "status", name="w1-abc"),
    Request("patch", G, "nodes", "status", name="w1"),
    Request("patch", G, "nodes", name="w1"),  # the slot's finalizer only (lifecycle/slotremoval.py)
    *(Request(v, "", "nodes") for v in ("list", "watch")), Request("patch", "", "nodes", name="w1"),
    Request("create", "batch", "jobs", namespace=NS), Request("get", "batch", "jobs", namespace=NS, name="j"),
    Request("list", "batch", "jobs", namespace=NS), Request("watch", "batch", "jobs", namespace=NS),
    Request("delete", "batch", "jobs", namespace=NS, name="j"),
    Request("list", "", "pods", namespace=NS), Request("list", "", "events", namespace=NS),  # lifecycle/jobpods.py
    Request("create", "", "events", namespace="default"),
    Request("list", "apiextensions.k8s.io", "customresourcedefinitions"),  # kopf's scanning
    Request("watch", "apiextensions.k8s.io", "customresourcedefinitions"),
    Request("list", "", "namespaces"), Request("watch", "", "namespaces"),  # kopf's namespace observation
]
# What the manager must never be able to do.
MANAGER_FORBIDDEN = [
    Request("get", "", "secrets", namespace=NS, name="worker-01-bmc"), Request("list", "", "secrets"),
    # a slot's spec is Git's: no update (a whole object); its patch writes metadata.finalizers only, which RBAC
    # cannot narrow (lifecycle/slotremoval.py; the GitOps test reads the slots' managedFields)
    Request("update", G, "nodes", name="w1"), Request("delete", G, "nodes", name="w1"),
    Request("create", "batch", "jobs", namespace="kube-system"), Request("delete", "", "nodes", name="w1"),
    Request("create", "", "pods", "eviction", namespace="default", name="p"),
    Request("escalate", "rbac.authorization.k8s.io", "clusterroles"),
    # Events only where the API server keeps those of cluster-scoped objects ("default"), not cluster-wide
    Request("create", "", "events", namespace="kube-system"), Request("create", "", "events", namespace=NS),
    Request("create", "", "events"),
]
# What the playbooks do (plugins/modules/node_cordon.py, plugins/module_utils/kube_drain.py).
JOB_CALLS = [
    Request("get", "", "nodes", name="w1"), Request("patch", "", "nodes", name="w1"),
    Request("list", "", "pods"),  # all namespaces, field selector spec.nodeName
    Request("create", "", "pods", "eviction", namespace="apps", name="web-1"),
    Request("get", "", "pods", namespace="apps", name="web-1"),
]
JOB_FORBIDDEN = [
    Request("delete", "", "pods", namespace="apps", name="web-1"), Request("get", "", "secrets", namespace=NS),
    Request("list", "", "nodes"), Request("create", "batch", "jobs", namespace=NS),
    Request("patch", G, "nodeclaims", "status", name="c"),
]


@pytest.fixture(scope="module")
def roles(default_objects):
    return [o for o in default_objects if o["kind"] in ("Role", "ClusterRole")]


@pytest.mark.parametrize("directory", ["default", "autoscaler"])
def test_no_wildcard_verbs_or_resources(directory):
    for role in [o for o in render(CONFIG / directory) if o["kind"] in ("Role", "ClusterRole")]:
        for rule in role["rules"]:
            for field in ("verbs", "resources", "apiGroups"):
                assert not any("*" in v for v in rule.get(field, [])), \
                    f"{role['kind']} {role['metadata']['name']} has a wildcard in {field}: {rule}"


@pytest.mark.parametrize("directory", ["default", "autoscaler"])
def test_every_binding_names_a_role_and_subject_that_exist(directory):
    objects = render(CONFIG / directory)
    accounts = {(o["metadata"]["name"], o["metadata"]["namespace"]) for o in find(objects, "ServiceAccount")}
    for binding in [o for o in objects if o["kind"] in ("RoleBinding", "ClusterRoleBinding")]:
        for s in binding["subjects"]:
            assert (s["name"], s["namespace"]) in accounts, f"{binding['metadata']['name']} binds a missing {s}"
    for account in accounts:
        assert rules_for_service_account(objects, *account), f"ServiceAccount {account} is bound to nothing"


def test_manager_may_do_what_its_code_does(default_objects):
    rules = rules_for_service_account(default_objects, *MANAGER_SA)
    assert uncovered(rules, MANAGER_CALLS) == []


def test_manager_may_not_do_more(default_objects):
    rules = rules_for_service_account(default_objects, *MANAGER_SA)
    assert uncovered(rules, MANAGER_FORBIDDEN) == MANAGER_FORBIDDEN


def test_job_identity_may_cordon_and_drain_and_nothing_else(default_objects):
    rules = rules_for_service_account(default_objects, *JOB_SA)
    assert uncovered(rules, JOB_CALLS) == []
    assert uncovered(rules, JOB_FORBIDDEN) == JOB_FORBIDDEN


def test_manager_reads_no_secret_anywhere(roles):
    for role in roles:
        for rule in role["rules"]:
            assert "secrets" not in rule.get("resources", []), f"{role['kind']} {role['metadata']['name']}"


def test_job_service_account_matches_the_job_builder(default_objects):
    from homecluster.jobs import DEFAULT_SERVICE_ACCOUNT
    assert find(default_objects, "ServiceAccount", DEFAULT_SERVICE_ACCOUNT)


# -------------------------------------------------------------- the comparison function, on a hand-made log

@dataclass(frozen=True)
class Entry:  # the fields of homecluster_lab.apiserver.AuditEntry that the comparison reads
    verb: str
    resource: str
    group: str
    namespace: str
    name: str
    subresource: str
    user_agent: str


def test_rbac_semantics_of_allows():
    rule = Rule(("",), ("pods", "pods/eviction"), ("get", "create"))
    assert allows(rule, Request("create", "", "pods", "eviction", "ns", "p"))
    assert not allows(rule, Request("create", "", "pods", "status", "ns", "p"))
    assert not allows(rule, Request("get", "apps", "pods", namespace="ns"))
    named = Rule(("coordination.k8s.io",), ("leases",), ("get", "update", "list"), ("ca",))
    assert allows(named, Request("update", "coordination.k8s.io", "leases", namespace="n", name="ca"))
    assert not allows(named, Request("update", "coordination.k8s.io", "leases", namespace="n", name="other"))
    assert not allows(named, Request("list", "coordination.k8s.io", "leases", namespace="n"))
    # a list or watch by fieldSelector=metadata.name=ca carries the name: resourceNames apply (RequestInfo)
    assert allows(named, Request("list", "coordination.k8s.io", "leases", namespace="n", name="ca"))
    assert not allows(named, Request("list", "coordination.k8s.io", "leases", namespace="n", name="other"))
    creator = Rule(("",), ("secrets",), ("create", "deletecollection"), ("ca",))
    assert not allows(creator, Request("create", "", "secrets", namespace="n", name="ca"))  # never by name
    assert not allows(creator, Request("deletecollection", "", "secrets", namespace="n", name="ca"))
    local = Rule(("batch",), ("jobs",), ("list",), namespace="a")
    assert allows(local, Request("list", "batch", "jobs", namespace="a"))
    assert not allows(local, Request("list", "batch", "jobs", namespace="b"))
    assert not allows(local, Request("list", "batch", "jobs"))  # all namespaces needs a cluster-wide grant
    assert allows(Rule(("*",), ("*",), ("*",)), Request("delete", "x", "y", "z", "n", "o"))


def test_comparison_on_a_hand_made_log(default_objects):
    log = [
        Entry("discovery", "", "", "", "", "", "homecluster-operator"),
        Entry("list", "nodeclaims", G, "", "", "", "homecluster-operator"),
        Entry("patch", "nodeclaims", G, "", "w1-x", "status", "homecluster-operator"),
        Entry("create", "jobs", "batch", NS, "w1-x-startup", "", "homecluster-operator"),
        Entry("get", "secrets", "", NS, "worker-01-bmc", "", "homecluster-operator"),  # never granted
        Entry("create", "jobs", "batch", "default", "stray", "", "homecluster-operator"),  # wrong namespace
        Entry("get", "secrets", "", NS, "x", "", "kubectl/v1.32"),  # someone else: filtered out
    ]
    requests = requests_from_audit(log, user_agent="homecluster-operator")
    assert len(requests) == 5
    rules = rules_for_service_account(default_objects, *MANAGER_SA)
    assert [str(r) for r in uncovered(rules, requests)] == [
        f"get secrets (core) in namespace {NS} name=worker-01-bmc",
        "create jobs (batch) in namespace default name=stray",
    ]
    assert (G, "nodeclaims", "list") not in unused(rules, requests)
    assert ("batch", "jobs", "delete") in unused(rules, requests)


def test_the_integration_hook_reads_config_default():
    log = [Entry("patch", "nodes", G, "", "w1", "status", "homecluster-operator"),
           Entry("update", "nodes", G, "", "w1", "", "homecluster-operator")]
    refused = check_manager_rbac_against_audit(log)
    assert refused == [Request("update", G, "nodes", name="w1")]


def test_a_binding_to_a_missing_role_is_an_error():
    objects = [{"kind": "ClusterRoleBinding", "metadata": {"name": "b"},
                "roleRef": {"kind": "ClusterRole", "name": "typo"},
                "subjects": [{"kind": "ServiceAccount", "name": "sa", "namespace": "n"}]}]
    with pytest.raises(LookupError, match="typo"):
        rules_for_service_account(objects, "sa", "n")
