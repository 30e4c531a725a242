"""machine_power through ansible-playbook against real peers on loopback (ipmi_sim, sushy-emulator,
sshd, a Wake-on-LAN listener): timing, idempotence, check mode, input validation, failures and secrecy.

Several module runs share one ansible-playbook process (run_modules) to keep the suite fast.
"""
from __future__ import annotations

import re
import socket
import subprocess

import pytest

from hc_ansible import run_module, run_modules
from load_factor import scaled

MODULE = "homecluster.infra.machine_power"
# Real-time upper bounds tell an honoured limit from an ignored one, not speed: the suite shares 2 cores
# with another worker, and a step that takes 0.3 s alone can take several seconds there. Each
# bound adds it stretched by the machine's measured load (load_factor.scaled).
LOAD_SLACK = 8.0


def ipmi_args(sim, **kw):
    args = {"method": "ipmi", "ipmi": sim.module_args()}
    args.update(kw)
    return args


@pytest.mark.parametrize("delay", [0.0, 1.0])
def test_ipmi_on_and_off_within_two_seconds_of_the_machine_delay(tmp_path, ipmi_sim, delay):
    ipmi_sim.delay = delay
    (on, on_again, off, off_again), proc, wall = run_modules(tmp_path, MODULE, [
        ipmi_args(ipmi_sim, state="powered_on"), ipmi_args(ipmi_sim, state="powered_on"),
        ipmi_args(ipmi_sim, state="forced_off"), ipmi_args(ipmi_sim, state="forced_off")])
    assert on["changed"] and on["confirmed"], proc.stdout
    assert (on["previous_state"], on["state"]) == ("off", "on")
    assert off["changed"] and off["state"] == "off" and off["forced"]
    assert not on_again["changed"] and not off_again["changed"], "a second run must change nothing"
    assert ipmi_sim.power == "off"
    for name, result in (("on", on), ("off", off)):
        assert result["elapsed"] < delay + scaled(LOAD_SLACK), "power %s took %.2f s for a %.1f s delay" % (name, result["elapsed"], delay)
    print("ipmi_sim, machine delay %.1f s: on %.2f s, off %.2f s in the module; 4 runs %.2f s for ansible-playbook"
          % (delay, on["elapsed"], off["elapsed"], wall))


def test_ipmi_check_mode_changes_nothing(tmp_path, ipmi_sim):
    ipmi_sim.power = "on"
    (off, on), _, _ = run_modules(tmp_path, MODULE, [ipmi_args(ipmi_sim, state="powered_off"),
                                                     ipmi_args(ipmi_sim, state="powered_on")], check=True)
    assert off["changed"] and off["steps"] == ["graceful_off", "forced_off"]
    assert not on["changed"] and on["steps"] == []
    assert ipmi_sim.power == "on", "check mode must not touch the machine"
    assert not any(c.startswith("set") for c in ipmi_sim.calls())


def test_ipmi_graceful_ignored_then_forced_then_reset_and_query(tmp_path, ipmi_sim):
    """ipmi_sim does not act on a soft-off (no ACPI), so the forced step must follow after graceful_timeout."""
    ipmi_sim.power = "on"
    (off, reset, query), proc, _ = run_modules(tmp_path, MODULE, [
        ipmi_args(ipmi_sim, state="powered_off", graceful_timeout=1, poll_interval=0.2),
        ipmi_args(ipmi_sim, state="reset"),
        ipmi_args(ipmi_sim, state="query")])
    assert off["steps"] == ["graceful_off", "forced_off"] and off["forced"], proc.stdout
    assert off["state"] == "off"
    assert 1.0 <= off["elapsed"] < 1.0 + scaled(LOAD_SLACK)  # not the 120 s default
    assert reset["steps"] == ["power_on"], "a reset of a machine that is off powers it on"
    assert not query["changed"] and query["state"] == "on" and query["confirmed"]
    assert ipmi_sim.power == "on"


def test_ipmi_powered_off_with_timeout_below_graceful_timeout_ends_off_within_timeout(tmp_path, ipmi_sim):
    """A new user's `state: powered_off, timeout: 10` keeps the default graceful_timeout (120 s) and meets a BMC
    whose soft-off does nothing (ipmi_sim: no ACPI). The soft-off gets half of the timeout, the forced step the
    rest, and the machine ends off within the timeout (it used to wait out the timeout and fail, still on)."""
    ipmi_sim.power = "on"
    off, proc, _ = run_module(tmp_path, MODULE, ipmi_args(ipmi_sim, state="powered_off", timeout=10, poll_interval=0.2))
    assert not off.get("failed"), off.get("msg", proc.stdout)
    assert off["steps"] == ["graceful_off", "forced_off"] and off["forced"] and off["state"] == "off"
    assert ipmi_sim.power == "off"
    assert 5.0 <= off["elapsed"] <= 10.0, "the soft-off gets 5 s, and everything ends within the 10 s timeout"
    sets = [c for c in ipmi_sim.calls() if c.startswith("set")]
    assert sets[0].startswith("set shutdown") and sets[-1].startswith("set power 0"), sets
    print("powered_off, timeout 10, soft-off ignored: off (forced) after %.2f s" % off["elapsed"])


def test_wrong_password_fails_at_once_and_never_shows_it(tmp_path, ipmi_sim):
    args = ipmi_args(ipmi_sim, state="powered_on")
    args["ipmi"]["password"] = "Wr0ng-Secret-xyzzy"
    result, proc, _ = run_module(tmp_path, MODULE, args, verbosity=4)
    assert result["failed"]
    assert result["cause"] == "bad credentials" and result["method"] == "ipmi"
    assert "127.0.0.1:%d" % ipmi_sim.port in result["msg"]
    assert result["elapsed"] < scaled(LOAD_SLACK)  # no retrying until the timeout
    assert "Wr0ng-Secret-xyzzy" not in proc.stdout + proc.stderr
    assert ipmi_sim.power == "off"


def test_password_absent_from_vvvv_output_on_success(tmp_path, ipmi_sim):
    result, proc, _ = run_module(tmp_path, MODULE, ipmi_args(ipmi_sim, state="powered_on"), verbosity=4)
    assert result["changed"]
    assert ipmi_sim.password not in proc.stdout + proc.stderr
    assert "VALUE_SPECIFIED_IN_NO_LOG_PARAMETER" in proc.stdout


def test_unreachable_bmc_and_a_state_that_never_comes_fail_within_timeout(tmp_path, ipmi_sim):
    ipmi_sim.delay = 30  # the BMC accepts the command; the machine takes longer than we allow
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as mute:  # a BMC that never answers: ours, held
        mute.bind(("127.0.0.1", 0))
        silent = dict(ipmi_sim.module_args(), port=mute.getsockname()[1])
        (slow, unreachable), proc, _ = run_modules(tmp_path, MODULE, [
            ipmi_args(ipmi_sim, state="powered_on", timeout=2, poll_interval=0.2),
            {"method": "ipmi", "state": "powered_on", "timeout": 2, "ipmi": silent}])
    assert slow["failed"] and slow["cause"] == "timeout", proc.stdout
    # a busy BMC may miss every read of the wait: then the last reading is 'unknown' and the message says
    # what the machine was last known to be
    assert re.search(r"still reports ('off'|'unknown' \(last known: 'off'\)) ", slow["msg"]), slow["msg"]
    assert "expected 'on'" in slow["msg"]
    assert slow["elapsed"] < 2 + scaled(LOAD_SLACK)  # the machine needs 30 s
    assert unreachable["failed"] and unreachable["method"] == "ipmi", proc.stdout
    assert unreachable["cause"] in ("timeout", "unreachable")
    assert "127.0.0.1:%d" % silent["port"] in unreachable["msg"]
    assert unreachable["elapsed"] < 2 + scaled(LOAD_SLACK)


BAD_INPUT = [
    ({"method": "ipmi", "state": "powered_on"}, "method is ipmi but all of the following are missing: ipmi"),
    ({"method": "wol", "state": "powered_off", "wol": {"mac_address": "52:54:00:12:34:56"}},
     "state=powered_off is not possible with method=wol"),
    ({"method": "ssh", "state": "powered_on", "ssh": {"host": "h", "private_key_file": "/k"}},
     "state=powered_on is not possible with method=ssh"),
    ({"method": "wol", "state": "powered_on", "wol": {"mac_address": "52:54:00:12:34"}}, "wol.mac_address"),
    ({"method": "ipmi", "state": "sideways", "ipmi": {"address": "a", "username": "u", "password": "long-secret"}},
     "value of state must be one of"),
    ({"method": "ipmi", "ipmi": {"address": "a", "username": "u", "password": "long-secret"}, "timeout": 0}, "timeout"),
    ({"method": "ipmi", "ipmi": {"address": "a", "username": "u", "password": "long-secret", "port": 70000}}, "ipmi.port"),
    ({"method": "ipmi", "ipmi": {"address": "a", "username": "u"}}, "password"),
    ({"method": "redfish", "redfish": {"endpoint": "http://x", "username": "u", "password": "long-secret", "tls": 1}},
     "tls"),
]


def test_bad_input_is_rejected_naming_the_option(tmp_path):
    results, _, _ = run_modules(tmp_path, MODULE, [args for args, _ in BAD_INPUT])
    for (args, fragment), result in zip(BAD_INPUT, results):
        assert result.get("failed"), args
        assert fragment in result["msg"], (args, result["msg"])


def test_redfish_on_graceful_off_and_idempotence(tmp_path, redfish_emulator):
    args = {"method": "redfish", "redfish": {**redfish_emulator.module_args(), "system_id": redfish_emulator.system_id},
            "poll_interval": 0.25}
    (on, on_again, off, default_system), proc, _ = run_modules(tmp_path, MODULE, [
        {**args, "state": "powered_on"}, {**args, "state": "powered_on"}, {**args, "state": "powered_off"},
        {"method": "redfish", "redfish": redfish_emulator.module_args()}])
    assert on["changed"] and on["state"] == "on", proc.stdout
    assert on["elapsed"] < redfish_emulator.delay + 1 + scaled(LOAD_SLACK)  # the emulator's delay has 1 s granularity
    assert not on_again["changed"]
    assert off["steps"] == ["graceful_off"] and not off["forced"] and off["state"] == "off"
    assert default_system["state"] == "off", "without system_id the only system is used"
    assert redfish_emulator.power() == "Off"


def test_redfish_bad_credentials_and_unreachable(tmp_path, redfish_emulator):
    wrong = {"method": "redfish", "state": "powered_on", "timeout": 5,
             "redfish": {**redfish_emulator.module_args(), "password": "n0t-the-Password"}}
    closed = {"method": "redfish", "state": "powered_on", "timeout": 5,
              "redfish": {**redfish_emulator.module_args(), "endpoint": "http://127.0.0.1:1"}}
    bad, proc, _ = run_module(tmp_path, MODULE, wrong, verbosity=4)
    unreachable, _, _ = run_module(tmp_path, MODULE, closed)
    assert bad["failed"] and bad["cause"] == "bad credentials", bad["msg"]
    assert "n0t-the-Password" not in proc.stdout + proc.stderr
    assert redfish_emulator.password not in proc.stdout + proc.stderr
    assert unreachable["failed"] and unreachable["cause"] in ("unreachable", "timeout")
    assert "127.0.0.1:1" in unreachable["msg"] and unreachable["elapsed"] < 5 + scaled(LOAD_SLACK)
    assert redfish_emulator.power() == "Off"


def test_wol_confirms_through_the_check_port_and_is_idempotent(tmp_path, wol_listener):
    args = {"method": "wol", "state": "powered_on", "wol": wol_listener.module_args(), "poll_interval": 0.2}
    (first, second, unchecked), proc, _ = run_modules(tmp_path, MODULE, [
        args, args, {"method": "wol", "state": "powered_on", "wol": wol_listener.module_args(check=False)}])
    assert first["changed"] and first["confirmed"] and first["state"] == "on", proc.stdout
    assert not second["changed"], "the check port answers: no second packet"
    assert unchecked["changed"] and unchecked["confirmed"] is False and unchecked["state"] == "unknown"
    assert wol_listener.wait_received(2)
    assert wol_listener.received == ["52:54:00:12:34:56"] * 2


def test_ssh_power_off_confirmed_by_the_port_going_away(tmp_path, sshd_peer):
    other = tmp_path / "other_key"
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(other)], check=True)
    args = {"method": "ssh", "state": "powered_off", "ssh": sshd_peer.module_args(), "poll_interval": 0.2}
    wrong_key = {"method": "ssh", "state": "forced_off", "ssh": {**sshd_peer.module_args(), "private_key_file": str(other)}}
    (refused, off, again), proc, _ = run_modules(tmp_path, MODULE, [wrong_key, args, args])
    assert refused["failed"] and refused["cause"] == "bad credentials" and refused["method"] == "ssh", refused["msg"]
    assert off["changed"] and off["state"] == "off" and off["steps"] == ["graceful_off"], proc.stdout
    assert off["elapsed"] < scaled(LOAD_SLACK)  # not the 120 s graceful timeout
    assert not again["changed"]
    assert sshd_peer.poweroff_requests() == ["graceful"]
    assert not sshd_peer.running


def test_redfish_over_http_is_refused_unless_insecure(tmp_path, redfish_emulator):
    # Issue 15: the emulator serves plain HTTP, so the credentials would cross the network in clear.
    args = {**redfish_emulator.module_args(), "system_id": redfish_emulator.system_id}
    del args["insecure"]
    refused, proc, _ = run_module(tmp_path, MODULE, {"method": "redfish", "state": "powered_on", "redfish": args})
    assert refused["failed"] and "redfish.insecure: true" in refused["msg"] and "not https://" in refused["msg"]
    assert redfish_emulator.power() == "Off"  # nothing was sent
    assert redfish_emulator.password not in proc.stdout + proc.stderr
    allowed, _, _ = run_module(tmp_path, MODULE, {"method": "redfish", "state": "powered_on",
                                                  "redfish": dict(args, insecure=True)})
    assert not allowed.get("failed"), allowed
    assert redfish_emulator.power() == "On"
