"""scripts/make-certs.py's default output: ./certs, holding only secrets.yaml (no kustomize leftovers)."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[2]


def test_default_out_is_certs_in_the_current_directory_with_only_the_secrets(tmp_path):
    done = subprocess.run([sys.executable, str(REPO / "scripts" / "make-certs.py"), "--namespace", "ns1"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert [p.name for p in tmp_path.iterdir()] == ["certs"]
    assert [p.name for p in (tmp_path / "certs").iterdir()] == ["secrets.yaml"]
    secrets = list(yaml.safe_load_all((tmp_path / "certs" / "secrets.yaml").read_text()))
    assert [s["metadata"]["name"] for s in secrets] == [
        "homecluster-webhook-cert", "homecluster-provider-server", "homecluster-provider-client"]
    assert {s["metadata"]["namespace"] for s in secrets} == {"ns1"}
    assert "PRIVATE KEY" not in done.stderr + done.stdout
