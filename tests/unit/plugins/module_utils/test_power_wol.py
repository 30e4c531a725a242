"""power_wol: a real magic packet over UDP to a loopback listener that decodes it."""
from __future__ import annotations

import pytest

from ansible_collections.homecluster.infra.plugins.module_utils.power_common import PowerError
from ansible_collections.homecluster.infra.plugins.module_utils.power_execute import PowerExecutor
from ansible_collections.homecluster.infra.plugins.module_utils.power_wol import WolDriver, valid_mac

# Real-time upper bounds tell an honoured limit from an ignored one, not speed: the suite shares 2 cores
# with another worker, and a step that takes 0.3 s alone can take several seconds there.
LOAD_SLACK = 8.0


@pytest.mark.parametrize("mac, ok", [
    ("52:54:00:12:34:56", True), ("52-54-00-12-34-56", True), ("525400123456", True),
    ("52:54:00:12:34", False), ("52:54-00:12:34:56", False), ("zz:54:00:12:34:56", False), ("", False),
])
def test_valid_mac(mac, ok):
    assert valid_mac(mac) is ok


def test_magic_packet_reaches_the_listener(wol_listener):
    driver = WolDriver("52-54-00-12-34-56", "127.0.0.1", wol_listener.port)
    assert driver.query() == "unknown" and not driver.can_confirm
    driver.power_on()
    assert wol_listener.wait_received(1)
    assert wol_listener.received == ["52:54:00:12:34:56"] and wol_listener.invalid == 0


def test_boot_is_confirmed_through_the_check_port(wol_listener):
    wol_listener.boot_delay = 0.3
    args = wol_listener.module_args()
    driver = WolDriver(args["mac_address"], "127.0.0.1", args["port"], "127.0.0.1", args["check_port"])
    result = PowerExecutor(driver, timeout=5, graceful_timeout=0, poll_interval=0.1).run("powered_on")
    assert result["confirmed"] and result["state"] == "on" and 0.3 <= result["elapsed"] < 0.3 + LOAD_SLACK


def test_power_off_is_unsupported():
    with pytest.raises(PowerError) as err:
        WolDriver("52:54:00:12:34:56", "127.0.0.1", 9).power_off(graceful=True)
    assert err.value.kind == PowerError.UNSUPPORTED
