"""The collection on the older ansible-core lines meta/runtime.yml claims (every other test runs the project's
own line, 2.19): ansible-test sanity and units, and the tarball installed with that line's ansible-galaxy and
its startup and shutdown playbooks run with that line's ansible-playbook against an IPMI peer (modules under
AnsibleModule, the roles' argument specs, the playbooks' templating).

Each line gets a virtualenv with its ansible-core and the modules' libraries, made once and kept outside the
checkout ($HOMECLUSTER_ANSIBLE_CORE_CACHE, default ~/.cache/homecluster/ansible-core); ansible-test keeps its
own per-line copy of the collection (hc_ansible.ansible_test_copy), as test_collection_checks.py does for 2.19.
Cost and the decision: docs/collection.md#supported-ansible-core-versions."""
from __future__ import annotations

import fcntl
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from ansible_test_offline import install as install_get_pip_stand_in
from hc_ansible import OLDER_ANSIBLE_CORE_LINES, REPO, ansible_env, ansible_test_copy, build_collection, \
    install_collection

pytestmark = pytest.mark.slow

CACHE = Path(os.environ.get("HOMECLUSTER_ANSIBLE_CORE_CACHE", Path.home() / ".cache" / "homecluster" / "ansible-core"))
# what ansible-test units needs besides ansible-core, and the units' Redfish peer (the project's `lab` extra)
TEST_PACKAGES = ("pytest>=8,<10", "pytest-xdist>=3,<4", "pytest-mock>=3,<4", "sushy-tools>=2,<3")


def line_venv(line: str) -> Path:
    """The virtualenv for ansible-core LINE (for example "2.17"), made on first use."""
    major, minor = line.split(".")
    packages = ["ansible-core>=%s,<%s.%d" % (line, major, int(minor) + 1), *TEST_PACKAGES,
                *[r for r in (REPO / "requirements.txt").read_text().splitlines() if r and not r.startswith("#")]]
    venv = CACHE / line
    stamp = venv / ".homecluster-installed"
    CACHE.mkdir(parents=True, exist_ok=True)
    with open(CACHE / (line + ".lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # another worker or checkout may be making it
        if not stamp.exists() or stamp.read_text() != "\n".join(packages):
            subprocess.run([sys.executable, "-m", "venv", "--clear", str(venv)], check=True, timeout=300)
            pip = subprocess.run([str(venv / "bin" / "pip"), "install", "-q", "--disable-pip-version-check",
                                  *packages], capture_output=True, text=True, timeout=1200)
            assert pip.returncode == 0, pip.stdout + pip.stderr
            stamp.write_text("\n".join(packages))
    return venv / "bin"


def line_env(tmp_path: Path, bin_dir: Path) -> dict:
    env = ansible_env(tmp_path)
    env["PATH"] = "%s:%s" % (bin_dir, env["PATH"])
    return env


@pytest.fixture(scope="module")
def tarball(tmp_path_factory):
    return build_collection(tmp_path_factory.mktemp("built"))


@pytest.fixture(scope="module")
def installed(tarball, tmp_path_factory):
    """installed(line): the collections directory holding the tarball as LINE's ansible-galaxy installed it, once per
    line for the module (the two playbook tests only read it)."""
    made: dict[str, Path] = {}

    def install(line: str) -> Path:
        if line not in made:
            home = tmp_path_factory.mktemp("installed-" + line)
            install_collection(tarball, home / "collections", line_env(home, line_venv(line)))
            made[line] = home / "collections"
        return made[line]
    return install


def ansible_test(line: str, tmp_path: Path, *args):
    bin_dir = line_venv(line)
    install_get_pip_stand_in()
    env = line_env(tmp_path, bin_dir)
    env.pop("ANSIBLE_COLLECTIONS_PATH")
    with ansible_test_copy(line) as dest:
        return subprocess.run([str(bin_dir / "ansible-test"), *args, "--python", "3.11", "--color", "no"],
                              cwd=dest, env=env, capture_output=True, text=True, timeout=1800)


@pytest.mark.parametrize("line", OLDER_ANSIBLE_CORE_LINES)
def test_sanity(line, tmp_path):
    proc = ansible_test(line, tmp_path, "sanity", "--venv")
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-6000:]


@pytest.mark.parametrize("line", OLDER_ANSIBLE_CORE_LINES)
def test_units(line, tmp_path):
    proc = ansible_test(line, tmp_path, "units", "--local", "tests/unit/plugins/")
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-6000:]
    assert " passed" in proc.stdout


@pytest.mark.parametrize("line", OLDER_ANSIBLE_CORE_LINES)
def test_installed_tarball_starts_and_shuts_down_a_machine(line, installed, ipmi_sim, tmp_path):
    bin_dir = line_venv(line)
    version = subprocess.run([str(bin_dir / "ansible-playbook"), "--version"], capture_output=True, text=True,
                             timeout=60).stdout
    assert "core %s." % line in version, version
    env = line_env(tmp_path, bin_dir)
    env["ANSIBLE_COLLECTIONS_PATH"] = str(installed(line))
    creds = tmp_path / "credentials"
    creds.mkdir()
    (creds / "username").write_text(ipmi_sim.username)
    (creds / "password").write_text(ipmi_sim.password)
    job_vars = tmp_path / "vars.json"
    job_vars.write_text(json.dumps({
        "slot": "worker-01", "claim": "worker-01-1a2b3c", "power_method": "ipmi",
        "ipmi": {"address": "127.0.0.1", "port": ipmi_sim.port}, "credentials_dir": str(creds),
        "power_timeout": 30, "graceful_timeout": 2}))
    for playbook, power in (("startup", "on"), ("shutdown", "off")):
        proc = subprocess.run([str(bin_dir / "ansible-playbook"), "homecluster.infra." + playbook,
                               "-e", "@%s" % job_vars], env=env, cwd=tmp_path, capture_output=True, text=True,
                              timeout=180)
        assert proc.returncode == 0, (playbook, proc.stdout[-3000:], proc.stderr[-3000:])
        assert ipmi_sim.power == power, (playbook, proc.stdout[-3000:])


@pytest.mark.parametrize("line", OLDER_ANSIBLE_CORE_LINES)
def test_the_job_path_refuses_a_line_that_would_template_the_slots_fields(line, installed, tmp_path):
    """A lifecycle Job passes the slot's fields in job_vars_file, read as data; before 2.19 ansible-core could
    render a template found in such data, so the playbooks refuse to run that way (docs/security.md). By hand
    with -e variables, as above, the older lines work."""
    bin_dir = line_venv(line)
    env = line_env(tmp_path, bin_dir)
    env["ANSIBLE_COLLECTIONS_PATH"] = str(installed(line))
    job_vars = tmp_path / "vars.json"
    job_vars.write_text(json.dumps({"slot": "worker-01", "power_method": "ipmi",
                                    "ipmi": {"address": "127.0.0.1", "port": 9}}))
    proc = subprocess.run([str(bin_dir / "ansible-playbook"), "homecluster.infra.startup",
                           "-e", "job_vars_file=%s" % job_vars], env=env, cwd=tmp_path, capture_output=True,
                          text=True, timeout=180)
    assert proc.returncode != 0, proc.stdout[-3000:]
    assert "the lifecycle playbooks need ansible-core 2.19 or later" in proc.stdout, proc.stdout[-3000:]
