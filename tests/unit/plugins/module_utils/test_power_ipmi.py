"""power_ipmi against OpenIPMI's ipmi_sim on loopback (an independent IPMI implementation).

One driver per BMC per test: pyghmi keeps one session per (BMC, user) in the process.
"""
from __future__ import annotations

import time

import pytest

from ansible_collections.homecluster.infra.plugins.module_utils.power_common import PowerError
from ansible_collections.homecluster.infra.plugins.module_utils.power_execute import PowerExecutor
from ansible_collections.homecluster.infra.plugins.module_utils.power_ipmi import IpmiDriver

# Real-time upper bounds tell an honoured limit from an ignored one, not speed: the suite shares 2 cores
# with another worker, and a step that takes 0.3 s alone can take several seconds there.
LOAD_SLACK = 8.0


def driver_for(sim, **kw):
    args = dict(sim.module_args(), **kw)
    return IpmiDriver(args["address"], args["port"], args["username"], args["password"])


def test_query_on_off_through_the_bmc(ipmi_sim):
    driver = driver_for(ipmi_sim)
    try:
        assert driver.query() == "off"
        driver.power_on()
        assert driver.query() == "on" and ipmi_sim.power == "on"
        driver.power_off(graceful=False)
        assert driver.query() == "off" and ipmi_sim.power == "off"
        driver.reset()  # ipmi_sim accepts a reset of an off chassis without powering it
    finally:
        driver.close()
    assert any(call.startswith("set") for call in ipmi_sim.calls())


def test_executor_with_machine_delay(ipmi_sim):
    ipmi_sim.delay = 0.5
    driver = driver_for(ipmi_sim)
    try:
        result = PowerExecutor(driver, timeout=10, graceful_timeout=1, poll_interval=0.1).run("powered_on")
    finally:
        driver.close()
    assert result["state"] == "on" and 0.5 <= result["elapsed"] < 0.5 + LOAD_SLACK


def test_wrong_password_is_bad_credentials(ipmi_sim):
    driver = driver_for(ipmi_sim, password="not-it")
    started = time.monotonic()
    with pytest.raises(PowerError) as err:
        driver.query()
    assert err.value.kind == PowerError.AUTH and "admin" in str(err.value)
    assert "not-it" not in str(err.value)
    assert time.monotonic() - started < LOAD_SLACK  # no retrying


def test_silent_port_fails_within_the_budget(ipmi_sim):
    port = ipmi_sim.port
    ipmi_sim.stop()
    driver = IpmiDriver("127.0.0.1", port, "admin", "x")
    started = time.monotonic()
    with pytest.raises(PowerError) as err:
        PowerExecutor(driver, timeout=1.0, graceful_timeout=0, poll_interval=0.1).run("query")
    assert err.value.kind in (PowerError.TIMEOUT, PowerError.UNREACHABLE)
    assert "127.0.0.1:%d" % port in str(err.value)
    assert time.monotonic() - started < 1.0 + LOAD_SLACK


def test_kg_bytes_takes_hex_of_at_most_20_bytes():
    from ansible_collections.homecluster.infra.plugins.module_utils.power_ipmi import kg_bytes
    assert kg_bytes("6b6579") == b"key" and kg_bytes("0x6B6579") == b"key"
    assert kg_bytes("00" * 20) == b"\0" * 20
    for bad in ("", "0x", "abc", "zz", "00" * 21, "6b 65"):
        assert kg_bytes(bad) is None, bad
