"""machine_power's Redfish session auth through ansible-playbook, against the sushy-tools emulator with a
SessionService in front of it (ansible_peers.redfish_sessions; sushy-tools has none): the module logs in once,
powers the machine with the session's token, and ends the session (one DELETE) on every path, so a run leaves
no session holding one of the BMC's few slots."""
from __future__ import annotations

import pytest

from ansible_peers.sushy import SushyEmulator
from hc_ansible import run_modules

RESET = "/Actions/ComputerSystem.Reset"


@pytest.fixture
def session_bmc(tmp_path):
    emulator = SushyEmulator(tmp_path / "redfish-sessions", delay=1, sessions=True).start()
    yield emulator
    emulator.stop()


def redfish(emulator, state, **extra):
    settings = dict(emulator.module_args(), system_id=emulator.system_id)
    settings.update(extra)
    return {"method": "redfish", "state": state, "timeout": 30, "redfish": settings}


@pytest.mark.parametrize("auth", ["session", "auto"])
def test_a_session_is_used_for_the_power_on_and_ended(tmp_path, session_bmc, auth):
    results, proc, _ = run_modules(tmp_path, "homecluster.infra.machine_power",
                                   [redfish(session_bmc, "powered_on", auth=auth)])
    result = results[0]
    assert not result.get("failed") and result["state"] == "on" and result["steps"] == ["power_on"], \
        proc.stdout[-3000:]
    report = session_bmc.session_report()  # before power(), whose own request uses basic auth
    assert session_bmc.power() == "On"
    assert report["logins"] == 1, report
    session = report["requests"][0]["session"]
    resets = [r for r in report["requests"] if r["method"] == "POST" and r["path"].endswith(RESET)]
    assert len(resets) == 1 and resets[0]["auth"] == "token" and resets[0]["session"] == session, report
    # after the login every request carried the token, none the password
    assert {r["auth"] for r in report["requests"]} == {"token"}, report
    deletes = [r for r in report["requests"] if r["method"] == "DELETE"]
    assert len(deletes) == 1 and deletes[0]["path"].endswith("/Sessions/" + session), report
    assert report["logouts"] == 1 and report["open"] == [], report


def test_the_session_is_ended_after_a_failure_and_in_check_mode(tmp_path, session_bmc):
    results, proc, _ = run_modules(tmp_path, "homecluster.infra.machine_power", [
        redfish(session_bmc, "powered_on", auth="session", system_id="no-such-system"),  # fails after the login
        redfish(session_bmc, "powered_on", auth="session"),                              # check mode: no reset
        redfish(session_bmc, "powered_on", auth="session", password="not-the-password"),  # no session at all
    ], check=True)
    missing, checked, wrong = results
    assert missing["failed"] and "no-such-system" in missing["msg"], missing
    assert not checked.get("failed") and checked["changed"] and checked["steps"] == ["power_on"], proc.stdout[-3000:]
    assert wrong["failed"] and wrong["cause"] == "bad credentials" and "not-the-password" not in wrong["msg"], wrong
    report = session_bmc.session_report()
    assert session_bmc.power() == "Off"
    assert report["logins"] == 2 and report["refused"] == 1, report
    assert report["logouts"] == 2 and report["open"] == [], report
    assert not [r for r in report["requests"] if r["path"].endswith(RESET)], report


def test_the_session_is_ended_when_the_bmc_stops_answering_mid_run(tmp_path):
    # the module gives up on the stalled read after its timeout and abandons the thread that waits for it; that
    # thread still holds sushy's root, so sushy's own logout (Sushy.__del__) never runs: only close() ends it
    emulator = SushyEmulator(tmp_path / "redfish-stalls", sessions=True, stall_reads=20).start()
    try:
        results, proc, _ = run_modules(tmp_path, "homecluster.infra.machine_power",
                                       [dict(redfish(emulator, "powered_on", auth="session"), timeout=3)])
        assert results[0]["failed"] and results[0]["cause"] == "timeout", results[0]
        report = emulator.session_report()
        assert report["logins"] == 1 and report["logouts"] == 1 and report["open"] == [], report
    finally:
        emulator.stop()
