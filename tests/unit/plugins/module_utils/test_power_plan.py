"""power_plan: the steps each requested state needs from each observed state (pure)."""
from __future__ import annotations

import pytest

from ansible_collections.homecluster.infra.plugins.module_utils.power_plan import method_allows, plan


@pytest.mark.parametrize("state, current, steps", [
    ("powered_on", "off", ("power_on",)),
    ("powered_on", "on", ()),
    ("powered_on", "unknown", ("power_on",)),
    ("powered_off", "on", ("graceful_off", "forced_off")),
    ("powered_off", "off", ()),
    ("powered_off", "unknown", ("graceful_off", "forced_off")),
    ("forced_off", "on", ("forced_off",)),
    ("forced_off", "off", ()),
    ("reset", "on", ("reset",)),
    ("reset", "off", ("power_on",)),
    ("query", "on", ()),
    ("query", "unknown", ()),
])
def test_plan(state, current, steps):
    assert plan(state, current) == steps


def test_unknown_state_is_refused_by_name():
    with pytest.raises(ValueError, match="sideways"):
        plan("sideways", "on")


@pytest.mark.parametrize("method, state, allowed", [
    ("wol", "powered_on", True), ("wol", "powered_off", False), ("wol", "reset", False),
    ("ssh", "powered_off", True), ("ssh", "forced_off", True), ("ssh", "powered_on", False),
    ("ipmi", "reset", True), ("redfish", "forced_off", True), ("carrier-pigeon", "query", False),
])
def test_method_allows(method, state, allowed):
    assert method_allows(method, state) is allowed
