"""BMC credentials from variables, with the password in Ansible Vault: power.yml (host var credentials)
against ipmi_sim and the power_off role (power_off_credentials) against the sushy-tools Redfish emulator,
run by ansible-playbook at -vvv with a vault password file. The password must reach the BMC (the machine
changes state) and appear nowhere in the output."""
from __future__ import annotations

import subprocess

import pytest

from ansible_peers.sushy import SushyEmulator
from hc_ansible import VENV_BIN, ansible_env, run_playbook

VAULT_PASSWORD = "vault-pw-3c1d9e"


def vault_file(tmp_path):
    path = tmp_path / "vault-password"
    path.write_text(VAULT_PASSWORD + "\n")
    path.chmod(0o600)
    return path


def encrypt_string(tmp_path, secret: str, name: str) -> str:
    """`ansible-vault encrypt_string --vault-password-file F SECRET --name NAME`: the YAML it prints."""
    proc = subprocess.run([str(VENV_BIN / "ansible-vault"), "encrypt_string", "--vault-password-file",
                           str(vault_file(tmp_path)), secret, "--name", name],
                          env=ansible_env(tmp_path), capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert secret not in proc.stdout and "$ANSIBLE_VAULT" in proc.stdout
    return proc.stdout


def indent(text: str, spaces: int) -> str:
    return "\n".join(" " * spaces + line if line.strip() else line for line in text.splitlines()) + "\n"


def test_power_playbook_takes_a_vaulted_password_from_the_inventory(tmp_path, ipmi_sim):
    inventory = tmp_path / "machines.yml"
    inventory.write_text(
        "all:\n  hosts:\n    worker-01:\n      power_method: ipmi\n"
        "      ipmi: {address: 127.0.0.1, port: %d}\n"
        "      credentials_dir: %s\n"  # holds no files: the variables must win
        "      credentials:\n        username: %s\n" % (ipmi_sim.port, tmp_path / "empty", ipmi_sim.username)
        + indent(encrypt_string(tmp_path, ipmi_sim.password, "password"), 8))
    proc, _ = run_playbook(tmp_path, "homecluster.infra.power", {"slot": "worker-01", "state": "powered_on"},
                           ["-i", str(inventory), "--vault-password-file", str(vault_file(tmp_path)), "-vvv"])
    output = proc.stdout + proc.stderr
    assert proc.returncode == 0, proc.stdout[-3000:]
    assert "worker-01: off -> on" in proc.stdout
    assert ipmi_sim.power == "on"
    assert ipmi_sim.password not in output, "the BMC password appeared in the -vvv output"


ROLE_PLAY = """---
- name: Power off with vaulted credentials
  hosts: localhost
  gather_facts: false
  vars_files:
    - {vars_file}
  tasks:
    - name: Power off
      ansible.builtin.include_role:
        name: homecluster.infra.power_off
      vars:
        power_off_method: redfish
        power_off_redfish: {{endpoint: "{endpoint}", system_id: "{system_id}", insecure: true}}
        power_off_credentials_dir: {empty}
        power_off_credentials:
          username: "{username}"
          password: "{{{{ vault_bmc_password }}}}"
        power_off_graceful_timeout: 10
        power_off_timeout: 30
"""


@pytest.fixture
def redfish_on(tmp_path):
    emulator = SushyEmulator(tmp_path / "redfish", delay=1, power_state="On").start()
    yield emulator
    emulator.stop()


def test_power_off_role_takes_a_vaulted_password_from_a_variable(tmp_path, redfish_on):
    redfish_emulator = redfish_on
    secrets = tmp_path / "secrets.yml"
    secrets.write_text(encrypt_string(tmp_path, redfish_emulator.password, "vault_bmc_password"))
    play = tmp_path / "off.yml"
    play.write_text(ROLE_PLAY.format(vars_file=secrets, endpoint=redfish_emulator.endpoint,
                                     system_id=redfish_emulator.system_id, empty=tmp_path / "empty",
                                     username=redfish_emulator.username))
    proc, _ = run_playbook(tmp_path, str(play), None,
                           ["--vault-password-file", str(vault_file(tmp_path)), "-vvv"])
    output = proc.stdout + proc.stderr
    assert proc.returncode == 0, proc.stdout[-3000:]
    assert redfish_emulator.power() == "Off"
    assert redfish_emulator.password not in output, "the BMC password appeared in the -vvv output"
