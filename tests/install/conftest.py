"""Fixtures for the install tests: rendered kustomizations, the lab API server, kubectl against it."""
from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from install_helpers import CONFIG, REPO, render

from homecluster_lab.apiserver import LabAPIServer


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
