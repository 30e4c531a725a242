"""model.boundary's words and its selector grammar, pure (the attacks through a pass: tests/lifecycle/boundary/
test_slot_boundary.py; the identity rules: test_model_identity.py)."""
from __future__ import annotations

import pytest

from homecluster.model.boundary import NodeSelector, Requirement, declaration_refusal, node_refusal


def slot(name: str, created: str = "2026-01-01T00:00:00Z", **spec: str) -> dict:
    return {"metadata": {"name": name, "creationTimestamp": created}, "spec": spec}


@pytest.mark.parametrize("text,requirements", [
    ("a in (x, y)", (Requirement("a", "in", frozenset({"x", "y"})),)),
    ("a notin (x,y),b", (Requirement("a", "notin", frozenset({"x", "y"})), Requirement("b", "exists"))),
    ("!a", (Requirement("a", "!exists"),)),
    ("a=b", (Requirement("a", "in", frozenset({"b"})),)),
    ("a!=b", (Requirement("a", "notin", frozenset({"b"})),)),
])
def test_the_selector_reads_each_requirement(text, requirements):
    assert NodeSelector.parse(text).requirements == requirements


def test_an_empty_requirement_is_refused_naming_the_flag_and_a_good_example():
    with pytest.raises(ValueError) as err:
        NodeSelector.parse("a=b,,c")
    assert str(err.value) == ("--managed-node-selector 'a=b,,c': an empty requirement (a stray comma); write it as a "
                              "Kubernetes label selector, e.g. homecluster.dev/pool=workers")


def test_the_duplicate_refusals_name_the_earlier_slot_and_the_field():
    first = slot("a", providerID="k3s://m", nodeName="m")
    assert declaration_refusal(slot("b", "2026-01-02T00:00:00Z", providerID="k3s://m"), [first]).message == (
        'slot "b": spec.providerID \'k3s://m\' is already declared by slot "a"; two slots may not share a machine: '
        "fix this slot's spec.providerID (or delete one of the two)")
    assert declaration_refusal(slot("b", "2026-01-02T00:00:00Z", nodeName="m"), [first]).message == (
        'slot "b": spec.nodeName \'m\' is already declared by slot "a"; two slots may not share a machine: '
        "fix this slot's spec.nodeName (or delete one of the two)")
    assert declaration_refusal(first, [first, slot("b", "2026-01-02T00:00:00Z", providerID="k3s://m")]) is None


def test_a_node_outside_the_selector_is_refused_saying_how_to_label_it():
    node = {"metadata": {"name": "m", "labels": {}}, "spec": {"providerID": "k3s://m"}}
    refusal = node_refusal(slot("m"), node, [slot("m")], NodeSelector.parse("pool=workers"))
    assert (refusal.reason, refusal.message) == ("NodeNotManaged", (
        'slot "m": Node "m" does not match the operator\'s --managed-node-selector \'pool=workers\': label the machine '
        "(k3s --node-label) or fix the slot's spec.providerID and spec.nodeName"))


@pytest.mark.parametrize("text, labels, matches", [
    ("pool", {"pool": "a"}, True), ("pool", {"pool": ""}, True), ("pool", {}, False),
    ("!pool", {}, True), ("!pool", {"pool": "a"}, False),
    ("pool in (a,b)", {"pool": "b"}, True), ("pool in (a,b)", {"pool": "c"}, False), ("pool in (a,b)", {}, False),
    ("pool notin (a,b)", {"pool": "c"}, True), ("pool notin (a,b)", {"pool": "a"}, False),
    ("pool notin (a,b)", {}, True),  # as Kubernetes reads notin: a Node without the label matches
    ("pool=a", {"pool": "a"}, True), ("pool=a", {"pool": "b"}, False), ("pool=a", {}, False),
    ("pool!=a", {"pool": "b"}, True), ("pool!=a", {"pool": "a"}, False), ("pool!=a", {}, True),
    ("pool=", {"pool": ""}, True), ("pool=", {"pool": "a"}, False),  # an empty value is a value
    ("pool in (a,b),zone", {"pool": "a", "zone": "z"}, True), ("pool in (a,b),zone", {"pool": "a"}, False),
])
def test_the_selector_matches_as_a_kubernetes_label_selector(text, labels, matches):
    assert NodeSelector.parse(text).matches({"metadata": {"name": "m", "labels": labels}}) is matches


def test_an_unreadable_requirement_is_refused_quoting_the_selector_and_the_part():
    with pytest.raises(ValueError) as err:
        NodeSelector.parse("pool=workers, zone in a")
    assert str(err.value) == (
        "--managed-node-selector 'pool=workers, zone in a': cannot read 'zone in a'; write it as a Kubernetes label "
        "selector, e.g. homecluster.dev/pool=workers or 'homecluster.dev/pool in (a,b)'")


def node(name: str = "m", labels: dict | None = None, provider_id: str = "") -> dict:
    return {"metadata": {"name": name, "labels": labels or {}}, "spec": {"providerID": provider_id}}


def test_a_control_plane_node_is_refused_naming_the_role_and_the_fix():
    for role in ("node-role.kubernetes.io/control-plane", "node-role.kubernetes.io/master"):
        refusal = node_refusal(slot("m"), node("cp-1", {role: ""}), [slot("m")])
        assert (refusal.reason, refusal.message) == ("ControlPlaneNode", (
            f'slot "m": Node "cp-1" carries {role}; a control-plane Node is never a slot\'s machine (not observed, '
            "never cordoned or drained): fix the slot's spec.providerID and spec.nodeName"))


def test_no_node_found_is_no_refusal_whatever_the_selector_or_the_first_claimant():
    assert node_refusal(slot("m"), None, [slot("m")], NodeSelector.parse("pool=workers"), first=slot("a")) is None


def test_a_node_matching_the_selector_is_accepted():
    assert node_refusal(slot("m"), node(labels={"pool": "workers"}), [slot("m")],
                        NodeSelector.parse("pool=workers")) is None


def test_a_conflict_says_how_each_slot_finds_the_node():
    first = slot("a", providerID="k3s://m")
    late = slot("b", "2026-01-02T00:00:00Z", nodeName="m")
    refusal = node_refusal(late, node("m", provider_id="k3s://m"), [first, late], first=first)
    assert (refusal.reason, refusal.keeper, refusal.node) == ("Conflict", "a", "m")
    assert refusal.message == (
        'slot "b": Node "m" (found by this slot\'s spec.nodeName "m") is already the machine of slot "a", created '
        'first (found by its spec.providerID "k3s://m"); two slots may not share a machine, so this slot observes '
        "nothing and fires no Job: fix this slot's spec.providerID and spec.nodeName (or delete one of the two)")


def test_a_slot_without_a_creation_time_counts_as_the_first():
    """A slot that never went through the API server (no creationTimestamp) sorts before every created one."""
    bare = {"metadata": {"name": "z"}, "spec": {"providerID": "k3s://m"}}
    created = slot("a", providerID="k3s://m")
    assert declaration_refusal(bare, [bare, created]) is None
    assert declaration_refusal(created, [bare, created]).reason == "DuplicateProviderID"
