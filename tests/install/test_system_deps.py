"""Every host program the project runs is installed by scripts/system-deps.sh (or is Python's, the venv's or
the base system's), so `make test` passes on a fresh Debian 12 machine.

host_programs.py finds the programs in the source (Python calls, Ansible command tasks, the Makefile and
the scripts). Which program a package provides is read from the machine with `dpkg -L`, so the packages
must be installed: `make test` runs scripts/system-deps.sh first.
"""
from __future__ import annotations

import re
import subprocess
import sys
from functools import lru_cache
from pathlib import Path

import pytest
from host_programs import PYTHON, REPO, VENV_PREFIX, programs, shell_programs

from homecluster_lab.vm import host_tools

SYSTEM_DEPS = REPO / "scripts" / "system-deps.sh"
VENV_BIN = Path(sys.executable).parent

# The base system: Debian 12's Essential packages that hold programs we run, and apt, without which
# system-deps.sh could install nothing. Everything else comes from system-deps.sh.
BASE_PACKAGES = ("coreutils", "util-linux", "dpkg", "grep", "gzip", "sed", "findutils", "tar", "bash", "dash",
                 "debianutils", "apt")

# Programs no Debian 12 package provides at a usable version, each with why and the script that checks for
# it and stops with a message saying how to get it (test_external_programs_are_checked_before_use).
EXTERNAL = {
    "kubectl": ("Debian 12 has only kubectl 1.20 (kubernetes-client); the tests need >= 1.30",
                "scripts/system-deps.sh"),
    "go": ("Debian 12's golang is 1.19; building the real control plane needs >= 1.25",
           "scripts/build-k8s.sh"),
}
# Programs our scripts install from PyPI into a virtualenv of their own outside the checkout, with the script
# and the pinned requirement it installs (test_tools_from_pypi_are_pinned_and_installed_by_their_script).
FROM_PYPI = {"uv": ("scripts/venv.sh", 'install -q "uv==$UV_VERSION"')}
# Programs `make k8s`, `make flux` and `make realnode` (scripts/build-k8s.sh) build from Go modules into their
# caches: the names in lab/{k8s,helm,flux,k8s-node}/binaries.
BUILT_BY_MAKE_K8S = frozenset(line.split()[0] for module in ("k8s", "helm", "flux", "k8s-node")
                              for line in (REPO / "lab" / module / "binaries").read_text().splitlines()
                              if line.strip() and not line.startswith("#"))
# Programs a package installs through update-alternatives, so `dpkg -L` does not list them under their name.
ALTERNATIVES = {"iptables": ("iptables", "iptables-save", "ip6tables", "ip6tables-save")}
# Programs of virtualenvs the tests make themselves (ansible-core 2.17 and 2.18, tests/ansible/test_ansible_core_lines.py)
OWN_VENV = "@own-venv"
# What must exist before system-deps.sh can run at all.
PRECONDITIONS = {
    "python3": "the README's prerequisite (Python 3.11); the Makefile makes the venv with it",
    "sudo": "system-deps.sh runs apt-get through it when not root",
}

# Call sites whose program is not a literal the scan can read, with the programs they run.
INDIRECT = {
    ("lab/homecluster_lab/vm/host_tools.py", "missing"):
        set(host_tools.BUILDER_TOOLS) | set(host_tools.RUN_TOOLS),
    ("lab/homecluster_lab/executor/process.py", "ContainerProcess.start"):
        {"sh", "sleep", VENV_PREFIX + "ansible-runner"},  # a Pod's command: the tests' Pods and lifecycle Jobs
    ("lab/homecluster_lab/operator_proc.py", "OperatorProcess.start"): {"setpriv", PYTHON},
    ("lab/homecluster_lab/vm/apt.py", "_run"): {"apt-cache", "apt-get", "dpkg-deb"},
    # the guest's busybox, unpacked from its .deb (runs on the host, installed nowhere)
    ("lab/homecluster_lab/vm/assemble.py", "install_busybox"): set(),
    ("lab/homecluster_lab/vm/qemu.py", "Vm.start"): {"qemu-system-x86_64"},
    ("lab/homecluster_lab/vm/ssh.py", "run"): {"ssh"},
    ("tests/ansible/ansible_peers/ipmisim.py", "IpmiSim.start"): {"ipmi_sim"},
    ("tests/vm/test_vm_image.py", "test_the_builder_names_a_missing_tool_and_its_package_before_building"):
        set(host_tools.BUILDER_TOOLS),
    ("tests/install/test_system_deps.py", "test_system_deps_stops_without_a_usable_kubectl"): {"scripts/system-deps.sh"},
    ("tests/install/test_under_load.py", "test_the_command_runs_beside_two_normal_priority_workers_that_end_with_it"):
        {"scripts/under-load.sh", "sh", "pgrep", "ps"},
    # the real control plane's programs, and the real node's (its mount namespace's holder runs mount and sleep)
    ("lab/homecluster_lab/k8s/process.py", "Component.start"):
        {"setpriv", *BUILT_BY_MAKE_K8S, "sh", "unshare", "nsenter", "containerd", "mount", "sleep"},
    ("tests/k8s/test_k8s_self_signed.py", "operator"): {"setpriv", PYTHON},  # `homecluster run --self-signed-certs`
    ("tests/k8s/test_k8s_crds.py", "_kubectl"): {"kubectl"},
    ("scripts/make-dist.py", "render_install"): {"kubectl"},
    ("scripts/mutation.py", "main.mutmut"): {VENV_PREFIX + "mutmut"},  # `mutmut run|results ...`
    ("scripts/warm-test-cache.py", "main"): {PYTHON},  # the venv's python -m pytest --collect-only
    ("tests/install/helm_chart.py", "helm"): {"helm"},
    ("tests/k8s/k8s_objects.py", "run"): {"kubectl", "helm"},
    ("scripts/alert-drill.py", "drill"): {"promtool"},
    # the fresh virtualenv's python (README.md's collection build)
    ("tests/ansible/test_collection_build_from_readme.py", "fresh_venv_with"): {OWN_VENV},
    ("tests/ansible/test_collection_build_from_readme.py",
     "test_the_readmes_pip_install_is_all_a_fresh_venv_needs_to_build_the_collection"): {OWN_VENV},
    ("tests/install/test_alert_rules.py", "test_alerts_fire_on_recorded_series"): {"promtool"},
    ("tests/unit/test_k8s_build_key.py", "_script_folder"): {"scripts/build-k8s.sh"},
    ("tests/ansible/test_job_inputs_are_data.py", "test_a_template_in_any_field_of_a_slot_stays_text_in_the_job"):
        {VENV_PREFIX + "ansible-runner"},  # each container's command of a built Job
    ("tests/ansible/test_changelog.py", "run"): {VENV_PREFIX + "antsibull-changelog"},
    ("tests/ansible/test_execution_environment.py",
     "test_ansible_builder_create_writes_a_context_whose_build_installs_the_collection_and_its_requirements"):
        {VENV_PREFIX + "ansible-builder"},
    ("tests/ansible/test_execution_environment.py",
     "test_ansible_builder_introspect_finds_every_requirement_of_the_installed_collection"):
        {VENV_PREFIX + "ansible-builder"},
    ("tests/ansible/test_ansible_core_lines.py", "line_venv"): {OWN_VENV},  # pip of a venv it just made
    ("tests/ansible/test_ansible_core_lines.py", "ansible_test"): {OWN_VENV},
    ("tests/ansible/test_ansible_core_lines.py", "test_the_job_path_refuses_a_line_that_would_template_the_slots_fields"):
        {OWN_VENV},
    ("tests/ansible/test_ansible_core_lines.py", "test_installed_tarball_starts_and_shuts_down_a_machine"):
        {OWN_VENV},
    # this virtualenv's Python (venv, pip wheel) and the clean virtualenv's python and homecluster
    ("tests/unit/test_distributions.py", "_run"): {PYTHON, OWN_VENV},
    ("lab/homecluster_lab/k8s/install.py", "kustomize"): {"kubectl"},
    ("tests/k8s/k8s_install_proof.py", "run_program"): {"helm", "kubectl"},
    ("tests/k8s/test_k8s_lab_cli.py", "test_lab_on_the_real_control_plane_starts_serves_and_stops_clean"): {"kubectl"},
    ("tests/unit/test_distributions.py",
     "test_the_product_installs_alone_and_imports_without_the_lab_or_the_collection"): {OWN_VENV},
    # the lab's real node (homecluster_lab.k8s.realnode): what it checks for, its chains, its bridge
    ("lab/homecluster_lab/k8s/realnode.py", "missing_reason"):
        {"containerd", "ctr", "runc", "unshare", "nsenter", "iptables", "conntrack", "ip"},
    ("lab/homecluster_lab/k8s/nodesweep.py", "remove_kube_chains"): set(ALTERNATIVES["iptables"]),
    ("lab/homecluster_lab/k8s/nodesweep.py", "make_bridge"): {"ip"},
    ("lab/homecluster_lab/k8s/nodesweep.py", "sweep"): {"kube-proxy"},
    ("tests/k8s/test_k8s_realnode_cleanup.py", "leftovers"): set(ALTERNATIVES["iptables"]),
    # a kubeconfig user's credential plugin (the CLI runs it); the tests' plugin is this script
    ("controller/homecluster/kube/execcred.py", "ExecPlugin._run"): {"tests/fixtures/exec-credential-plugin.sh"},
    # the same for the collection's node modules (tests/ansible/test_node_connection.py)
    ("plugins/module_utils/kube_client.py", "_run_exec"): {"tests/fixtures/exec-credential-plugin.sh"},
}


def listed_packages() -> list[str]:
    """The PACKAGES=(...) array of scripts/system-deps.sh."""
    match = re.search(r"^PACKAGES=\(([^)]*)\)", SYSTEM_DEPS.read_text(), re.M)
    assert match, "scripts/system-deps.sh has no PACKAGES=(...) line"
    return match.group(1).split()


@lru_cache(maxsize=None)
def package_programs(package: str) -> frozenset[str]:
    """Names of the programs (files in a bin/ or sbin/ folder) the installed package ships."""
    out = subprocess.run(["dpkg", "-L", package], capture_output=True, text=True)
    if out.returncode != 0:
        pytest.fail(f"Debian package {package} is not installed; run scripts/system-deps.sh (make test does)")
    return frozenset(Path(line).name for line in out.stdout.splitlines()
                     if Path(line).parent.name in ("bin", "sbin"))


def provider(program: str) -> str:
    """The installed Debian package that holds a bin/ or sbin/ `program` on this machine (for the message)."""
    out = subprocess.run(["dpkg", "-S", f"bin/{Path(program).name}"], capture_output=True, text=True)
    hits = {line.split(":")[0] for line in out.stdout.splitlines()
            if re.search(rf"bin/{re.escape(Path(program).name)}$", line)}
    return ", ".join(sorted(hits)) or "none installed here"


@lru_cache(maxsize=None)
def scanned():
    return programs()


def all_programs() -> dict[str, list[str]]:
    found, unresolved = scanned()
    found = {program: list(where) for program, where in found.items()}
    for site, lines in unresolved.items():
        for program in INDIRECT.get(site, ()):
            found.setdefault(program, []).append(f"{site[0]}:{lines[0]}")
    return found


def unprovided(found: dict[str, list[str]], packages: list[str]) -> dict[str, list[str]]:
    """The programs neither the packages, the venv, Python, the repository nor the lists above provide."""
    provided = set().union(*(package_programs(p) for p in (*packages, *BASE_PACKAGES)),
                           *(set(names) for p, names in ALTERNATIVES.items() if p in packages))
    left = {}
    for program, where in found.items():
        if program in (PYTHON, OWN_VENV) or program in EXTERNAL or program in PRECONDITIONS \
                or program in BUILT_BY_MAKE_K8S or program in FROM_PYPI:
            continue
        if program.startswith(VENV_PREFIX):
            if (VENV_BIN / program[len(VENV_PREFIX):]).exists():
                continue
        elif Path(program).name in provided or ("/" in program and not program.startswith("/")
                                                 and (REPO / program).exists()):
            continue
        left[program] = where
    return left


def test_every_host_program_is_installed_by_system_deps():
    found = all_programs()
    left = unprovided(found, listed_packages())
    assert not left, "programs no package in scripts/system-deps.sh provides; add its package there:\n" + "\n".join(
        f"  {program} (here from Debian package {provider(program)}), run at {', '.join(where[:3])}"
        for program, where in sorted(left.items()))


def test_dropping_a_package_from_the_list_is_caught():
    """The check above can fail: without kmod, the VM image builder's depmod is reported."""
    found = all_programs()
    without_kmod = [p for p in listed_packages() if p != "kmod"]
    assert "depmod" in unprovided(found, without_kmod)


def test_tools_from_pypi_are_pinned_and_installed_by_their_script():
    """A program FROM_PYPI is run where the scan sees it, and its script installs it at a pinned version."""
    found = all_programs()
    for program, (script, install) in FROM_PYPI.items():
        assert any(where.startswith(script) for where in found.get(program, [])), \
            f"{program} is not run by {script}: drop it from FROM_PYPI"
        text = (REPO / script).read_text()
        assert install in text, f"{script} no longer installs {program} with `{install}`"
        assert re.search(rf"^{program.upper()}_VERSION=\d+\.\d+\.\d+$", text, re.M), \
            f"{script} does not pin {program}'s version ({program.upper()}_VERSION=x.y.z)"


def test_every_call_site_with_a_computed_program_is_named():
    _, unresolved = scanned()
    unnamed = sorted(set(unresolved) - set(INDIRECT))
    stale = sorted(set(INDIRECT) - set(unresolved))
    assert not unnamed, ("these calls start a program the scan cannot read; name what they run in INDIRECT: "
                         + ", ".join(f"{path}:{unresolved[(path, fn)][0]} ({fn})" for path, fn in unnamed))
    assert not stale, f"INDIRECT names call sites that no longer exist: {stale}"


def test_the_scan_reads_every_kind_of_source():
    found, _ = scanned()
    expected = {
        "depmod": "lab/homecluster_lab/vm/image.py",  # subprocess.run([...]) in the product
        "kubectl": "tests/",  # asyncio.create_subprocess_exec in the tests
        "pgrep": "molecule/",  # an ansible.builtin.command task
        "dpkg-query": "scripts/system-deps.sh",
        VENV_PREFIX + "pytest": "Makefile",
        "/usr/sbin/sshd": "lab/homecluster_lab/machines/ssh.py",  # a module constant
        "setpriv": "lab/homecluster_lab/sessionproc.py",  # shutil.which
    }
    for program, where in expected.items():
        assert any(w.startswith(where) for w in found.get(program, [])), (program, found.get(program))
    assert shell_programs('if ! dpkg-query -W "$p" | grep -q x; then echo "a; b" >&2; fi') == ["dpkg-query", "grep"]
    assert shell_programs('X=1 $SUDO apt-get install "$(id -u)"') == ["sudo", "apt-get", "id"]
    # a script's own functions are not programs; what their bodies run is
    assert shell_programs('step() {\n  date\n}\nstep "x"; umoci unpack') == ["date", "umoci"]


def test_the_makefile_venv_needs_python3_venv():
    """`python3 -m venv` fails on Debian without python3-venv (ensurepip is split out)."""
    if "-m venv" in (REPO / "Makefile").read_text():
        assert "python3-venv" in listed_packages()


def test_external_programs_are_checked_before_use():
    for program, (_why, script) in EXTERNAL.items():
        assert f"command -v {program}" in (REPO / script).read_text(), (
            f"{script} must check for {program} and say how to get it")


@pytest.mark.parametrize("table", [host_tools.BUILDER_TOOLS, host_tools.RUN_TOOLS], ids=["builder", "run"])
def test_the_vm_tools_name_the_package_that_provides_them(table):
    """The VM code's up-front check names the right Debian package for each program, and lists every
    program the VM code runs."""
    for program, package in table.items():
        assert program in package_programs(package), f"{package} does not provide {program}"
        assert package in (*listed_packages(), *BASE_PACKAGES), f"{package} is not installed by system-deps.sh"
    found = all_programs()
    vm_programs = {p for p, where in found.items() if any(w.startswith("lab/homecluster_lab/vm/")
                                                           for w in where)} - {PYTHON}
    assert vm_programs <= set(host_tools.BUILDER_TOOLS) | set(host_tools.RUN_TOOLS), vm_programs


@pytest.mark.parametrize("kubectl", [None, "20"], ids=["missing", "debian-1.20"])
def test_system_deps_stops_without_a_usable_kubectl(tmp_path, kubectl):
    """Run the real script (every package is installed, so it installs nothing) on a PATH without kubectl, or
    with one that says it is 1.20 (Debian 12's kubernetes-client): it fails and says how to get kubectl."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for program in ("bash", "dpkg-query", "grep", "sed", "head", "id"):
        (bin_dir / program).symlink_to(next(Path(d) / program for d in ("/usr/bin", "/bin")
                                            if (Path(d) / program).exists()))
    if kubectl:
        fake = bin_dir / "kubectl"
        fake.write_text('#!/bin/sh\necho \'{"clientVersion": {"major": "1", "minor": "%s"}}\'\n' % kubectl)
        fake.chmod(0o755)
    proc = subprocess.run([str(SYSTEM_DEPS)], capture_output=True, text=True, timeout=60, env={"PATH": str(bin_dir)})
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "kubectl" in proc.stderr and "https://kubernetes.io/docs/tasks/tools/install-kubectl-linux/" in proc.stderr
    assert "installing" not in proc.stdout
    if kubectl:
        assert "kubectl 1.20" in proc.stderr
