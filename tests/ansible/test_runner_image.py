"""What can be checked of the runner image without building it (no container engine here):
the ansible-builder definition parses and names files that exist, the Containerfile copies only files
that exist or that `ansible-galaxy collection build` makes, the collection tarball builds and installs,
the installed copy serves its modules, and the image's Python requirements cover every library the
module_utils import."""
from __future__ import annotations

import ast
import re
import subprocess
import tarfile

import yaml

from hc_ansible import REPO, VENV_BIN, ansible_env, copy_collection

CONTAINERFILE = REPO / "images" / "runner" / "Containerfile"
REQUIREMENTS = REPO / "images" / "runner" / "requirements.txt"
PRODUCED_BY_BUILD = {"build/homecluster-infra.tar.gz"}  # the collection tarball, renamed (see the Containerfile)


def test_execution_environment_definition():
    ee = yaml.safe_load((REPO / "execution-environment.yml").read_text())
    assert ee["version"] == 3
    assert (REPO / ee["dependencies"]["python"]).is_file()
    for item in ee["additional_build_files"]:
        assert item["src"] in PRODUCED_BY_BUILD or (REPO / item["src"]).exists(), item["src"]
    steps = "\n".join(ee["additional_build_steps"]["append_final"])
    assert "USER 1000" in steps and "/runner" in steps


def test_containerfile_copies_only_existing_files_and_runs_as_non_root():
    text = CONTAINERFILE.read_text()
    sources = re.findall(r"^COPY\s+(\S+)\s+\S+", text, re.M)
    assert sources, "the Containerfile copies nothing?"
    for src in sources:
        assert src in PRODUCED_BY_BUILD or (REPO / src).exists(), "COPY %s: no such file" % src
    users = re.findall(r"^USER\s+(\S+)", text, re.M)
    assert users and users[-1] not in ("0", "root")
    assert re.search(r"ANSIBLE_HOME=/runner", text) and re.search(r"^WORKDIR /runner", text, re.M)


def third_party_imports():
    names = set()
    for path in (REPO / "plugins" / "module_utils").glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                names.update(a.name.split(".")[0] for a in node.names)
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names.add(node.module.split(".")[0])
    stdlib = {"__future__", "os", "re", "socket", "threading", "time", "traceback", "ansible_collections", "ansible"}
    return names - stdlib


def test_requirements_cover_every_library_module_utils_import():
    listed = {re.split(r"[<>=\[ ]", line)[0].strip().lower()
              for line in REQUIREMENTS.read_text().splitlines() if line.strip() and not line.startswith("#")}
    assert third_party_imports() <= listed, third_party_imports() - listed


def test_collection_tarball_builds_installs_and_serves_its_modules(tmp_path):
    # Built from the collection's content: the work tree also holds ansible-lint's collections/ symlink tree
    # and test caches that galaxy.yml's build_ignore does not exclude yet (a symlink there breaks install).
    env = ansible_env(tmp_path)
    env.pop("ANSIBLE_COLLECTIONS_PATH")
    source = copy_collection(tmp_path / "src")
    built = subprocess.run([str(VENV_BIN / "ansible-galaxy"), "collection", "build", "--output-path", str(tmp_path),
                            str(source)], env=env, capture_output=True, text=True, cwd=tmp_path, timeout=120)
    assert built.returncode == 0, built.stdout + built.stderr
    tarball = next(tmp_path.glob("homecluster-infra-*.tar.gz"))
    with tarfile.open(tarball) as tar:
        names = set(tar.getnames())
    for needed in ("plugins/modules/machine_power.py", "plugins/modules/node_drain.py", "roles/power_on/tasks/main.yml",
                   "playbooks/startup.yml", "playbooks/shutdown.yml", "playbooks/drain.yml", "meta/runtime.yml"):
        assert needed in names, needed
    installed = subprocess.run([str(VENV_BIN / "ansible-galaxy"), "collection", "install", "--no-deps", "-p",
                                str(tmp_path / "installed"), str(tarball)], env=env, capture_output=True, text=True,
                               timeout=120)
    assert installed.returncode == 0, installed.stdout + installed.stderr
    env["ANSIBLE_COLLECTIONS_PATH"] = str(tmp_path / "installed")
    doc = subprocess.run([str(VENV_BIN / "ansible-doc"), "homecluster.infra.machine_power"], env=env,
                         capture_output=True, text=True, timeout=120)
    assert doc.returncode == 0 and "graceful_timeout" in doc.stdout, doc.stderr
