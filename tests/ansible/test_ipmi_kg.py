"""machine_power's ipmi.key (the BMC key, Kg) through ansible-playbook against OpenIPMI's ipmi_sim configured
with a bmc_key: RMCP+ session keys then derive from Kg, so only the right key opens a session."""
from __future__ import annotations

import pytest

from ansible_peers.ipmisim import IpmiSim
from hc_ansible import run_module, run_modules

BMC_KEY = "hc-kg-5e1f0a9d"  # ASCII in ipmi_sim's lan.conf
KEY_HEX = BMC_KEY.encode().hex()


@pytest.fixture
def keyed_sim(tmp_path):
    sim = IpmiSim(tmp_path / "ipmi", bmc_key=BMC_KEY).start()
    yield sim
    sim.stop()


def args(sim, state="query", **ipmi):
    return {"method": "ipmi", "state": state, "timeout": 15, "ipmi": dict(sim.module_args(), **ipmi)}


def test_the_right_bmc_key_opens_a_session_and_no_key_or_a_wrong_one_does_not(tmp_path, keyed_sim):
    results, proc, _ = run_modules(tmp_path, "homecluster.infra.machine_power", [
        args(keyed_sim),
        args(keyed_sim, key="00" * 20),
        args(keyed_sim, state="powered_on", kg="0x" + KEY_HEX),
    ])
    without, wrong, right = results
    assert without["failed"] and without["cause"] == "bad credentials" and "ipmi.key" in without["msg"], without
    assert wrong["failed"] and wrong["cause"] == "bad credentials", wrong
    assert not right.get("failed") and right["state"] == "on", proc.stdout[-3000:]
    assert keyed_sim.power == "on"


def test_the_key_is_never_shown_and_a_malformed_one_is_refused(tmp_path, keyed_sim):
    result, proc, _ = run_module(tmp_path, "homecluster.infra.machine_power", args(keyed_sim, key=KEY_HEX),
                                 verbosity=3)
    assert not result.get("failed") and result["state"] == "off"
    assert KEY_HEX not in proc.stdout + proc.stderr, "the BMC key appeared in the -vvv output"
    bad, _, _ = run_module(tmp_path, "homecluster.infra.machine_power", args(keyed_sim, key="not-hex-zz"))
    assert bad["failed"] and "ipmi.key" in bad["msg"] and "not-hex-zz" not in bad["msg"]


ROLE_PLAY = """---
- name: Power on through the role, with the BMC key
  hosts: localhost
  gather_facts: false
  tasks:
    - name: Power on
      ansible.builtin.include_role:
        name: homecluster.infra.power_on
      vars:
        power_on_method: ipmi
        power_on_ipmi: {{address: 127.0.0.1, port: {port}, key: "{key}"}}
        power_on_credentials: {{username: "{username}", password: "{password}"}}
        power_on_timeout: 15
"""


def test_the_power_on_role_passes_the_key(tmp_path, keyed_sim):
    from hc_ansible import run_playbook
    play = tmp_path / "on.yml"
    play.write_text(ROLE_PLAY.format(port=keyed_sim.port, key=KEY_HEX, username=keyed_sim.username,
                                     password=keyed_sim.password))
    proc, _ = run_playbook(tmp_path, str(play), None, ["-vvv"])
    assert proc.returncode == 0, proc.stdout[-3000:]
    assert keyed_sim.power == "on"
    assert KEY_HEX not in proc.stdout + proc.stderr and keyed_sim.password not in proc.stdout + proc.stderr
