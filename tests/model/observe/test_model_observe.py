"""Observed power and usability from a corev1 Node."""
import pytest

from homecluster.model.observe import (
    Observation, Usability, observe, observed_power, readiness_taint_on, ready_status, usability,
)
from homecluster.model.phases import PowerState

GROUP = {"metadata": {"name": "workers"}, "spec": {"nodeReadinessTaints": [
    {"key": "node.cilium.io/agent-not-ready"},
    {"key": "example.com/warming", "effect": "NoSchedule"},
]}}


def node(ready="True", taints=(), unschedulable=None, conditions=None):
    obj = {"metadata": {"name": "worker-01"}, "spec": {"taints": list(taints)}, "status": {}}
    if conditions is not None:
        obj["status"]["conditions"] = conditions
    elif ready is not None:
        obj["status"]["conditions"] = [{"type": "MemoryPressure", "status": "False"}, {"type": "Ready", "status": ready}]
    if unschedulable is not None:
        obj["spec"]["unschedulable"] = unschedulable
    return obj


def test_no_node_is_off_and_unusable():
    seen = observe(None, GROUP)
    assert seen.power == PowerState.OFF and not seen.usable
    assert "no corev1 Node" in seen.usability.why


@pytest.mark.parametrize("status", ["False", "Unknown"])
def test_not_ready_is_off_and_unusable(status):
    seen = observe(node(status), GROUP)
    assert seen.power == PowerState.OFF and not seen.usable
    assert f"condition Ready is {status}" in seen.usability.why


def test_no_ready_condition_is_off():
    assert observed_power(node(None)) == PowerState.OFF
    assert observed_power(node(conditions=[])) == PowerState.OFF
    assert "Ready is absent" in usability(node(None), GROUP).why
    assert ready_status({"status": {"conditions": None}}) is None


def test_ready_and_clean_is_on_and_usable():
    seen = observe(node(), GROUP)
    assert seen.power == PowerState.ON and seen.usable and seen.usability.why is None
    assert bool(seen.usability) is True


def test_readiness_taint_by_key_matches_any_effect():
    n = node(taints=[{"key": "node.cilium.io/agent-not-ready", "effect": "NoExecute"}])
    seen = observe(n, GROUP)
    assert seen.power == PowerState.ON, "a tainted Node is still observed on"
    assert not seen.usable and "node.cilium.io/agent-not-ready:NoExecute" in seen.usability.why


def test_readiness_taint_with_effect_matches_only_that_effect():
    assert readiness_taint_on(node(taints=[{"key": "example.com/warming", "effect": "NoExecute"}]), GROUP) is None
    assert usability(node(taints=[{"key": "example.com/warming", "effect": "NoExecute"}]), GROUP).usable
    assert not usability(node(taints=[{"key": "example.com/warming", "effect": "NoSchedule"}]), GROUP).usable


def test_other_taints_do_not_matter():
    n = node(taints=[{"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}])
    assert usability(n, GROUP).usable


def test_cordoned_is_on_but_unusable():
    seen = observe(node(unschedulable=True), GROUP)
    assert seen.power == PowerState.ON and not seen.usable
    assert "cordoned" in seen.usability.why
    assert usability(node(unschedulable=False), GROUP).usable


def test_missing_group_has_no_readiness_taints():
    n = node(taints=[{"key": "node.cilium.io/agent-not-ready", "effect": "NoSchedule"}])
    assert usability(n, None).usable
    assert usability(n, {"spec": {}}).usable


def test_first_failing_check_is_the_reason():
    n = node("False", taints=[{"key": "node.cilium.io/agent-not-ready", "effect": "NoSchedule"}], unschedulable=True)
    assert "not Ready" in usability(n, GROUP).why


def test_each_unusable_answer_is_false_with_its_reason():
    """Usability is a plain bool and a sentence naming the Node, checked in order: exists, Ready, taints, cordon."""
    assert usability(None, GROUP) == Usability(False, "no corev1 Node has registered")
    assert usability(node("False"), GROUP) == Usability(
        False, 'corev1 Node "worker-01" is not Ready (condition Ready is False)')
    assert usability(node(taints=[{"key": "example.com/warming", "effect": "NoSchedule"}]), GROUP) == Usability(
        False, 'corev1 Node "worker-01" carries the readiness taint example.com/warming:NoSchedule')
    assert usability(node(unschedulable=True), GROUP) == Usability(
        False, 'corev1 Node "worker-01" is cordoned (spec.unschedulable)')
    assert usability(node(), GROUP) == Usability(True, None)


def test_a_node_without_a_name_is_called_unnamed():
    n = node("Unknown")
    del n["metadata"]["name"]
    assert usability(n, GROUP).why == 'corev1 Node "<unnamed>" is not Ready (condition Ready is Unknown)'


def test_a_readiness_taint_without_an_effect_is_named_by_its_key_alone():
    n = node(taints=[{"key": "node.cilium.io/agent-not-ready"}])
    assert usability(n, GROUP).why == ('corev1 Node "worker-01" carries the readiness taint '
                                       "node.cilium.io/agent-not-ready")


@pytest.mark.parametrize("n", [node(), None, node("False")])
def test_a_silent_node_is_off_and_unusable_for_the_reason_given(n):
    """model.liveness's verdict outranks the Node's own Ready: power off, not usable, with its reason."""
    why = 'the kubelet of "worker-01" stopped renewing its Lease'
    assert observe(n, GROUP, why) == Observation(PowerState.OFF, Usability(False, why))
