"""machine_power's redfish.ca_path, redfish.verify_tls (alias validate_certs) and redfish.auth through
ansible-playbook, against the sushy-tools Redfish emulator served over HTTPS with a certificate from a CA of its
own. sushy-tools 2.2 has no SessionService: here session login is proven to fail clearly; test_redfish_sessions.py
proves it working (login, token, logout) against the emulator with a SessionService in front."""
from __future__ import annotations

import pytest

from ansible_peers.sushy import SushyEmulator
from hc_ansible import run_modules


@pytest.fixture
def tls_emulator(tmp_path):
    emulator = SushyEmulator(tmp_path / "redfish-tls", delay=1, tls=True).start()
    yield emulator
    emulator.stop()


def redfish(emulator, state="query", **extra):
    settings = {"endpoint": emulator.endpoint, "system_id": emulator.system_id,
                "username": emulator.username, "password": emulator.password}
    settings.update(extra)
    return {"method": "redfish", "state": state, "timeout": 20, "redfish": settings}


def test_a_private_ca_file_makes_the_certificate_trusted(tmp_path, tls_emulator):
    assert tls_emulator.endpoint.startswith("https://")
    results, proc, _ = run_modules(tmp_path, "homecluster.infra.machine_power", [
        redfish(tls_emulator),                                        # the system's CAs: not trusted
        redfish(tls_emulator, state="powered_on", ca_path=str(tls_emulator.ca_file)),
        redfish(tls_emulator, validate_certs=False),                  # community.general's name for verify_tls
        redfish(tls_emulator, ca_path=str(tmp_path / "missing.pem")),
    ])
    untrusted, trusted, unverified, missing = results
    assert untrusted["failed"] and "redfish.ca_path" in untrusted["msg"], untrusted
    assert not trusted.get("failed") and trusted["state"] == "on", proc.stdout[-3000:]
    assert tls_emulator.power() == "On"
    assert not unverified.get("failed") and unverified["state"] == "on"
    assert missing["failed"] and "redfish.ca_path" in missing["msg"]


def test_basic_auth_works_and_session_auth_says_the_service_has_no_sessions(tmp_path, redfish_emulator):
    args = dict(redfish_emulator.module_args(), system_id=redfish_emulator.system_id)
    results, proc, _ = run_modules(tmp_path, "homecluster.infra.machine_power", [
        {"method": "redfish", "state": "query", "timeout": 20, "redfish": dict(args, auth="basic")},
        {"method": "redfish", "state": "query", "timeout": 20, "redfish": dict(args, auth="session")},
        {"method": "redfish", "state": "query", "timeout": 20, "redfish": dict(args, auth="basic", password="wrong")},
    ])
    basic, session, wrong = results
    assert not basic.get("failed") and basic["state"] == "off", proc.stdout[-3000:]
    # the emulator has no SessionService and guards every path with basic auth: the login POST gets 401
    assert session["failed"] and "redfish.auth" in session["msg"] and "session login" in session["msg"], session
    assert wrong["failed"] and wrong["cause"] == "bad credentials", wrong
