"""Checks of one kubeconfig context's cluster and user, made while loading (read by kube/kubeconfig.py).

A kubeconfig that cannot work fails here, with one error naming the file, the entry, the field and the
fix, instead of with a traceback at the first request. No message quotes a token, a key or a value that
could be one: only field names and file paths.
"""
from __future__ import annotations

import ipaddress
import ssl
from collections.abc import Mapping
from typing import Any
from urllib.parse import urlsplit

from homecluster.kube.connection import Connection


class KubeconfigError(RuntimeError):
    """A kubeconfig that cannot be used; the message names the file, the entry and the fix."""


def _reason(exc: OSError) -> str:
    """What went wrong, without ssl's source-line suffix ("... (_ssl.c:4020)")."""
    text = exc.strerror if isinstance(exc.strerror, str) and exc.strerror else str(exc) or type(exc).__name__
    return text.split(" (_ssl.c:")[0]


def insecure_flag(cluster: Mapping[str, Any], where: str) -> bool:
    """insecure-skip-tls-verify as a YAML bool: the string "false" must not read as true."""
    value = cluster.get("insecure-skip-tls-verify", False)
    if not isinstance(value, bool):
        raise KubeconfigError(f"{where}: insecure-skip-tls-verify must be true or false (a YAML bool, unquoted), "
                              f"not a {type(value).__name__}: remove the quotes")
    return value


def _is_this_machine(server: str) -> bool:
    host = urlsplit(server).hostname or ""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def check_plain_http(server: str, user: Mapping[str, Any], cluster_where: str, user_where: str) -> None:
    """Credentials never travel over plain http to another machine (the lab's loopback server may use it)."""
    if not server.startswith("http://") or _is_this_machine(server):
        return
    for field in ("token", "tokenFile", "client-certificate", "client-certificate-data", "client-key",
                  "client-key-data", "exec"):
        if user.get(field):
            raise KubeconfigError(
                f"{cluster_where}: server {server} is plain http and {user_where} has a {field}, which would "
                f"be sent unencrypted: use the API server's https:// address (or a user without credentials)")


def check_tls(connection: Connection, cluster_where: str, user_where: str) -> None:
    """Build the TLS context now, so bad CA or client-certificate material is named while loading."""
    if not connection.server.startswith("https://"):
        return
    ca_field = "certificate-authority" if connection.ca_path else "certificate-authority-data"
    try:
        ssl.create_default_context(cafile=connection.ca_path,
                                   cadata=None if connection.ca_path else connection.ca_data)
    except (OSError, ssl.SSLError) as exc:
        if connection.ca_path and not isinstance(exc, ssl.SSLError):
            problem = f"{ca_field} {connection.ca_path}: {_reason(exc)}"
        else:
            problem = f"{ca_field} is not a PEM CA certificate ({_reason(exc)})"
        raise KubeconfigError(
            f"{cluster_where}: {problem}: point certificate-authority at the API server's CA file (relative to the "
            f"kubeconfig) or inline it as certificate-authority-data (kubectl config view --raw)") from None
    cert = ("client-certificate", connection.cert_path) if connection.cert_path else (
        "client-certificate-data", connection.cert_data)
    key = ("client-key", connection.key_path) if connection.key_path else ("client-key-data", connection.key_data)
    if bool(cert[1]) != bool(key[1]):
        have, missing = (cert[0], "client-key") if cert[1] else (key[0], "client-certificate")
        raise KubeconfigError(f"{user_where}: {have} is set but no {missing}: give both (or neither)")
    if not cert[1]:
        return
    try:
        connection.ssl_context()
    except (OSError, ssl.SSLError) as exc:
        missing_file = next((f"{name} {value}" for name, value in (cert, key)
                             if name in ("client-certificate", "client-key") and not _readable(value)), None)
        problem = (f"{missing_file}: {_reason(exc)}" if missing_file and not isinstance(exc, ssl.SSLError)
                   else f"{cert[0]} and {key[0]} are not a certificate and its key ({_reason(exc)})")
        raise KubeconfigError(f"{user_where}: {problem}: re-export the user's certificate and key "
                              f"(kubectl config view --raw) or name their PEM files") from None


def _readable(path: str) -> bool:
    try:
        with open(path, "rb"):
            return True
    except OSError:
        return False
