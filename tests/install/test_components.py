"""The optional components under config/components, rendered with the real kubectl on top of config/default.

An overlay as docs/install.md tells a user to write (config/default plus `components:`) is rendered with
`kubectl kustomize`; every object validates offline (manifest_check), and each component has the shape
it promises: the PrometheusRule carries exactly the alerts of docs/metrics.md, the NetworkPolicy selects
the operator's pod and admits its four named ports and no other, the aggregated ClusterRoles cover the
three kinds with the aggregation labels, and `edit` writes no status. (tests/k8s/test_k8s_aggregated_roles.py
checks the roles on the real authorizer.)
"""
from __future__ import annotations

import os
import re

import pytest
import yaml

from install_helpers import CONFIG, REPO, find, render
from manifest_check import check

COMPONENTS = ("prometheus-rule", "network-policy", "aggregated-roles")
KINDS = {"groups", "nodes", "nodeclaims"}


@pytest.fixture(scope="module")
def overlay(tmp_path_factory):
    here = tmp_path_factory.mktemp("overlay")
    rel = os.path.relpath(CONFIG, here)
    (here / "kustomization.yaml").write_text(yaml.safe_dump({
        "apiVersion": "kustomize.config.k8s.io/v1beta1", "kind": "Kustomization",
        "resources": [f"{rel}/default"], "components": [f"{rel}/components/{c}" for c in COMPONENTS]}))
    return render(here)


def test_every_object_validates(overlay):
    assert [e for o in overlay for e in check(o)] == []
    # the components add to the install, they change nothing in it
    base = {(o["kind"], o["metadata"]["name"]) for o in render(CONFIG / "default")}
    added = {(o["kind"], o["metadata"]["name"]) for o in overlay} - base
    assert added == {("PrometheusRule", "homecluster"), ("NetworkPolicy", "homecluster-controller"),
                     ("ClusterRole", "homecluster-view"), ("ClusterRole", "homecluster-edit")}


def test_the_prometheus_rule_is_the_alerts_of_the_docs(overlay):
    text = (REPO / "docs" / "metrics.md").read_text()
    block = re.search(r"## Alerts worth having\n\n```yaml\n(.*?)```", text, re.S).group(1)
    documented = yaml.safe_load(yaml.safe_load(block)["data"]["homecluster.rules.yaml"])["groups"]
    (rule,) = find(overlay, "PrometheusRule")
    assert rule["metadata"]["namespace"] == "homecluster-system"
    assert rule["spec"]["groups"] == documented
    assert len(documented[0]["rules"]) >= 8 and all(r["alert"].startswith("Homecluster") for r in documented[0]["rules"])


def test_the_network_policy_admits_the_operators_ports_only(overlay):
    (policy,) = find(overlay, "NetworkPolicy")
    (deployment,) = find(overlay, "Deployment", "homecluster-controller")
    assert policy["metadata"]["namespace"] == deployment["metadata"]["namespace"]
    pod_labels = deployment["spec"]["template"]["metadata"]["labels"]
    selector = policy["spec"]["podSelector"]["matchLabels"]
    assert selector.items() <= pod_labels.items(), "the policy does not select the operator's pod"
    assert policy["spec"]["policyTypes"] == ["Ingress"]
    container_ports = {p["name"]: p["containerPort"] for c in deployment["spec"]["template"]["spec"]["containers"]
                       for p in c["ports"]}
    admitted = {p["port"] for rule in policy["spec"]["ingress"] for p in rule["ports"]}
    # health has no rule: the kubelet probes from the pod's own node, which a NetworkPolicy always admits
    assert admitted == set(container_ports) - {"health"} == {"webhook", "grpc", "metrics"}
    # each port the operator listens on is one of these (its flags in the Deployment)
    args = " ".join(deployment["spec"]["template"]["spec"]["containers"][0]["args"])
    for port in container_ports.values():
        assert f":{port}" in args


def test_aggregated_roles_cover_the_three_kinds(overlay):
    view, = find(overlay, "ClusterRole", "homecluster-view")
    edit, = find(overlay, "ClusterRole", "homecluster-edit")
    assert view["metadata"]["labels"]["rbac.authorization.k8s.io/aggregate-to-view"] == "true"
    assert edit["metadata"]["labels"]["rbac.authorization.k8s.io/aggregate-to-edit"] == "true"

    def grants(role):
        return {(res, verb) for rule in role["rules"] if rule["apiGroups"] == ["infra.homecluster.dev"]
                for res in rule["resources"] for verb in rule["verbs"]}
    assert {(k, v) for k in KINDS for v in ("get", "list", "watch")} <= grants(view)
    assert {v for _, v in grants(view)} == {"get", "list", "watch"}
    assert {(k, v) for k in KINDS for v in ("create", "delete", "patch")} <= grants(edit)
    assert not any("/" in res for res, _ in grants(edit)), "edit must not write status: the operator's alone"
