"""Fixtures for the install tests: rendered kustomizations, the lab API server, kubectl against it."""
from __future__ import annotations

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
    """Certificates made by scripts/make-certs.py (in a temporary directory: no private keys in the working
    tree), and the rendered config/default-no-certmanager overlay (which includes none of them)."""
    certs = tmp_path_factory.mktemp("cfg") / "certs"
    done = subprocess.run([sys.executable, str(REPO / "scripts" / "make-certs.py"), "--out", str(certs)],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert sorted(p.name for p in certs.iterdir()) == ["secrets.yaml"], "make-certs.py writes only secrets.yaml"
    return certs, render(CONFIG / "default-no-certmanager")


@pytest.fixture
async def lab_api(tmp_path: Path):
    """The lab's API server with our CRDs (as tests/lab/conftest.py's fixture of the same name)."""
    async with LabAPIServer(crd_dir=CONFIG / "crd", workdir=tmp_path / "lab-api", gc_interval=0.05) as api:
        yield api
