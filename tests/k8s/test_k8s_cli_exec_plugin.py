"""On the real API server, the token a kubeconfig's credential plugin hands out is what authenticates the
CLI's requests: a ServiceAccount's TokenRequest token through tests/fixtures/exec-credential-plugin.sh lets
`homecluster status -o json` read the pool, a token the server does not know ends it with exit 5 and the
"refused your credentials" line, and an account without the rights with exit 5 and the request named.
(tests/lab/test_cli_exec_plugin.py proves how the plugin is run; the lab accepts any token.)
"""
from __future__ import annotations

import asyncio
import json
import os
import sys
from pathlib import Path

import pytest
from k8s_objects import install_crds

from homecluster_lab.k8s import pki

pytestmark = pytest.mark.asyncio(loop_scope="module")
PLUGIN = Path(__file__).resolve().parents[1] / "fixtures" / "exec-credential-plugin.sh"
G = "infra.homecluster.dev"


async def _account(rest, name: str, rules: list[dict]) -> str:
    """A ServiceAccount in default with a ClusterRole of `rules`; its TokenRequest token."""
    for path, body in (
            ("/api/v1/namespaces/default/serviceaccounts", {"metadata": {"name": name}}),
            ("/apis/rbac.authorization.k8s.io/v1/clusterroles", {"metadata": {"name": name}, "rules": rules}),
            ("/apis/rbac.authorization.k8s.io/v1/clusterrolebindings", {
                "metadata": {"name": name}, "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                                                        "name": name},
                "subjects": [{"kind": "ServiceAccount", "name": name, "namespace": "default"}]})):
        status, answer = await rest.request("POST", path, body)
        assert status in (201, 409), answer
    status, answer = await rest.request("POST", f"/api/v1/namespaces/default/serviceaccounts/{name}/token", {
        "apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": {"expirationSeconds": 3600}})
    assert status == 201, answer
    return answer["status"]["token"]


def _kubeconfig(cp, folder: Path, token: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    env = {"PLUGIN_LOG": str(folder / "plugin.log"), "PLUGIN_TOKEN": token}
    return pki.write_user_kubeconfig(folder / "kubeconfig", cp.pki, cp.url, {"exec": {
        "apiVersion": "client.authentication.k8s.io/v1", "command": str(PLUGIN), "interactiveMode": "Never",
        "env": [{"name": k, "value": v} for k, v in env.items()]}})


async def _status(kubeconfig: Path) -> tuple[int, str, str]:
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "homecluster", "status", "-o", "json", "--kubeconfig", str(kubeconfig),
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE, env={**os.environ})
    out, err = await asyncio.wait_for(proc.communicate(), 60)
    return proc.returncode, out.decode(), err.decode()


async def test_the_plugins_token_authenticates_the_cli(real_k8s, real_rest, tmp_path):
    await install_crds(real_rest)
    reader = await _account(real_rest, "pool-reader", [
        {"apiGroups": [G], "resources": ["nodes", "nodeclaims", "groups"], "verbs": ["get", "list"]},
        {"apiGroups": ["batch"], "resources": ["jobs"], "verbs": ["list"]}])
    rc, out, err = await _status(_kubeconfig(real_k8s, tmp_path / "reader", reader))
    assert rc == 0, err
    assert json.loads(out)["jobsReadable"] is True and json.loads(out)["slots"] == []
    assert len((tmp_path / "reader" / "plugin.log").read_text().splitlines()) == 1

    rc, out, err = await _status(_kubeconfig(real_k8s, tmp_path / "unknown", "not-a-token-the-server-knows"))
    assert rc == 5 and "refused your credentials" in err and err.count("\n") == 1, err

    nobody = await _account(real_rest, "pool-nobody", [{"apiGroups": [""], "resources": ["configmaps"],
                                                        "verbs": ["get"]}])
    rc, out, err = await _status(_kubeconfig(real_k8s, tmp_path / "nobody", nobody))
    assert rc == 5 and err.startswith("error: forbidden: list nodes: ask for the view role"), err
