"""The optional NetworkPolicy (config/components/network-policy; the chart renders the same by default) opens
only what must be open to every source (issue 23 item 9): the webhook port (kube-apiserver is on the host
network). The provider's gRPC port admits the autoscaler's pods only; the health port has no rule (the kubelet
probes from the pod's own node, which a NetworkPolicy always admits). Read from the file: no binary needed."""
from __future__ import annotations

from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[2]
POLICY = yaml.safe_load((REPO / "config/components/network-policy/network-policy.yaml").read_text())
MANAGER = yaml.safe_load((REPO / "config/manager/manager.yaml").read_text())


def _ports(rule: dict) -> set:
    return {p["port"] for p in rule.get("ports") or []}


def test_only_the_webhook_port_is_open_to_every_source():
    open_to_all = set().union(*(_ports(r) for r in POLICY["spec"]["ingress"] if not r.get("from")))
    assert open_to_all == {"webhook"}


def test_the_provider_port_admits_the_autoscalers_pods_only():
    [rule] = [r for r in POLICY["spec"]["ingress"] if "grpc" in _ports(r)]
    assert rule["from"] == [{"namespaceSelector": {},
                             "podSelector": {"matchLabels": {"app.kubernetes.io/name": "cluster-autoscaler"}}}]
    autoscaler = yaml.safe_load((REPO / "config/autoscaler/deployment.yaml").read_text())
    assert autoscaler["spec"]["template"]["metadata"]["labels"]["app.kubernetes.io/name"] == "cluster-autoscaler"


def test_the_health_port_has_no_rule_and_every_named_port_is_the_operators():
    named = set().union(*(_ports(r) for r in POLICY["spec"]["ingress"]))
    assert "health" not in named
    container = MANAGER["spec"]["template"]["spec"]["containers"][0]
    assert named <= {p["name"] for p in container["ports"]}
