"""The generated install artifacts are current: dist/install.yaml is `kubectl kustomize config/default`,
dist/install-self-signed.yaml is `kubectl kustomize config/default-no-certmanager`, and
charts/homecluster/crds is config/crd, byte for byte. `make dist` regenerates them."""
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


def test_install_self_signed_yaml_holds_the_whole_no_certmanager_tree():
    import yaml
    from install_helpers import CONFIG, render
    shipped = [d for d in yaml.safe_load_all((REPO / "dist" / "install-self-signed.yaml").read_text()) if d]
    assert shipped == render(CONFIG / "default-no-certmanager")
    assert not [d for d in shipped if d["apiVersion"].startswith("cert-manager.io") or d["kind"] == "Secret"]
