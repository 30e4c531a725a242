"""The collection as Galaxy and its users get it: `ansible-galaxy collection build` of the repository itself
(galaxy.yml's `manifest:` allow-list decides what goes in), the tarball's listing checked both ways against
what the collection is, then `ansible-galaxy collection install` into a temporary directory and the installed
copy used with nothing of the repository on Ansible's paths."""
from __future__ import annotations

import json
import re
import subprocess
import tarfile

import pytest
import yaml

from hc_ansible import REPO, VENV_BIN, ansible_env, build_collection, install_collection

pytestmark = pytest.mark.slow

# What the collection is: these files, and every file under these directories.
COLLECTION_FILES = {"README.rst", "LICENSE", "CHANGELOG.rst", "requirements.txt", "bindep.txt",
                    "meta/runtime.yml", "meta/execution-environment.yml",
                    "changelogs/config.yaml", "changelogs/changelog.yaml",
                    "docs/collection.md", "docs/job-contract.md"}
COLLECTION_DIRS = ("plugins", "roles", "playbooks", "changelogs/fragments")
# ansible-galaxy writes these two into every tarball
GENERATED = {"MANIFEST.json", "FILES.json"}
PROJECT_URL = "https://github.com/homecluster-dev/homecluster"


def collection_files() -> set:
    names = set(COLLECTION_FILES)
    for directory in COLLECTION_DIRS:
        for path in (REPO / directory).rglob("*"):
            rel = path.relative_to(REPO)
            if path.is_file() and not any(p.startswith(".") or p == "__pycache__" for p in rel.parts):
                names.add(rel.as_posix())
    return names


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """The tarball, built from the work tree as a maintainer builds it."""
    return build_collection(tmp_path_factory.mktemp("built"))


@pytest.fixture(scope="module")
def installed(built, tmp_path_factory):
    """(environment, collections dir) with the tarball installed and only it on Ansible's collection path."""
    root = tmp_path_factory.mktemp("installed")
    env = ansible_env(root)
    env["ANSIBLE_COLLECTIONS_PATH"] = str(root / "collections")
    install_collection(built, root / "collections", env)
    return env, root / "collections"


def test_tarball_holds_the_collection_and_nothing_else(built):
    with tarfile.open(built) as tar:
        packed = {m.name for m in tar.getmembers() if not m.isdir()} - GENERATED
    expected = collection_files()
    missing, extra = sorted(expected - packed), sorted(packed - expected)
    assert not missing, "collection files the tarball lacks (galaxy.yml manifest directives): %s" % missing
    assert not extra, "files in the tarball that are not the collection's: %s" % extra


def test_tarball_metadata_names_the_readme_license_and_project_links(built):
    with tarfile.open(built) as tar:
        info = json.load(tar.extractfile("MANIFEST.json"))["collection_info"]
        names = tar.getnames()
    assert info["readme"] == "README.rst" and info["readme"] in names
    # Galaxy's importer renders README.md, else README.rst: the repository's README.md must stay out
    assert "README.md" not in names
    assert info["license"] == ["GPL-3.0-or-later"] and "LICENSE" in names
    assert info["repository"] == info["homepage"] == PROJECT_URL
    assert info["issues"] == PROJECT_URL + "/issues"
    assert info["documentation"] == PROJECT_URL + "/blob/main/docs/collection.md"


def test_installed_copy_documents_every_module_and_role(installed):
    env, collections = installed
    modules = sorted(p.stem for p in (REPO / "plugins" / "modules").glob("*.py"))
    roles = sorted(p.name for p in (REPO / "roles").iterdir() if (p / "meta" / "argument_specs.yml").exists())
    assert modules and roles
    for kind, names in (("module", modules), ("role", roles)):
        fqcns = ["homecluster.infra." + name for name in names]
        proc = subprocess.run([str(VENV_BIN / "ansible-doc"), "-t", kind, "--json", *fqcns], env=env,
                              capture_output=True, text=True, timeout=180)
        assert proc.returncode == 0, proc.stderr
        docs = json.loads(proc.stdout)
        assert sorted(docs) == fqcns, proc.stderr
        if kind == "module":
            for fqcn, doc in docs.items():
                assert doc["doc"]["filename"].startswith(str(collections)), (fqcn, doc["doc"]["filename"])


def test_installed_copy_powers_a_machine_with_the_power_playbook(installed, ipmi_sim, tmp_path):
    env, _ = installed
    creds = tmp_path / "credentials"
    creds.mkdir()
    (creds / "username").write_text(ipmi_sim.username)
    (creds / "password").write_text(ipmi_sim.password)
    inventory = tmp_path / "machines.yml"
    inventory.write_text(json.dumps({"all": {"hosts": {"worker-01": {
        "power_method": "ipmi", "ipmi": {"address": "127.0.0.1", "port": ipmi_sim.port},
        "credentials_dir": str(creds)}}}}))
    proc = subprocess.run([str(VENV_BIN / "ansible-playbook"), "-i", str(inventory), "homecluster.infra.power",
                           "-e", "slot=worker-01", "-e", "state=powered_on"], env=env, cwd=tmp_path,
                          capture_output=True, text=True, timeout=180)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert ipmi_sim.power == "on"


def readme_plays() -> list:
    """The YAML examples of README.rst that are plays."""
    text = (REPO / "README.rst").read_text()
    blocks = re.findall(r"^\.\. code-block:: yaml\n\n((?:(?:   .*)?\n)+)", text, re.M)
    plays = [yaml.safe_load("\n".join(line[3:] for line in block.splitlines())) for block in blocks]
    return [play for play in plays if isinstance(play, list) and all("hosts" in p for p in play)]


def test_readme_examples_are_playbooks_the_installed_copy_accepts(installed, tmp_path):
    env, _ = installed
    plays = readme_plays()
    assert len(plays) >= 4
    for number, play in enumerate(plays):
        path = tmp_path / ("readme-example-%d.yml" % number)
        path.write_text(yaml.safe_dump(play, sort_keys=False))
        proc = subprocess.run([str(VENV_BIN / "ansible-playbook"), "--syntax-check", str(path)], env=env,
                              cwd=tmp_path, capture_output=True, text=True, timeout=120)
        assert proc.returncode == 0, (path.read_text(), proc.stdout + proc.stderr)
