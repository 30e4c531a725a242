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
