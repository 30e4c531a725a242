"""power_plan: the steps each requested state needs from each observed state (pure)."""
from __future__ import annotations

import pytest

from ansible_collections.homecluster.infra.plugins.module_utils.power_plan import method_allows, plan
# machine_power imports the protocol files, and each registers its method (power_registry.py)
from ansible_collections.homecluster.infra.plugins.modules import machine_power  # noqa: F401 pylint: disable=unused-import


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


def test_the_boot_device_goes_before_a_boot_and_only_before_a_boot():
    from ansible_collections.homecluster.infra.plugins.module_utils.power_plan import (
        STEP_BOOT_DEVICE, boot_device_problem, with_boot_device,
    )
    assert with_boot_device(plan("powered_on", "off"), "pxe") == (STEP_BOOT_DEVICE, "power_on")
    assert with_boot_device(plan("reset", "on"), "disk") == (STEP_BOOT_DEVICE, "reset")
    assert with_boot_device(plan("powered_on", "on"), "pxe") == ()
    assert with_boot_device(plan("powered_on", "off"), None) == ("power_on",)
    assert boot_device_problem("ipmi", "reset", "pxe") is None and boot_device_problem("wol", "query", None) is None
    assert "method=ssh" in boot_device_problem("ssh", "powered_on", "pxe")
    assert "state=forced_off" in boot_device_problem("redfish", "forced_off", "disk")
