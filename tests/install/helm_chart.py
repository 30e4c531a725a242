"""Run the helm that `make k8s` builds (lab/helm) on charts/homecluster: lint, template, parse.

Shared by tests/install/test_helm_chart.py (the chart against the kustomize tree) and
tests/k8s/test_k8s_helm.py (the rendered chart against the real kube-apiserver), which imports it by
name (tests/conftest.py puts tests/install on sys.path).
"""
from __future__ import annotations

import base64
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from homecluster_lab.k8s import binaries

REPO = Path(__file__).resolve().parents[2]
CHART = REPO / "charts" / "homecluster"
NAMESPACE = "homecluster-system"
# Without cert-manager the chart requires the CA the API server trusts for the webhook: any PEM will do
# for rendering and admission (nothing dials the webhook while no operator pod runs).
FAKE_CA = base64.b64encode(b"-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n").decode()
NO_CERT_MANAGER = ("certificates.mode=secrets", f"webhook.caBundle={FAKE_CA}")
SELF_SIGNED = ("certificates.mode=self-signed",)


def helm_or_skip() -> Path:
    """The built helm, or skip the test saying how to build it."""
    found = binaries.helm()
    if found is None:
        pytest.skip(binaries.helm_missing_reason())
    return found


def helm_env(kubeconfig: Path, home: Path) -> dict[str, str]:
    """The environment of helm and kubectl against `kubeconfig`, with helm's own files under `home`."""
    return {**os.environ, "KUBECONFIG": str(kubeconfig), "HOME": str(home), "HELM_CACHE_HOME": str(home / "cache"),
            "HELM_CONFIG_HOME": str(home / "config"), "HELM_DATA_HOME": str(home / "data")}


def helm(*args: str, env: dict[str, str] | None = None, timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run([str(helm_or_skip()), *args], capture_output=True, text=True, timeout=timeout, env=env)


def template(*sets: str, namespace: str = NAMESPACE, include_crds: bool = False) -> str:
    """`helm template` of the chart with `--set` for each of `sets`; fails the test with helm's stderr."""
    argv = ["template", "homecluster", str(CHART), "--namespace", namespace]
    if include_crds:
        argv.append("--include-crds")
    for item in sets:
        argv += ["--set", item]
    done = helm(*argv)
    assert done.returncode == 0, f"helm template {' '.join(sets)} failed: {done.stderr}"
    return done.stdout


def parse(text: str) -> list[dict[str, Any]]:
    return [d for d in yaml.safe_load_all(text) if d]
