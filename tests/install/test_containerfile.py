"""What can be checked of images/controller/Containerfile without a container engine (none runs here).

Checked: every COPY source exists in the build context (the repository root), base images are pinned
by a version tag, the final user is a numeric non-root id matching the Deployment's runAsUser, the
ENTRYPOINT is exec-form and names a console script of the project whose subcommand exists, and
`pip install .` would find the package (the project builds as a wheel from exactly what is copied).
Unproven until an image is built: that the dependencies install on each architecture (amd64, arm64),
that the image starts, and its size.
"""
from __future__ import annotations

import json
import re
import shlex
import tomllib

import pytest

from install_helpers import REPO, find

CONTAINERFILE = REPO / "images" / "controller" / "Containerfile"


def _instructions(text: str) -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) with continuation lines joined and comments dropped."""
    out, buf = [], ""
    for line in text.splitlines():
        if not buf and (not line.strip() or line.lstrip().startswith("#")):
            continue
        buf += line.rstrip("\\").strip() + " "
        if not line.rstrip().endswith("\\"):
            word, _, rest = buf.strip().partition(" ")
            out.append((word.upper(), rest.strip()))
            buf = ""
    return out


@pytest.fixture(scope="module")
def instructions():
    return _instructions(CONTAINERFILE.read_text())


def _args(instructions) -> dict[str, str]:
    return dict(a.split("=", 1) for i, a in instructions if i == "ARG" and "=" in a)


def test_copy_sources_exist_in_the_build_context(instructions):
    copies = [a for i, a in instructions if i == "COPY" and not a.startswith("--from")]
    assert copies
    for args in copies:
        *sources, _dest = shlex.split(args)
        for src in sources:
            assert (REPO / src).exists(), f"COPY {src}: no such file in the build context (the repository root)"


def test_base_images_are_pinned_by_version_tag(instructions):
    args = _args(instructions)
    for i, a in instructions:
        if i != "FROM":
            continue
        image = a.split()[0]
        image = re.sub(r"\$\{(\w+)\}", lambda m: args[m.group(1)], image)
        _, _, tag = image.rpartition(":")
        assert tag and tag != "latest" and re.match(r"^\d+\.\d+\.\d+", tag), f"FROM {image} is not pinned"
        assert "python" in image and tag.startswith("3.11"), f"FROM {image}: the project is built for Python 3.11"


def test_runs_as_the_deployments_non_root_user(instructions, default_objects):
    user = [a for i, a in instructions if i == "USER"][-1]
    uid, _, gid = user.partition(":")
    assert uid.isdigit() and int(uid) != 0, f"USER {user}: a numeric non-root id lets runAsNonRoot verify it"
    (dep,) = find(default_objects, "Deployment", "homecluster-controller")
    pod_sc = dep["spec"]["template"]["spec"]["securityContext"]
    assert pod_sc["runAsUser"] == int(uid) and pod_sc["runAsGroup"] == int(gid or uid)


def test_entrypoint_is_a_console_script_subcommand(instructions):
    (entry,) = [a for i, a in instructions if i == "ENTRYPOINT"]
    argv = json.loads(entry)  # exec form: no shell at runtime
    scripts = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["scripts"]
    assert argv[0] in scripts, f"ENTRYPOINT {argv[0]!r} is not one of the project's console scripts {list(scripts)}"
    from homecluster.cli import SUBCOMMANDS
    assert argv[1:] == ["run"] and "run" in SUBCOMMANDS


def test_the_copied_files_are_what_the_package_is_built_from(instructions):
    copied = {src.rstrip("/") for i, a in instructions if i == "COPY" and not a.startswith("--from")
              for src in shlex.split(a)[:-1]}
    project = tomllib.loads((REPO / "pyproject.toml").read_text())
    assert "pyproject.toml" in copied
    assert project["project"]["readme"] in copied, "pyproject.toml's readme must be in the build context"
    for where in project["tool"]["setuptools"]["packages"]["find"]["where"]:
        assert where in copied, f"the package lives under {where}/, which the Containerfile does not copy"


def test_a_wheel_builds_from_only_the_copied_files(instructions, tmp_path):
    """The build stage's `pip install .`, minus the dependencies: a wheel from a context holding only what
    the Containerfile copies, with the console script and the operator inside. (No build isolation: the
    virtualenv's setuptools stands in for the one pip would fetch in the image.)"""
    import subprocess
    import sys
    import zipfile

    context = tmp_path / "context"
    context.mkdir()
    for i, a in instructions:
        if i == "COPY" and not a.startswith("--from"):
            for src in shlex.split(a)[:-1]:
                source = REPO / src
                if source.is_dir():
                    import shutil
                    shutil.copytree(source, context / src, ignore=shutil.ignore_patterns("__pycache__"))
                else:
                    (context / src).write_bytes(source.read_bytes())
    done = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q",
                           "-w", str(tmp_path / "dist"), str(context)], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    (wheel,) = (tmp_path / "dist").glob("homecluster-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    assert "homecluster/operator/main.py" in names and "homecluster/provider/proto/externalgrpc_pb2.py" in names
    entry_points = next(n for n in names if n.endswith("entry_points.txt"))
    assert "homecluster = homecluster.cli:main" in zipfile.ZipFile(wheel).read(entry_points).decode()
