"""The CLI runs a kubeconfig user's credential plugin (`exec`) as client-go does, proven with a real plugin
program (tests/fixtures/exec-credential-plugin.sh) run by `python -m homecluster` against the lab's server:
the kubeconfig's env reaches it, KUBERNETES_EXEC_INFO says whether it may prompt and, when asked, which
cluster (and from a terminal, that it may: stdin handed over); its credential, a token or a client
certificate, is reused until its expirationTimestamp; a failing or missing plugin ends the verb with one line
(and the plugin's own words); the operator (`homecluster run`) keeps refusing plugins.

The lab accepts any token, so these prove how the plugin is run; tests/k8s/test_k8s_cli_exec_plugin.py
proves on the real API server that its token is what authenticates the requests.
"""
from __future__ import annotations

import asyncio
import json
import os
import shutil
import ssl
import sys
from pathlib import Path

import pytest
import yaml

from homecluster import tls as certs
from homecluster.kube.kubeconfig import KubeconfigError, load
from homecluster_lab.apiserver import LabAPIServer

PLUGIN = Path(__file__).resolve().parents[1] / "fixtures" / "exec-credential-plugin.sh"
CRDS = Path(__file__).resolve().parents[2] / "config" / "crd"


def exec_kubeconfig(lab_api, tmp_path: Path, *, command: str = str(PLUGIN), **spec_and_env) -> Path:
    env = {"PLUGIN_LOG": str(tmp_path / "plugin.log"), "PLUGIN_TOKEN": "t0ken-from-the-plugin",
           **{k: v for k, v in spec_and_env.items() if k.startswith("PLUGIN_")}}
    spec = {"apiVersion": "client.authentication.k8s.io/v1", "command": command, "interactiveMode": "IfAvailable",
            "env": [{"name": k, "value": v} for k, v in env.items()],
            **{k: v for k, v in spec_and_env.items() if not k.startswith("PLUGIN_")}}
    doc = yaml.safe_load(lab_api.kubeconfig_path.read_text())
    doc["users"][0]["user"] = {"exec": spec}
    path = tmp_path / "kubeconfig"
    path.write_text(yaml.safe_dump(doc))
    return path


def runs(tmp_path: Path) -> list[dict]:
    log = tmp_path / "plugin.log"
    return [json.loads(line) for line in log.read_text().splitlines() if line != "tty"] if log.exists() else []


def tty_seen(tmp_path: Path) -> bool:
    """Whether the plugin found a terminal on its stdin (it logs "tty" then)."""
    return "tty" in (tmp_path / "plugin.log").read_text().splitlines()


async def homecluster(*args: str, kubeconfig: Path, cwd: str | None = None,
                      stdin: int = asyncio.subprocess.DEVNULL) -> tuple[int, str, str]:
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "homecluster", *args, "--kubeconfig", str(kubeconfig), stdin=stdin,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE, env={**os.environ}, cwd=cwd)
    try:
        out, err = await asyncio.wait_for(proc.communicate(), 60)
    except TimeoutError:
        proc.kill()  # a verb that should have ended (an operator that took the plugin runs on) is not left behind
        await proc.wait()
        raise
    return proc.returncode, out.decode(), err.decode()


async def from_a_terminal(*args: str, kubeconfig: Path) -> tuple[int, str, str]:
    """The verb run as from a person's shell: stdin is a terminal (a pseudo-terminal of this test's own)."""
    controller, terminal = os.openpty()
    try:
        return await homecluster(*args, kubeconfig=kubeconfig, stdin=terminal)
    finally:
        os.close(terminal)
        os.close(controller)


async def test_the_plugin_runs_once_with_its_env_and_exec_info(lab_api, tmp_path):
    config = exec_kubeconfig(lab_api, tmp_path, provideClusterInfo=True)
    rc, out, err = await homecluster("status", "-o", "json", kubeconfig=config)
    assert rc == 0, err
    assert json.loads(out)["slots"] == []
    seen = runs(tmp_path)
    assert len(seen) == 1, "no expirationTimestamp: one run serves every request of the verb"
    assert seen[0]["kind"] == "ExecCredential" and seen[0]["apiVersion"] == "client.authentication.k8s.io/v1"
    assert seen[0]["spec"]["interactive"] is False, "stdin is no terminal: IfAvailable runs it non-interactive"
    assert seen[0]["spec"]["cluster"]["server"] == lab_api.url  # provideClusterInfo
    assert "t0ken-from-the-plugin" not in out + err


async def test_an_expired_credential_is_fetched_again(lab_api, tmp_path):
    config = exec_kubeconfig(lab_api, tmp_path, PLUGIN_EXPIRES="2000-01-01T00:00:00Z")
    rc, _, err = await homecluster("status", kubeconfig=config)
    assert rc == 0, err
    assert len(runs(tmp_path)) >= 3, "expired at once: the plugin runs again before each request (3 lists)"
    (tmp_path / "far").mkdir()
    far = exec_kubeconfig(lab_api, tmp_path / "far", PLUGIN_EXPIRES="2999-01-01T00:00:00Z")
    rc, _, err = await homecluster("status", kubeconfig=far)
    assert rc == 0 and len(runs(tmp_path / "far")) == 1, err


async def test_a_failing_plugin_is_one_line_after_its_own_words(lab_api, tmp_path):
    config = exec_kubeconfig(lab_api, tmp_path, PLUGIN_EXIT="3")
    rc, out, err = await homecluster("status", kubeconfig=config)
    assert rc == 2, err
    lines = err.splitlines()
    assert lines[0] == "exec-credential-plugin: login failed: the identity provider said no"  # its stderr is ours
    assert lines[1].startswith("error: no usable kubeconfig: ") and f"exec plugin {PLUGIN} exited 3" in lines[1]
    assert len(lines) == 2, err


async def test_a_missing_plugin_names_the_install_hint(lab_api, tmp_path):
    config = exec_kubeconfig(lab_api, tmp_path, command="kubectl-oidc_login-not-installed",
                             installHint="install kubelogin: https://github.com/int128/kubelogin")
    rc, out, err = await homecluster("status", kubeconfig=config)
    assert rc == 2 and err.count("\n") == 1, err
    assert "exec plugin 'kubectl-oidc_login-not-installed' not found: install kubelogin: https://" in err


async def test_a_relative_command_is_relative_to_the_kubeconfig(lab_api, tmp_path):
    (tmp_path / "bin").mkdir()
    shutil.copy(PLUGIN, tmp_path / "bin" / "login.sh")
    config = exec_kubeconfig(lab_api, tmp_path, command="./bin/login.sh")
    rc, _, err = await homecluster("status", kubeconfig=config, cwd="/")  # not the kubeconfig's folder
    assert rc == 0 and len(runs(tmp_path)) == 1, err


async def test_interactive_always_needs_a_terminal(lab_api, tmp_path):
    config = exec_kubeconfig(lab_api, tmp_path, interactiveMode="Always")
    rc, _, err = await homecluster("status", kubeconfig=config)
    assert rc == 2 and "needs a terminal (interactiveMode: Always)" in err and err.count("\n") == 1, err
    assert runs(tmp_path) == []


async def test_from_a_terminal_if_available_is_interactive_and_never_is_not(lab_api, tmp_path):
    """client-go's rule: IfAvailable (and Always) run the plugin interactive, with the user's terminal as its
    stdin, when stdin is a terminal; Never runs it without stdin even then (it must not prompt)."""
    config = exec_kubeconfig(lab_api, tmp_path, interactiveMode="IfAvailable")
    rc, _, err = await from_a_terminal("status", kubeconfig=config)
    assert rc == 0, err
    assert (runs(tmp_path)[0]["spec"]["interactive"], tty_seen(tmp_path)) == (True, True), "a prompt could be answered"
    (tmp_path / "never").mkdir()
    never = exec_kubeconfig(lab_api, tmp_path / "never", interactiveMode="Never")
    rc, _, err = await from_a_terminal("status", kubeconfig=never)
    assert rc == 0, err
    assert (runs(tmp_path / "never")[0]["spec"]["interactive"], tty_seen(tmp_path / "never")) == (False, False)
    (tmp_path / "always").mkdir()
    always = exec_kubeconfig(lab_api, tmp_path / "always", interactiveMode="Always")
    rc, _, err = await from_a_terminal("status", kubeconfig=always)
    assert rc == 0 and runs(tmp_path / "always")[0]["spec"]["interactive"] is True, err


async def test_a_v1beta1_plugin_and_a_wrong_answer(lab_api, tmp_path):
    beta = exec_kubeconfig(lab_api, tmp_path, apiVersion="client.authentication.k8s.io/v1beta1",
                           PLUGIN_API="client.authentication.k8s.io/v1beta1")
    rc, _, err = await homecluster("status", kubeconfig=beta)
    assert rc == 0 and runs(tmp_path)[0]["apiVersion"] == "client.authentication.k8s.io/v1beta1", err
    wrong = exec_kubeconfig(lab_api, tmp_path, PLUGIN_API="client.authentication.k8s.io/v1beta1")
    rc, _, err = await homecluster("status", kubeconfig=wrong)
    assert rc == 2 and "wrote no ExecCredential of apiVersion client.authentication.k8s.io/v1" in err, err


def test_the_operator_keeps_refusing_plugins(lab_api, tmp_path):
    config = exec_kubeconfig(lab_api, tmp_path)
    with pytest.raises(KubeconfigError, match=r"authenticates with a credential plugin \(exec\), which homecluster "
                                              r"does not run"):
        load(str(config))
    assert runs(tmp_path) == [], "refused before anything runs"


async def test_homecluster_run_refuses_the_plugin_in_one_line_without_running_it(lab_api, tmp_path):
    """The operator as an admin starts it (`homecluster run`), not only kubeconfig.load's default: it runs on its
    ServiceAccount, so a kubeconfig whose user is a plugin ends it at once and the plugin never runs."""
    config = exec_kubeconfig(lab_api, tmp_path)
    rc, _, err = await homecluster("run", "--no-webhook", "--no-provider", kubeconfig=config)
    lines = [line for line in err.splitlines() if line.strip()]
    assert rc == 2 and len(lines) == 1 and "Traceback" not in err, err
    assert lines[0].startswith("homecluster run: error: no usable kubeconfig: ") and \
        "authenticates with a credential plugin (exec), which homecluster does not run" in lines[0], err
    assert runs(tmp_path) == [], "refused before anything runs"


class ClientCertificateLab(LabAPIServer):
    """The lab's API server over TLS, refusing the handshake of a client without a certificate of `client_ca`."""

    client_ca = certs.make_ca("exec-plugin-client-ca")

    def _ssl_context(self) -> ssl.SSLContext:
        ctx = super()._ssl_context()
        ctx.verify_mode = ssl.CERT_REQUIRED
        ctx.load_verify_locations(cadata=self.client_ca.cert_pem.decode())
        return ctx


async def test_a_plugins_client_certificate_is_what_the_handshake_presents(tmp_path):
    """A plugin may answer with a client certificate and key instead of a token (as cloud CLIs and Teleport do):
    the CLI presents that certificate. The server asks for one, so without it the verb cannot connect."""
    async with ClientCertificateLab(crd_dir=CRDS, workdir=tmp_path / "api", tls=True) as api:
        leaf = certs.issue(ClientCertificateLab.client_ca, "alice", server=False, client=True)
        credential = tmp_path / "credential.json"
        credential.write_text(json.dumps({"apiVersion": "client.authentication.k8s.io/v1", "kind": "ExecCredential",
                                          "status": {"clientCertificateData": leaf.cert_pem.decode(),
                                                     "clientKeyData": leaf.key_pem.decode()}}))
        plugin = tmp_path / "certificate-plugin.sh"
        plugin.write_text(f"#!/bin/sh\ncat '{credential}'\n")
        plugin.chmod(0o755)
        doc = yaml.safe_load(api.kubeconfig_path.read_text())
        doc["users"][0]["user"] = {"exec": {"apiVersion": "client.authentication.k8s.io/v1", "command": str(plugin),
                                            "interactiveMode": "Never"}}
        config = tmp_path / "kubeconfig"
        config.write_text(yaml.safe_dump(doc))
        rc, out, err = await homecluster("status", "-o", "json", kubeconfig=config)
        assert rc == 0, err
        assert json.loads(out)["slots"] == [] and "PRIVATE KEY" not in out + err
        doc["users"][0]["user"] = {"token": "no-certificate"}
        config.write_text(yaml.safe_dump(doc))
        rc, out, err = await homecluster("status", "-o", "json", kubeconfig=config)
        assert rc == 4 and err.startswith("error: cannot reach the API server: "), err
