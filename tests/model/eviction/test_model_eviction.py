"""model/eviction.py: the lifecycle Jobs' token evicts only pods on a Node the operator marked as a slot's machine
(issue 23 item 11; the real API server's side is tests/k8s/test_k8s_job_confinement.py)."""
from __future__ import annotations

import pytest

from homecluster import names
from homecluster.model.eviction import EvictionRefusal, eviction_refusal, pod_key_refusal


def pod(node: str | None) -> dict:
    return {"metadata": {"name": "web-0", "namespace": "shop"}, "spec": {"nodeName": node} if node else {}}


def node(name: str, mark: str | None) -> dict:
    return {"metadata": {"name": name, "labels": {names.LABEL_MACHINE_OF: mark} if mark is not None else {}}}


def test_a_pod_on_a_marked_node_may_be_evicted() -> None:
    assert eviction_refusal("shop", "web-0", pod("worker-01"), node("worker-01", "worker-01")) is None


@pytest.mark.parametrize("the_node", [node("db-1", None), node("db-1", ""), {"metadata": {"name": "db-1"}}, None,
                                      {"metadata": {"name": "db-1", "labels": ["machine-of"]}}, {"metadata": None}])
def test_a_pod_on_a_node_outside_the_pool_is_refused_naming_pod_and_node(the_node) -> None:
    assert eviction_refusal("shop", "web-0", pod("db-1"), the_node) == EvictionRefusal(
        403, "Forbidden", "homecluster-job may evict only pods on the pool's Nodes (label "
        "infra.homecluster.dev/machine-of); pod shop/web-0 runs on Node db-1, which is not in the pool")


def test_an_unbound_pod_is_refused() -> None:
    refusal = eviction_refusal("shop", "web-0", pod(None), node("worker-01", "worker-01"))
    assert refusal == EvictionRefusal(403, "Forbidden", "homecluster-job may evict only pods on the pool's Nodes; "
                                                        "pod shop/web-0 is bound to no Node")


def test_a_vanished_pod_is_answered_as_the_eviction_would_be() -> None:
    assert eviction_refusal("shop", "web-0", None, None) == EvictionRefusal(404, "NotFound",
                                                                            "pod shop/web-0 not found")


@pytest.mark.parametrize("namespace,name", [("shop", "web-0"), ("a", "b"), ("a" * 63, "x." + "y" * 251)])
def test_names_the_api_server_sends_are_taken(namespace, name) -> None:
    assert pod_key_refusal(namespace, name) is None


@pytest.mark.parametrize("namespace,name", [
    ("shop", "../../nodes/x"), ("shop", "Web"), ("shop", ""), ("", "web-0"), ("a.b", "web-0"), ("shop", "-web"),
    ("shop", "web-"), ("a" * 64, "web"), ("shop", "x" * 254), (None, "web-0"), ("shop", 7), ("shop", "web\n0"),
])
def test_anything_else_in_a_review_is_refused_unread(namespace, name) -> None:
    assert pod_key_refusal(namespace, name) == EvictionRefusal(
        400, "BadRequest", "not an eviction review: request.namespace and request.name must be a namespace and a "
        "pod name")
