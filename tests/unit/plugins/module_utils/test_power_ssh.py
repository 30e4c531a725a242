"""power_ssh against OpenSSH's sshd on loopback, whose power-off command stops the sshd."""
from __future__ import annotations

import socket
import subprocess

import pytest

from ansible_collections.homecluster.infra.plugins.module_utils.power_common import PowerError
from ansible_collections.homecluster.infra.plugins.module_utils.power_execute import PowerExecutor
from ansible_collections.homecluster.infra.plugins.module_utils.power_ssh import SshDriver


def driver_for(peer, **kw):
    args = dict(peer.module_args(), **kw)
    return SshDriver(args["host"], args["port"], args["user"], args["private_key_file"], args["command"],
                     args["force_command"], connect_timeout=3)


def test_graceful_power_off_is_confirmed_by_the_port_closing(sshd_peer):
    driver = driver_for(sshd_peer)
    assert driver.query() == "on"
    result = PowerExecutor(driver, timeout=10, graceful_timeout=5, poll_interval=0.1).run("powered_off")
    assert result["state"] == "off" and result["steps"] == ["graceful_off"]
    assert sshd_peer.poweroff_requests() == ["graceful"]


def test_forced_runs_the_force_command(sshd_peer):
    result = PowerExecutor(driver_for(sshd_peer), timeout=10, graceful_timeout=5, poll_interval=0.1).run("forced_off")
    assert result["forced"] and sshd_peer.poweroff_requests() == ["forced"]


def test_failing_command_is_reported(sshd_peer):
    driver = driver_for(sshd_peer, command="echo no such luck >&2; exit 3")
    with pytest.raises(PowerError) as err:
        driver.power_off(graceful=True)
    assert err.value.kind == PowerError.PROTOCOL and "exited 3" in str(err.value) and "no such luck" in str(err.value)


def test_wrong_key_is_bad_credentials(sshd_peer, tmp_path):
    other = tmp_path / "other"
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(other)], check=True)
    with pytest.raises(PowerError) as err:
        driver_for(sshd_peer, private_key_file=str(other)).power_off(graceful=True)
    assert err.value.kind == PowerError.AUTH and sshd_peer.running


def test_unreachable_host(sshd_peer):
    # A port bound but never listening refuses connections, and nothing else can take it while we hold
    # it (a stopped peer's port could be reused by a parallel test's server).
    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        port = held.getsockname()[1]
        driver = SshDriver("127.0.0.1", port, "root", str(sshd_peer.key_file), "poweroff", "poweroff -f",
                           connect_timeout=2)
        assert driver.query() == "off"
        with pytest.raises(PowerError) as err:
            driver.power_off(graceful=True)
    assert err.value.kind == PowerError.UNREACHABLE and "127.0.0.1:%d" % port in str(err.value)
