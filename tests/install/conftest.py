"""Fixtures for the install tests: rendered kustomizations, the lab API server, kubectl against it."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from homecluster.lab.apiserver import LabAPIServer

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
CONFIG = REPO / "config"
sys.path.insert(0, str(HERE))  # rbac_audit, validation helpers

_RENDERED: dict[Path, list[dict[str, Any]]] = {}


def render(directory: Path) -> list[dict[str, Any]]:
    """`kubectl kustomize directory`, parsed; cached per directory for the session."""
    from rbac_audit import render as _render
    if directory not in _RENDERED:
        _RENDERED[directory] = _render(directory)
    return _RENDERED[directory]


def find(objects: list[dict[str, Any]], kind: str, name: str | None = None) -> list[dict[str, Any]]:
    return [o for o in objects if o.get("kind") == kind and (name is None or o["metadata"]["name"] == name)]


@pytest.fixture(scope="session")
def default_objects() -> list[dict[str, Any]]:
    return render(CONFIG / "default")


@pytest.fixture(scope="session")
def autoscaler_objects() -> list[dict[str, Any]]:
    return render(CONFIG / "autoscaler")


@pytest.fixture(scope="session")
def no_certmanager(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[dict[str, Any]]]:
    """A copy of config/ with certificates made by scripts/make-certs.py, and its rendered overlay.

    A copy, so the test never writes private keys into the working tree.
    """
    root = tmp_path_factory.mktemp("cfg")
    shutil.copytree(CONFIG, root / "config", ignore=shutil.ignore_patterns("certs"))
    certs = root / "config" / "default-no-certmanager" / "certs"
    done = subprocess.run([sys.executable, str(REPO / "scripts" / "make-certs.py"), "--out", str(certs)],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return certs, render(root / "config" / "default-no-certmanager")


@pytest.fixture
async def lab_api(tmp_path: Path):
    """The lab's API server with our CRDs (as tests/lab/conftest.py's fixture of the same name)."""
    async with LabAPIServer(crd_dir=CONFIG / "crd", workdir=tmp_path / "lab-api", gc_interval=0.05) as api:
        yield api


def kubectl_env(api: LabAPIServer, home: Path) -> dict[str, str]:
    home.mkdir(parents=True, exist_ok=True)
    return {**os.environ, "HOME": str(home), "KUBECONFIG": str(api.kubeconfig_path)}


def dump(objects: list[dict[str, Any]]) -> str:
    return yaml.safe_dump_all(objects, sort_keys=False)
