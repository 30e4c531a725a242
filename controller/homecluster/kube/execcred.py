"""Credential plugins (a kubeconfig user's `exec`) for the CLI, run as client-go runs them.

kubelogin (OIDC), Teleport, Omni and the cloud CLIs hand out short-lived tokens through a program named in
the kubeconfig. As client-go does: the program runs with the kubeconfig's `env` on top of ours and
KUBERNETES_EXEC_INFO (an ExecCredential with spec.interactive, and spec.cluster with provideClusterInfo);
with stdin only when interactive (interactiveMode Never, IfAvailable: when stdin is a terminal, Always: a
terminal is required); its stderr is the user's; its stdout is an ExecCredential of the same apiVersion
whose status gives a token and/or a client certificate and key. The credential is kept until its
expirationTimestamp (for the whole run when it has none), then the program runs again. A relative command
with a slash is relative to the kubeconfig's folder, a bare name is looked up on PATH.

The operator never runs one (kube/kubeconfig.py refuses `exec` unless the caller allows it): it runs on its
ServiceAccount. No token or key from a plugin reaches a message.
"""
from __future__ import annotations

import datetime as dt
import json
import os
import shutil
import subprocess
import sys
import threading
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Callable

from homecluster.kube.kubeconfig_checks import KubeconfigError

API_VERSIONS = ("client.authentication.k8s.io/v1", "client.authentication.k8s.io/v1beta1")
INTERACTIVE_MODES = ("Never", "IfAvailable", "Always")
MAX_OUTPUT = 1 << 20  # an ExecCredential larger than 1 MiB is refused
TIMEOUT_SECONDS = 120.0  # a non-interactive plugin that has not answered by then is stopped


def _text(value: Any, what: str, field: str) -> str:
    if not isinstance(value, str) or not value:
        raise KubeconfigError(f"{what}: exec.{field} must be a non-empty string")
    return value


class ExecPlugin:
    """One user's credential plugin: `credential()` runs it when there is no unexpired credential."""

    def __init__(self, spec: Mapping[str, Any], what: str, kubeconfig: Path, cluster: Mapping[str, Any],
                 server: str, *, clock: Callable[[], dt.datetime] = lambda: dt.datetime.now(dt.timezone.utc),
                 stdin_is_terminal: Callable[[], bool] = lambda: sys.stdin is not None and sys.stdin.isatty()) -> None:
        self.what, self._clock, self._tty = what, clock, stdin_is_terminal
        self.api_version = _text(spec.get("apiVersion"), what, "apiVersion")
        if self.api_version not in API_VERSIONS:
            raise KubeconfigError(f"{what}: exec.apiVersion {self.api_version!r} is not one homecluster speaks: use "
                                  f"{' or '.join(API_VERSIONS)}")
        command = _text(spec.get("command"), what, "command")
        self.command = str((kubeconfig.parent / command).resolve()) if os.sep in command and \
            not os.path.isabs(command) else command
        args = spec.get("args") or []
        if not isinstance(args, list) or not all(isinstance(a, str) for a in args):
            raise KubeconfigError(f"{what}: exec.args must be a list of strings")
        self.args = list(args)
        self.env: dict[str, str] = {}
        for item in spec.get("env") or []:
            if not isinstance(item, Mapping) or not isinstance(item.get("name"), str) \
                    or not isinstance(item.get("value"), str):
                raise KubeconfigError(f"{what}: exec.env must be a list of {{name: ..., value: ...}} strings")
            self.env[item["name"]] = item["value"]
        default_mode = "IfAvailable" if self.api_version.endswith("v1beta1") else None
        self.mode = spec.get("interactiveMode") or default_mode
        if self.mode not in INTERACTIVE_MODES:
            raise KubeconfigError(f"{what}: exec.interactiveMode must be one of {', '.join(INTERACTIVE_MODES)} "
                                  f"(required with {API_VERSIONS[0]})")
        self.install_hint = spec.get("installHint") if isinstance(spec.get("installHint"), str) else ""
        self.cluster_info = None
        if spec.get("provideClusterInfo") is True:
            self.cluster_info = {"server": server, **{k: cluster[k] for k in (
                "certificate-authority-data", "insecure-skip-tls-verify", "tls-server-name", "proxy-url")
                if k in cluster}}
        self._status: dict[str, Any] | None = None
        self._expires: dt.datetime | None = None
        self._lock = threading.Lock()
        self.runs = 0

    def _interactive(self) -> bool:
        if self.mode == "Never":
            return False
        tty = self._tty()
        if self.mode == "Always" and not tty:
            raise KubeconfigError(f"{self.what}: exec plugin {self.command} needs a terminal (interactiveMode: "
                                  f"Always) and stdin is not one: run the command from a terminal")
        return tty

    def _run(self) -> dict[str, Any]:
        interactive = self._interactive()
        info: dict[str, Any] = {"apiVersion": self.api_version, "kind": "ExecCredential",
                                "spec": {"interactive": interactive}}
        if self.cluster_info is not None:
            info["spec"]["cluster"] = self.cluster_info
        env = {**os.environ, **self.env, "KUBERNETES_EXEC_INFO": json.dumps(info)}
        if shutil.which(self.command, path=env.get("PATH")) is None and not Path(self.command).is_file():
            hint = f": {self.install_hint.strip()}" if self.install_hint else ""
            raise KubeconfigError(f"{self.what}: exec plugin {self.command!r} not found{hint}")
        try:
            done = subprocess.run([self.command, *self.args], env=env, stdout=subprocess.PIPE, stderr=None,
                                  stdin=None if interactive else subprocess.DEVNULL,
                                  timeout=None if interactive else TIMEOUT_SECONDS, check=False)
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise KubeconfigError(f"{self.what}: exec plugin {self.command} could not run: {exc}") from None
        self.runs += 1
        if done.returncode != 0:
            raise KubeconfigError(f"{self.what}: exec plugin {self.command} exited {done.returncode} (its own "
                                  f"words are above): fix its login, then try again")
        return self._parse(done.stdout)

    def _parse(self, out: bytes) -> dict[str, Any]:
        where = f"{self.what}: exec plugin {self.command}"
        if len(out) > MAX_OUTPUT:
            raise KubeconfigError(f"{where} wrote more than {MAX_OUTPUT} bytes, not an ExecCredential")
        try:
            doc = json.loads(out)
        except ValueError:
            raise KubeconfigError(f"{where} did not write an ExecCredential (JSON) on stdout") from None
        if not isinstance(doc, Mapping) or doc.get("kind") != "ExecCredential" \
                or doc.get("apiVersion") != self.api_version:
            raise KubeconfigError(f"{where} wrote no ExecCredential of apiVersion {self.api_version} (its kind "
                                  f"and apiVersion must match the kubeconfig's exec.apiVersion)")
        status = doc.get("status")
        if not isinstance(status, Mapping):
            raise KubeconfigError(f"{where} wrote an ExecCredential without status")
        token = status.get("token")
        cert, key = status.get("clientCertificateData"), status.get("clientKeyData")
        if not (isinstance(token, str) and token) and not (isinstance(cert, str) and isinstance(key, str)):
            raise KubeconfigError(f"{where} wrote an ExecCredential with neither status.token nor "
                                  f"status.clientCertificateData and clientKeyData")
        expires = status.get("expirationTimestamp")
        self._expires = None
        if expires is not None:
            try:
                self._expires = dt.datetime.fromisoformat(str(expires).replace("Z", "+00:00"))
            except ValueError:
                raise KubeconfigError(f"{where}: status.expirationTimestamp is not an RFC 3339 time") from None
        return {"token": token if isinstance(token, str) else None,
                "cert": cert if isinstance(cert, str) else None, "key": key if isinstance(key, str) else None}

    def credential(self) -> dict[str, Any]:
        """The cached credential while it has not expired, else a fresh one from the plugin."""
        with self._lock:
            if self._status is None or (self._expires is not None and self._clock() >= self._expires):
                self._status = self._run()
            return self._status

    def current(self) -> str | None:
        """The token (Connection asks before every request, as for a token file)."""
        return self.credential()["token"]
