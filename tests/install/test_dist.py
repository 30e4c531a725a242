"""The generated install artifacts are current: dist/install.yaml is `kubectl kustomize config/default`
and charts/homecluster/crds is config/crd, byte for byte. `make dist` regenerates both."""
from __future__ import annotations

import subprocess
import sys

from install_helpers import REPO


def _check() -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(REPO / "scripts" / "make-dist.py"), "--check"],
                          capture_output=True, text=True, timeout=120)


def test_dist_install_yaml_and_chart_crds_are_current():
    done = _check()
    assert done.returncode == 0, done.stderr


def test_install_yaml_holds_the_whole_default_tree(default_objects):
    import yaml
    shipped = [d for d in yaml.safe_load_all((REPO / "dist" / "install.yaml").read_text()) if d]
    kinds = {d["kind"] for d in shipped}
    assert {"CustomResourceDefinition", "Deployment", "ValidatingWebhookConfiguration", "Certificate",
            "ClusterRole", "Service", "Namespace"} <= kinds
    assert len(shipped) == len(default_objects)
