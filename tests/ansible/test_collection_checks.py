"""ansible-test sanity and units, and ansible-lint (production profile), run as they would be in CI.

ansible-test needs the collection in a real .../ansible_collections/homecluster/infra directory (it
resolves symlinks), so the collection's content is copied to a temporary one. Sanity runs with --venv:
the test virtualenvs are installed from PyPI once and cached under tests/output of that copy's root,
which is kept outside the checkout for every checkout on the machine (hc_ansible.ansible_test_copy).
"""
from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from ansible_test_offline import install as install_get_pip_stand_in
from hc_ansible import REPO, VENV_BIN, ansible_env, ansible_test_copy

pytestmark = pytest.mark.slow

def ansible_test(tmp_path, *args, timeout=900):
    install_get_pip_stand_in()
    env = ansible_env(tmp_path)
    env.pop("ANSIBLE_COLLECTIONS_PATH")
    with ansible_test_copy("main") as dest:
        return subprocess.run([str(VENV_BIN / "ansible-test"), *args], cwd=dest, env=env, capture_output=True,
                              text=True, timeout=timeout)


def test_ansible_test_sanity(tmp_path):
    proc = ansible_test(tmp_path, "sanity", "--venv", "--python", "3.11", "--color", "no")
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-6000:]


def test_ansible_test_units(tmp_path):
    proc = ansible_test(tmp_path, "units", "--local", "--python", "3.11", "--color", "no",
                        "tests/unit/plugins/")
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-6000:]
    assert " passed" in proc.stdout


def test_ansible_lint_production_profile(tmp_path):
    env = ansible_env(tmp_path)
    proc = subprocess.run([str(VENV_BIN / "ansible-lint"), "--profile", "production", "--offline", "--format", "pep8",
                           "roles", "playbooks", "molecule/startup", "molecule/shutdown",
                           "molecule/vm_startup", "molecule/vm_shutdown"],
                          cwd=REPO, env=env, capture_output=True,
                          text=True, timeout=300)
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-6000:]
