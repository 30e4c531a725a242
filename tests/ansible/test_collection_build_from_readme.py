"""`ansible-galaxy collection build` from README.md's words alone: a fresh virtualenv that holds only the
distributions README.md's `pip install` names, with what they require, builds the collection tarball.

No registry is asked (the suite runs offline): the fresh venv gets those distributions from the project's own
venv, each one's files linked into a folder of its own that a .pth file puts on the fresh venv's path, so
nothing else the project installed is importable there.
"""
from __future__ import annotations

import importlib.metadata as metadata
import re
import shlex
import subprocess
import venv
from pathlib import Path

import pytest
from packaging.requirements import Requirement

from hc_ansible import REPO

pytestmark = pytest.mark.slow


def readme_commands() -> list[list[str]]:
    text = (REPO / "README.md").read_text()
    section = text[text.index("## The Ansible collection"):]
    (block,) = re.findall(r"```sh\n(.*?)```", section[:section.index("\n## ", 5)], re.S)
    commands: list[list[str]] = []
    for line in block.splitlines():
        words = shlex.split(line, comments=True)
        while words:
            end = words.index("&&") if "&&" in words else len(words)
            commands.append(words[:end])
            words = words[end + 1:]
    return commands


def closure(names: list[str]) -> set[str]:
    """The distributions `names` and everything they require (their extras aside), as installed here."""
    seen: set[str] = set()
    todo = list(names)
    while todo:
        name = metadata.distribution(todo.pop()).metadata["Name"].lower()
        if name in seen:
            continue
        seen.add(name)
        for spec in metadata.requires(name) or []:
            requirement = Requirement(spec)
            if requirement.marker is None or requirement.marker.evaluate({"extra": ""}):
                todo.append(requirement.name)
    return seen


def fresh_venv_with(folder: Path, names: set[str]) -> Path:
    venv.EnvBuilder(with_pip=False).create(folder / "venv")
    python = folder / "venv" / "bin" / "python"
    purelib = Path(subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
                                  capture_output=True, text=True, check=True).stdout.strip())
    lines = []
    for name in sorted(names):
        dist = metadata.distribution(name)
        home = folder / "dists" / name
        for file in dist.files or []:
            source = Path(dist.locate_file(file)).resolve()
            if file.parts[0] == ".." or not source.is_file():
                continue  # scripts in bin/: the test calls the module
            target = home / file
            target.parent.mkdir(parents=True, exist_ok=True)
            target.symlink_to(source)
        lines.append(str(home))
    (purelib / "readme-dists.pth").write_text("\n".join(lines) + "\n")
    return python


def test_the_readmes_pip_install_is_all_a_fresh_venv_needs_to_build_the_collection(tmp_path):
    commands = readme_commands()
    (install,) = [c for c in commands if c[0].endswith("/pip") and c[1] == "install"]
    names = [Requirement(arg).name for arg in install[install.index("install") + 1:] if not arg.startswith("-")]
    assert "ansible-core" in names, install
    python = fresh_venv_with(tmp_path, closure(names))
    (build,) = [c for c in commands if c[0].endswith("ansible-galaxy")]
    assert build[1:3] == ["collection", "build"], build
    out = tmp_path / "out"
    done = subprocess.run([str(python), "-c", "import sys; from ansible.cli.galaxy import main; sys.exit(main())",
                           *build[1:], "--output-path", str(out)], cwd=REPO, capture_output=True, text=True,
                          timeout=180, env={"PATH": "/usr/bin:/bin", "HOME": str(tmp_path),
                                            "ANSIBLE_LOCAL_TEMP": str(tmp_path / "tmp")})
    assert done.returncode == 0, f"README.md's {' '.join(install)} is not enough: {done.stdout}{done.stderr}"
    assert list(out.glob("homecluster-infra-*.tar.gz")), done.stdout
