"""Observed power and usability from a corev1 Node."""
import pytest

from homecluster.model.observe import observe, observed_power, readiness_taint_on, ready_status, usability
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
