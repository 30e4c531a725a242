"""Reading a kubeconfig (or the pod's ServiceAccount) into a Connection, without a generated client.

What users have: a token (or a token file), client certificate and key (files or inline data), a CA
(file or inline data), insecure-skip-tls-verify, and in a pod the mounted ServiceAccount. Merged the way
kubectl merges $KUBECONFIG's files: the first file that names an entry or the current context wins.
Credential plugins (exec) are run for the CLI, which asks for them (allow_exec, kube/execcred.py), as
kubectl runs them; the operator, on its ServiceAccount, refuses them. auth-provider and basic auth are
refused with an error that says what to use instead. What cannot work
(bad TLS material, an undefined user, credentials over plain http to another machine, a quoted bool) is
refused while loading, by kube/kubeconfig_checks.py, naming the file, the entry, the field and the fix.
"""
from __future__ import annotations

import base64
import binascii
import dataclasses
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml

from homecluster.kube.connection import Connection, TokenFile
from homecluster.kube.kubeconfig_checks import KubeconfigError, check_plain_http, check_tls, insecure_flag

SERVICE_ACCOUNT_DIR = "/var/run/secrets/kubernetes.io/serviceaccount"
UNSUPPORTED_USER_FIELDS = {
    "exec": "a credential plugin (exec)",
    "auth-provider": "an auth-provider",
    "username": "basic auth (username/password)",
}
ENTRY_EXAMPLES = {"cluster": "server: https://...", "user": "token: ...", "context": "cluster: ..., user: ..."}


__all__ = ["KubeconfigError", "default_paths", "from_kubeconfig", "in_cluster", "load", "load_connection"]


def default_paths() -> list[Path]:
    """$KUBECONFIG's files in order, else ~/.kube/config."""
    env = os.environ.get("KUBECONFIG", "")
    paths = [Path(p).expanduser() for p in env.split(os.pathsep) if p.strip()]
    return paths or [Path.home() / ".kube" / "config"]


def _read(path: Path) -> Mapping[str, Any]:
    try:
        doc = yaml.safe_load(path.read_text()) or {}
    except OSError as exc:
        raise KubeconfigError(f"{path}: {exc.strerror or exc}") from None
    except yaml.YAMLError as exc:
        raise KubeconfigError(f"{path}: not YAML: {str(exc).splitlines()[0]}") from None
    if not isinstance(doc, Mapping):
        raise KubeconfigError(f"{path}: not a kubeconfig (a mapping with clusters, users and contexts)")
    return doc


def _entries(doc: Mapping[str, Any], section: str, body: str, path: Path, into: dict) -> None:
    for item in doc.get(section) or []:
        if isinstance(item, Mapping) and isinstance(item.get("name"), str) and item["name"] not in into:
            entry = item.get(body) or {}
            if not isinstance(entry, Mapping):  # never quoted: a user written as a string may be a token
                raise KubeconfigError(f'{path}: {body} "{item["name"]}": {body} must be a mapping of fields '
                                      f"(e.g. {body}: {{{ENTRY_EXAMPLES[body]}}}), not a {type(entry).__name__}")
            into[item["name"]] = (entry, path)


def _inline(entry: Mapping[str, Any], field: str, what: str) -> str | None:
    data = entry.get(field)
    if not data:
        return None
    if not isinstance(data, str):
        raise KubeconfigError(f"{what}: {field} must be a base64 string, not a {type(data).__name__}")
    try:
        return base64.b64decode(data, validate=True).decode()
    except (binascii.Error, ValueError, UnicodeDecodeError):
        raise KubeconfigError(f"{what}: {field} is not base64 of a PEM file: re-export it (kubectl config view "
                              f"--raw) or name the file with {field.removesuffix('-data')}") from None


def _file(entry: Mapping[str, Any], field: str, base: Path, what: str) -> str | None:
    """A path field, relative to the kubeconfig file that holds it (as kubectl reads it)."""
    value = entry.get(field)
    if value and not isinstance(value, str):
        raise KubeconfigError(f"{what}: {field} must be a file path, not a {type(value).__name__}")
    return str((base.parent / Path(value).expanduser()).resolve()) if value else None


def from_kubeconfig(paths: list[Path], context: str | None = None, *, allow_exec: bool = False) -> Connection:
    """The Connection of `context` (default: the current context) in the merged kubeconfig `paths`."""
    clusters: dict[str, tuple[Mapping, Path]] = {}
    users: dict[str, tuple[Mapping, Path]] = {}
    contexts: dict[str, tuple[Mapping, Path]] = {}
    current = None
    for path in paths:
        doc = _read(path)
        current = current or doc.get("current-context")
        _entries(doc, "clusters", "cluster", path, clusters)
        _entries(doc, "users", "user", path, users)
        _entries(doc, "contexts", "context", path, contexts)
    where = os.pathsep.join(str(p) for p in paths)
    name = context or current
    if not name:
        raise KubeconfigError(f"{where}: no current-context: pass --context or run `kubectl config use-context`")
    if name not in contexts:
        raise KubeconfigError(f'{where}: no context "{name}" (known: {", ".join(sorted(contexts)) or "none"})')
    ctx, _ = contexts[name]
    cluster_name, user_name = ctx.get("cluster", ""), ctx.get("user", "")
    if cluster_name not in clusters:
        raise KubeconfigError(f'{where}: context "{name}" names the cluster "{cluster_name}", which is not defined: '
                              f"add it under clusters: or name a defined cluster in the context "
                              f"(known: {', '.join(sorted(clusters)) or 'none'})")
    if user_name and user_name not in users:  # client-go: "user X was not found for context Y"
        raise KubeconfigError(f'{where}: user "{user_name}" was not found for context "{name}": add it under '
                              f"users: or name a defined user in the context "
                              f"(known: {', '.join(sorted(users)) or 'none'})")
    cluster, cluster_file = clusters[cluster_name]
    user, user_file = users.get(user_name, ({}, Path(where)))  # no user named: anonymous, as asked
    cluster_where, user_where = f'{cluster_file}: cluster "{cluster_name}"', f'{user_file}: user "{user_name}"'
    server = str(cluster.get("server") or "").rstrip("/")
    if not server.startswith(("https://", "http://")):
        raise KubeconfigError(f'{cluster_file}: cluster "{cluster_name}" has no https:// server address')
    check_plain_http(server, user, cluster_where, f'user "{user_name}"')
    plugin = None
    if allow_exec and user.get("exec"):
        from homecluster.kube.execcred import ExecPlugin

        if not isinstance(user["exec"], Mapping):
            raise KubeconfigError(f"{user_where}: exec must be a mapping (command, args, env, apiVersion, ...)")
        plugin = ExecPlugin(user["exec"], user_where, user_file, cluster, server)
    for field, what in UNSUPPORTED_USER_FIELDS.items():
        if user.get(field) and not (plugin is not None and field == "exec"):
            raise KubeconfigError(
                f'{user_file}: user "{user_name}" authenticates with {what}, which homecluster does not run: '
                f"give the user a token (kubectl create token SERVICEACCOUNT) or a client certificate")
    inline_token = user.get("token") or None
    if inline_token is not None and not isinstance(inline_token, str):
        raise KubeconfigError(f"{user_where}: token must be a string (quote it), not a {type(inline_token).__name__}")
    token_path = _file(user, "tokenFile", user_file, user_where)
    token = inline_token
    if token_path:  # as client-go: the file wins from the start; the inline token only when it cannot be read
        try:
            token = Path(token_path).read_text().strip() or inline_token
        except OSError as exc:
            if not inline_token:
                raise KubeconfigError(f"{user_where}: tokenFile {token_path}: {exc.strerror}: point tokenFile at "
                                      f"a readable file holding the token") from None
    connection = Connection(
        server=server,
        ca_path=_file(cluster, "certificate-authority", cluster_file, cluster_where),
        ca_data=_inline(cluster, "certificate-authority-data", cluster_where),
        cert_path=_file(user, "client-certificate", user_file, user_where),
        cert_data=_inline(user, "client-certificate-data", user_where),
        key_path=_file(user, "client-key", user_file, user_where),
        key_data=_inline(user, "client-key-data", user_where),
        token=token,
        insecure=insecure_flag(cluster, cluster_where),
        token_file=TokenFile(token_path, token) if token_path else None,
    )
    if plugin is not None and not (token or connection.cert_path or connection.cert_data):
        # as client-go: the kubeconfig's own token or certificate wins over the plugin; the plugin runs now,
        # so a login prompt or a failing plugin comes before any request
        first = plugin.credential()
        connection = dataclasses.replace(connection, cert_data=first["cert"] or connection.cert_data,
                                         key_data=first["key"] or connection.key_data,
                                         token_file=plugin if first["token"] else None)
    check_tls(connection, cluster_where, user_where)
    return connection


def in_cluster(environ: Mapping[str, str] = os.environ, account_dir: str = SERVICE_ACCOUNT_DIR) -> Connection:
    """The pod's ServiceAccount: the API server's Service address, its CA, and the rotating token."""
    host, port = environ["KUBERNETES_SERVICE_HOST"], environ.get("KUBERNETES_SERVICE_PORT", "443")
    host = f"[{host}]" if ":" in host else host
    token_path = f"{account_dir}/token"
    try:
        token = Path(token_path).read_text().strip()
    except OSError as exc:
        raise KubeconfigError(f"in a pod, but {token_path}: {exc.strerror}: mount the ServiceAccount token "
                              f"(automountServiceAccountToken)") from None
    return Connection(server=f"https://{host}:{port}", ca_path=f"{account_dir}/ca.crt", token=token,
                      token_file=TokenFile(token_path, token))


def load(kubeconfig: str | None = None, context: str | None = None, *, allow_exec: bool = False) -> Connection:
    """`kubeconfig` (must exist), else $KUBECONFIG / ~/.kube/config, else in-cluster; else a clear error.
    allow_exec: run a user's credential plugin (the CLI), instead of refusing it (the operator)."""
    if kubeconfig:
        if not Path(kubeconfig).is_file():
            raise KubeconfigError(f"{kubeconfig}: no such file")
        return from_kubeconfig([Path(kubeconfig)], context, allow_exec=allow_exec)
    paths = [p for p in default_paths() if p.is_file()]
    if paths:
        return from_kubeconfig(paths, context, allow_exec=allow_exec)
    if os.environ.get("KUBERNETES_SERVICE_HOST"):
        return in_cluster()
    raise KubeconfigError(
        f"no Kubernetes credentials: {os.pathsep.join(map(str, default_paths()))} does not exist and this is not "
        f"a pod (KUBERNETES_SERVICE_HOST unset); pass --kubeconfig or set KUBECONFIG")


async def load_connection(kubeconfig: str | None = None, context: str | None = None) -> Connection:
    """load() for the operator's start-up (a coroutine, as its caller awaits)."""
    return load(kubeconfig, context)
