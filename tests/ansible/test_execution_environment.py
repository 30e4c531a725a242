"""The collection's requirements where ansible-builder finds them (requirements.txt, bindep.txt, named by
meta/execution-environment.yml), and the runner's execution-environment.yml as ansible-builder v3 reads it.

No container engine runs here, so the build's two steps that decide what the image holds are run outside one,
from the context `ansible-builder create` writes: the galaxy stage (`ansible-galaxy collection install -r
requirements.yml` in the context's _build directory) and the builder stage's introspection (the context's own
introspect.py, with the arguments its Containerfile gives it). `ansible-builder introspect` of a collections
directory holding the installed tarball is what anyone's execution environment that lists homecluster.infra
gets."""
from __future__ import annotations

import ast
import re
import shlex
import shutil
import subprocess
import sys
import tomllib

import pytest
import yaml

from hc_ansible import REPO, VENV_BIN, ansible_env, build_collection, install_collection

pytestmark = pytest.mark.slow

ANSIBLE_BUILDER = str(VENV_BIN / "ansible-builder")
# Base images whose package manager is dnf or microdnf, the only ones ansible-builder's scripts drive.
RPM_BASE_IMAGE = re.compile(r"(^|/)(ubi\d*|ubi\d+-minimal|centos|fedora|fedora-minimal|rhel\d*|ee-minimal-rhel\d+|"
                            r"almalinux|rockylinux|stream\d*)[:/@]")


def requirement_lines(path) -> list:
    return [line.strip() for line in path.read_text().splitlines() if line.strip() and not line.startswith("#")]


def requirement_name(line: str) -> str:
    return re.split(r"[<>=!~\[ ;]", line, maxsplit=1)[0].lower()


def without_origin(lines) -> list:
    """introspection appends '  # from collection X' to each line"""
    return [re.sub(r"\s+#.*$", "", line) for line in lines]


def test_collection_names_its_requirements_for_ansible_builder():
    meta = yaml.safe_load((REPO / "meta" / "execution-environment.yml").read_text())
    assert meta["dependencies"] == {"python": "requirements.txt", "system": "bindep.txt"}
    assert requirement_lines(REPO / "requirements.txt")


def third_party_imports() -> set:
    names = set()
    for path in (REPO / "plugins").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                names.update(a.name.split(".")[0] for a in node.names)
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names.add(node.module.split(".")[0])
    return names - set(sys.stdlib_module_names) - {"ansible", "ansible_collections"} - ANSIBLE_CORE_REQUIRES


# libraries ansible-core itself requires, so present wherever a module runs under it; ansible-builder leaves
# them out of an execution environment's requirements (the node modules read a kubeconfig with PyYAML)
ANSIBLE_CORE_REQUIRES = {"yaml"}


def test_requirements_cover_every_library_the_plugins_import_at_the_versions_the_tests_run():
    listed = {requirement_name(line): line for line in requirement_lines(REPO / "requirements.txt")}
    assert third_party_imports() == set(listed), "plugins import %s; requirements.txt lists %s" % (
        sorted(third_party_imports()), sorted(listed))
    # the project's venv (what every test runs with) is installed from pyproject.toml's ranges; the collection
    # states only their lower bounds (Ansible's guidance: no upper caps in a collection's requirements)
    project = {requirement_name(d): d.replace(" ", "")
               for d in tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["dependencies"]}
    for name, line in listed.items():
        assert "<" not in line and "==" not in line, "requirements.txt caps %s" % line
        if name in project:
            lower = [s for s in project[name][len(name):].split(",") if s.startswith(">=")]
            assert line.replace(" ", "") == name + lower[0], "requirements.txt %s, pyproject.toml %s" % (
                line, project[name])


# Ways a plugin could run a program on the machine, which bindep.txt would then have to name.
PROGRAM_CALLS = {"run_command", "get_bin_path", "Popen", "call", "check_call", "check_output", "run", "system",
                 "popen", "execv", "execvp", "execve", "spawnv", "spawnvp"}
# The one program a plugin runs that no package of ours provides: a kubeconfig's exec credential plugin, which
# the kubeconfig's owner names and installs (kubelogin, a cloud CLI); the Jobs' in-cluster credentials never
# use one. Nothing for bindep.txt to name.
USER_NAMED_PROGRAMS = {"plugins/module_utils/kube_client.py": "subprocess.run"}


def test_no_plugin_runs_a_program_so_bindep_lists_none():
    runs = []
    for path in (REPO / "plugins").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in PROGRAM_CALLS:
                owner = ast.unparse(node.func.value)
                if owner in ("module", "self.module", "subprocess", "os") or owner.endswith(".module"):
                    if USER_NAMED_PROGRAMS.get(str(path.relative_to(REPO))) == ast.unparse(node.func):
                        continue
                    runs.append("%s:%d %s" % (path.relative_to(REPO), node.lineno, ast.unparse(node.func)))
        if str(path.relative_to(REPO)) in USER_NAMED_PROGRAMS:
            continue
        if re.search(r"^\s*import subprocess|^\s*from subprocess", path.read_text(), re.M):
            runs.append("%s imports subprocess" % path.relative_to(REPO))
    assert not runs, "a plugin runs a program: name its package in bindep.txt, then update this test: %s" % runs
    assert requirement_lines(REPO / "bindep.txt") == []


@pytest.fixture(scope="module")
def tarball(tmp_path_factory):
    return build_collection(tmp_path_factory.mktemp("built"))


def test_ansible_builder_introspect_finds_every_requirement_of_the_installed_collection(tarball, tmp_path):
    collections = tmp_path / "collections"
    install_collection(tarball, collections, ansible_env(tmp_path))
    proc = subprocess.run([ANSIBLE_BUILDER, "introspect", str(collections)], capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    found = yaml.safe_load(proc.stdout)
    assert without_origin(found["python"]) == requirement_lines(REPO / "requirements.txt"), proc.stdout
    assert all(line.endswith("# from collection homecluster.infra") for line in found["python"])
    assert (found["system"] or []) == requirement_lines(REPO / "bindep.txt")


def test_execution_environment_uses_a_base_image_ansible_builder_can_drive():
    ee = yaml.safe_load((REPO / "execution-environment.yml").read_text())
    assert ee["version"] == 3
    image = ee["images"]["base_image"]["name"]
    assert RPM_BASE_IMAGE.search(image), (
        "%s: ansible-builder's scripts install with dnf or microdnf and `python -m ensurepip --root /`; "
        "use an RPM-based base image (UBI, CentOS Stream, Fedora)" % image)
    assert ee.get("options", {}).get("package_manager_path", "/usr/bin/dnf") in ("/usr/bin/dnf", "/usr/bin/microdnf")


def test_ansible_builder_create_writes_a_context_whose_build_installs_the_collection_and_its_requirements(
        tarball, tmp_path):
    source = tmp_path / "source"
    (source / "build").mkdir(parents=True)
    shutil.copy2(REPO / "execution-environment.yml", source)
    shutil.copy2(tarball, source / "build" / "homecluster-infra.tar.gz")  # what the EE file's comment says to do
    context = tmp_path / "context"
    proc = subprocess.run([ANSIBLE_BUILDER, "create", "-f", str(source / "execution-environment.yml"), "-c",
                           str(context), "--output-filename", "Containerfile"], cwd=source, capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "USER directive" not in proc.stdout + proc.stderr, proc.stdout  # builder sets the user (options.user)
    containerfile = (context / "Containerfile").read_text()
    assert re.search(r'^ARG PKGMGR="/usr/bin/(micro)?dnf"', containerfile, re.M), containerfile
    # a RUN step sees the context's files only as /build in the galaxy stage, never as _build/
    assert not re.findall(r"^RUN .*_build/", containerfile, re.M), containerfile
    build = context / "_build"

    # the galaxy stage: WORKDIR /build holds _build; it installs requirements.yml
    collections = tmp_path / "usr-share-ansible-collections"
    env = ansible_env(tmp_path)
    env.pop("ANSIBLE_COLLECTIONS_PATH")
    galaxy = subprocess.run([str(VENV_BIN / "ansible-galaxy"), "collection", "install", "-r", "requirements.yml",
                             "--collections-path", str(collections)], cwd=build, env=env, capture_output=True,
                            text=True, timeout=180)
    assert galaxy.returncode == 0, galaxy.stdout + galaxy.stderr
    assert (collections / "ansible_collections" / "homecluster" / "infra" / "MANIFEST.json").is_file()

    # the builder stage: the context's introspect.py with the Containerfile's arguments, over what galaxy installed
    line = re.search(r"^RUN \$PYCMD /output/scripts/introspect.py (introspect .*)$", containerfile, re.M)
    assert line, containerfile
    args = []
    for arg in shlex.split(line.group(1)):
        if arg.startswith(("--write-pip=", "--write-bindep=")):
            key, _, path = arg.partition("=")
            arg = "%s=%s" % (key, tmp_path / ("written-" + path.rsplit("/", 1)[-1]))
        args.append(arg)
    for name in ("requirements.txt", "bindep.txt"):  # the builder stage copies the user's files to /build
        if (build / name).exists():
            shutil.copy2(build / name, tmp_path / name)
    introspect = subprocess.run([sys.executable, str(build / "scripts" / "introspect.py"), *args, str(collections)],
                                cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert introspect.returncode == 0, introspect.stdout + introspect.stderr
    pip = without_origin(requirement_lines(tmp_path / "written-requirements.txt"))
    for requirement in requirement_lines(REPO / "requirements.txt"):
        assert requirement in pip, "the image would lack %s: it installs %s" % (requirement, pip)
    bindep = without_origin(requirement_lines(tmp_path / "written-bindep.txt"))
    ee_system = yaml.safe_load((REPO / "execution-environment.yml").read_text())["dependencies"].get("system", [])
    assert sorted(bindep) == sorted(requirement_lines(REPO / "bindep.txt") + list(ee_system))
