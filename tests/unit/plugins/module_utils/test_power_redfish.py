"""power_redfish against sushy-tools' emulator (fake driver, 1 s power delay) on loopback."""
from __future__ import annotations

import pytest

from ansible_collections.homecluster.infra.plugins.module_utils.power_common import PowerError
from ansible_collections.homecluster.infra.plugins.module_utils.power_execute import PowerExecutor
from ansible_collections.homecluster.infra.plugins.module_utils.power_redfish import RedfishDriver, service_root


def driver_for(emulator, **kw):
    args = dict(emulator.module_args(), system_id=emulator.system_id)
    args.update(kw)
    return RedfishDriver(args["endpoint"], args["system_id"], args["username"], args["password"], verify_tls=False,
                         request_timeout=3)


@pytest.mark.parametrize("endpoint, root", [
    ("https://bmc", "https://bmc/redfish/v1"), ("https://bmc/", "https://bmc/redfish/v1"),
    ("https://bmc/redfish/v1/", "https://bmc/redfish/v1"),
])
def test_service_root(endpoint, root):
    assert service_root(endpoint) == root


def test_on_then_graceful_off(redfish_emulator):
    driver = driver_for(redfish_emulator)
    result = PowerExecutor(driver, timeout=15, graceful_timeout=10, poll_interval=0.2).run("powered_on")
    assert result["state"] == "on" and redfish_emulator.power() == "On"
    result = PowerExecutor(driver, timeout=15, graceful_timeout=10, poll_interval=0.2).run("powered_off")
    assert result["steps"] == ["graceful_off"] and redfish_emulator.power() == "Off"


def test_single_system_is_found_without_id(redfish_emulator):
    args = redfish_emulator.module_args()
    driver = RedfishDriver(args["endpoint"], None, args["username"], args["password"], verify_tls=False)
    assert driver.query() == "off"


def test_wrong_system_id_names_the_option(redfish_emulator):
    with pytest.raises(PowerError) as err:
        driver_for(redfish_emulator, system_id="no-such-system").query()
    assert "system_id" in str(err.value)


def test_bad_credentials(redfish_emulator):
    with pytest.raises(PowerError) as err:
        driver_for(redfish_emulator, password="wrong").query()
    assert err.value.kind == PowerError.AUTH and "wrong" not in str(err.value)


def test_unreachable(redfish_emulator):
    driver = RedfishDriver("http://127.0.0.1:1", None, "u", "p", verify_tls=False, request_timeout=2)
    with pytest.raises(PowerError) as err:
        driver.query()
    assert err.value.kind == PowerError.UNREACHABLE and "127.0.0.1:1" in str(err.value)


def test_tls_verify_is_false_true_or_the_ca_file():
    from ansible_collections.homecluster.infra.plugins.module_utils.power_redfish import tls_verify
    assert tls_verify(False, "/ca.pem") is False
    assert tls_verify(True, None) is True
    assert tls_verify(True, "/ca.pem") == "/ca.pem"


def test_close_ends_the_session_at_once(tmp_path):
    """close() itself DELETEs the session (sushy's own logout waits for Sushy.__del__), once."""
    from ansible_peers.sushy import SushyEmulator
    emulator = SushyEmulator(tmp_path / "redfish-sessions", sessions=True).start()
    try:
        args = emulator.module_args()
        driver = RedfishDriver(args["endpoint"], emulator.system_id, args["username"], args["password"],
                               verify_tls=False, request_timeout=3, auth="session")
        assert driver.query() == "off"
        assert len(emulator.session_report()["open"]) == 1
        driver.close()
        report = emulator.session_report()
        assert report["logins"] == 1 and report["logouts"] == 1 and report["open"] == [], report
        driver.close()  # nothing left to end: no second DELETE
        assert emulator.session_report()["logouts"] == 1
    finally:
        emulator.stop()
