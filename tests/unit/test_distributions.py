"""The two distributions build apart, and the operator's installs without the lab or the collection.

`homecluster` (the root pyproject.toml) is what the controller image installs; `homecluster-lab`
(lab/pyproject.toml) is the lab. The product's wheel is built from what images/controller/Containerfile
copies, installed with its real dependency resolution into a clean virtualenv (PyPI or the warm pip
cache), and every one of its modules imported there: a product module that imports the lab, or a
dependency the product uses but does not declare, fails the import; a lab or collection dependency
declared by the product shows up among the installed distributions. The lab's wheel is built too and
installed on top without its dependencies, to see its commands appear in `homecluster`.
"""
from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[2]
# What the controller image copies (images/controller/Containerfile) and the lab's package.
PRODUCT_SOURCES = ("pyproject.toml", "README.md", "controller")
LAB_SOURCES = ("lab/pyproject.toml", "lab/homecluster_lab")
# The lab's and the collection's dependencies: none may come with the operator (kubernetes_asyncio is the
# lab's: the product talks to the API server through kube/client.py and kopf).
FORBIDDEN = ("ansible-core", "ansible-runner", "pyghmi", "sushy", "wakeonlan", "paramiko", "kubernetes",
             "cel-python", "google-re2", "sushy-tools", "homecluster-lab", "kubernetes_asyncio")

# Run in the clean virtualenv: import every module of the product, list the installed distributions.
PROBE = r"""
import importlib, json, pkgutil, sys
from importlib.metadata import distributions
import homecluster
failed = {}
modules = []
for m in pkgutil.walk_packages(homecluster.__path__, "homecluster."):
    if m.name.endswith("__main__"):
        continue
    modules.append(m.name)
    try:
        importlib.import_module(m.name)
    except Exception as exc:
        failed[m.name] = f"{type(exc).__name__}: {exc}"
print(json.dumps({"modules": modules, "failed": failed, "file": homecluster.__file__,
                  "dists": sorted(d.metadata["Name"] for d in distributions())}))
"""


def _canonical(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _run(argv: list, timeout: float = 300, **kw) -> subprocess.CompletedProcess:
    done = subprocess.run([str(a) for a in argv], capture_output=True, text=True, timeout=timeout, **kw)
    assert done.returncode == 0, f"{' '.join(map(str, argv))} failed:\n{done.stdout[-2000:]}\n{done.stderr[-3000:]}"
    return done


def _wheel(sources: tuple[str, ...], project: str, tmp: Path, name: str) -> Path:
    """A wheel built from a context holding only `sources` (no build isolation: this virtualenv's setuptools)."""
    context = tmp / f"context-{name}"
    for src in sources:
        source, target = REPO / src, context / src
        target.parent.mkdir(parents=True, exist_ok=True)
        if source.is_dir():
            shutil.copytree(source, target, ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
        else:
            shutil.copy(source, target)
    _run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q",
          "-w", tmp / "dist", context / project])
    (wheel,) = (tmp / "dist").glob(f"{name.replace('-', '_')}-*.whl")
    return wheel


@pytest.fixture(scope="module")
def wheels(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("dists")
    return tmp, _wheel(PRODUCT_SOURCES, ".", tmp, "homecluster"), _wheel(LAB_SOURCES, "lab", tmp, "homecluster-lab")


def test_the_product_wheel_holds_the_operator_and_nothing_of_the_lab(wheels):
    _, product, _ = wheels
    names = zipfile.ZipFile(product).namelist()
    assert "homecluster/operator/main.py" in names and "homecluster/glance.py" in names
    assert not [n for n in names if n.startswith("homecluster_lab/") or "/lab/" in n], names


def test_the_lab_wheel_holds_the_lab_and_its_commands(wheels):
    _, _, lab = wheels
    wheel = zipfile.ZipFile(lab)
    names = wheel.namelist()
    assert "homecluster_lab/apiserver/server.py" in names and "homecluster_lab/crdcheck/openapi.py" in names
    assert not [n for n in names if n.startswith("homecluster/")], "the lab's wheel must not carry the product"
    meta = wheel.read(next(n for n in names if n.endswith(".dist-info/METADATA"))).decode()
    requires = {_canonical(re.split(r"[ <>=!;\[(]", line.split(":", 1)[1].strip())[0])
                for line in meta.splitlines() if line.startswith("Requires-Dist:")}
    assert {"homecluster", "ansible-runner", "cel-python", "google-re2", "pyghmi"} <= requires, requires
    entry_points = wheel.read(next(n for n in names if n.endswith(".dist-info/entry_points.txt"))).decode()
    assert "[homecluster.commands]" in entry_points


def test_the_product_installs_alone_and_imports_without_the_lab_or_the_collection(wheels):
    tmp, product, lab = wheels
    venv = tmp / "venv"
    _run([sys.executable, "-m", "venv", venv])
    python, env = venv / "bin" / "python", {"PIP_DISABLE_PIP_VERSION_CHECK": "1", "PATH": f"{venv}/bin:/usr/bin:/bin",
                                            "HOME": str(Path.home())}
    _run([python, "-m", "pip", "install", "-q", product], timeout=600, env=env)

    probe = json.loads(_run([python, "-c", PROBE], cwd=tmp, env=env).stdout)
    assert probe["file"].startswith(str(venv)), f"imported {probe['file']}, not the installed wheel"
    assert len(probe["modules"]) > 50 and "homecluster.operator.main" in probe["modules"]
    assert not probe["failed"], f"product modules that do not import from the product's wheel: {probe['failed']}"
    installed = {_canonical(d) for d in probe["dists"]}
    pulled = sorted(installed & {_canonical(f) for f in FORBIDDEN})
    assert not pulled, f"the operator's distribution pulls in what only the lab or the collection needs: {pulled}"

    # `homecluster lab` without the lab names what to install, and the product's commands still work
    missing = subprocess.run([venv / "bin" / "homecluster", "lab"], capture_output=True, text=True, env=env, timeout=60)
    assert missing.returncode == 2 and "pip install homecluster-lab" in missing.stderr and "make lab" in missing.stderr
    assert not re.search(r"^\s+lab\s", _run([venv / "bin" / "homecluster", "--help"], env=env).stdout, re.M)

    # the lab's wheel adds its commands through the entry-point group (its own dependencies are not needed for that)
    _run([python, "-m", "pip", "install", "-q", "--no-deps", lab], env=env)
    listed = _run([venv / "bin" / "homecluster", "--help"], env=env).stdout
    assert re.search(r"^\s+lab\s", listed, re.M) and re.search(r"^\s+vm-image\s", listed, re.M), listed
