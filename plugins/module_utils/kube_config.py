# -*- coding: utf-8 -*-
# Copyright: homecluster maintainers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""What a kubeconfig says about one context, as the node modules connect with it (pure).

``merge`` joins the files of a KUBECONFIG list as kubectl does (the first file to name a cluster, user or
context wins; the first current-context wins). ``select`` returns the server and credentials of one context,
with relative file paths made absolute against the file that named them. Fields the modules do not speak are
refused with a message that names the field and the fix, rather than ignored: a client that ignored
``tls-server-name`` or ``proxy-url`` would talk to another server, or fail with a less useful error.
"""
from __future__ import annotations

import ipaddress
import json
import os
from urllib.parse import urlsplit

# the user fields that hold credentials, and what select() calls them
_FILE_FIELDS = {"client-certificate": "cert_file", "client-key": "key_file", "tokenFile": "token_file"}
_DATA_FIELDS = {"client-certificate-data": "cert_data", "client-key-data": "key_data"}
_REFUSED_USER_FIELDS = {
    "auth-provider": "auth-provider plugins were removed from kubectl 1.26; use an exec credential plugin "
                     "(client.authentication.k8s.io) or a token",
    "username": "basic authentication was removed from Kubernetes 1.19; use a token or a client certificate",
    "impersonate": "impersonation is not supported by these modules; connect as the user itself",
    "as": "impersonation is not supported by these modules; connect as the user itself",
}
_REFUSED_CLUSTER_FIELDS = {
    "tls-server-name": "set host to a name the API server's certificate carries",
    "proxy-url": "these modules connect to the API server directly; reach it without the proxy",
}
_EXEC_VERSIONS = ("client.authentication.k8s.io/v1", "client.authentication.k8s.io/v1beta1")


class KubeconfigError(Exception):
    """The kubeconfig cannot be used; the message names the file's entry, the field and the fix."""


def _named(entries, kind: str) -> dict:
    out = {}
    for entry in entries or []:
        if not isinstance(entry, dict) or not isinstance(entry.get("name"), str):
            raise KubeconfigError("a %s entry has no name" % kind)
        out.setdefault(entry["name"], entry.get(kind) or {})
    return out


def merge(documents) -> dict:
    """The one kubeconfig a list of (path, parsed document) stands for; each entry remembers its file's
    directory (``_dir``) so its relative paths resolve against it."""
    merged = {"clusters": {}, "users": {}, "contexts": {}, "current-context": None}
    for path, doc in documents:
        if doc is None:
            continue
        if not isinstance(doc, dict):
            raise KubeconfigError("kubeconfig %s is not a mapping" % path)
        folder = os.path.dirname(os.path.abspath(path))
        for kind, key in (("cluster", "clusters"), ("user", "users"), ("context", "contexts")):
            for name, entry in _named(doc.get(key), kind).items():
                if name not in merged[key]:
                    if not isinstance(entry, dict):
                        raise KubeconfigError("kubeconfig %s: %s %s is not a mapping" % (path, kind, name))
                    merged[key][name] = dict(entry, _dir=folder)
        if not merged["current-context"] and doc.get("current-context"):
            merged["current-context"] = doc["current-context"]
    return merged


def _path(entry: dict, value: str) -> str:
    return value if os.path.isabs(value) else os.path.join(entry["_dir"], value)


def _refuse(entry: dict, fields: dict, what: str) -> None:
    for field, fix in fields.items():
        if entry.get(field):
            raise KubeconfigError("%s sets %s, which these modules do not support: %s" % (what, field, fix))


def _cluster_settings(cluster: dict, what: str) -> dict:
    _refuse(cluster, _REFUSED_CLUSTER_FIELDS, what)
    if not cluster.get("server"):
        raise KubeconfigError("%s has no server: set it, or set host" % what)
    out = {"host": cluster["server"], "verify": not cluster.get("insecure-skip-tls-verify", False)}
    if cluster.get("certificate-authority-data"):
        out["ca_data"] = cluster["certificate-authority-data"]
    elif cluster.get("certificate-authority"):
        out["ca_file"] = _path(cluster, cluster["certificate-authority"])
    return out


def _exec_spec(spec: dict, what: str) -> dict:
    if not isinstance(spec, dict) or not isinstance(spec.get("command"), str) or not spec["command"]:
        raise KubeconfigError("%s: exec has no command" % what)
    if spec.get("apiVersion") not in _EXEC_VERSIONS:
        versions = ", ".join(_EXEC_VERSIONS)
        raise KubeconfigError("%s: exec apiVersion %r is not one of %s" % (what, spec.get("apiVersion"), versions))
    args = spec.get("args") or []
    env = spec.get("env") or []
    if not isinstance(args, list) or not all(isinstance(a, str) for a in args):
        raise KubeconfigError("%s: exec args must be a list of strings" % what)
    if not isinstance(env, list) or not all(isinstance(e, dict) and isinstance(e.get("name"), str)
                                            and isinstance(e.get("value"), str) for e in env):
        raise KubeconfigError("%s: exec env must be a list of {name, value} strings" % what)
    command = spec["command"]
    if os.sep in command and not os.path.isabs(command):
        command = _path(spec, command)  # a relative path names a file beside the kubeconfig, as kubectl reads it
    return {"apiVersion": spec["apiVersion"], "command": command, "args": args,
            "env": dict((e["name"], e["value"]) for e in env)}


def _user_settings(user: dict, what: str) -> dict:
    _refuse(user, _REFUSED_USER_FIELDS, what)
    out = {}
    if user.get("token"):
        out["token"] = user["token"]
    for field, key in _FILE_FIELDS.items():
        if user.get(field):
            out[key] = _path(user, user[field])
    for field, key in _DATA_FIELDS.items():
        if user.get(field):
            out[key] = user[field]
    if user.get("exec"):
        out["exec"] = _exec_spec(dict(user["exec"], _dir=user["_dir"]) if isinstance(user["exec"], dict)
                                 else user["exec"], what)
    return out


def select(merged: dict, context=None) -> dict:
    """The server and credentials of ``context`` (the current context when None): host, verify, ca_file or
    ca_data, token, token_file, cert_file or cert_data, key_file or key_data, exec."""
    name = context or merged.get("current-context")
    if not name:
        raise KubeconfigError("the kubeconfig has no current-context: set context")
    chosen = merged["contexts"].get(name)
    if chosen is None:
        raise KubeconfigError("the kubeconfig has no context %r (it has: %s)"
                              % (name, ", ".join(sorted(merged["contexts"])) or "none"))
    cluster_name, user_name = chosen.get("cluster"), chosen.get("user")
    cluster = merged["clusters"].get(cluster_name)
    if cluster is None:
        raise KubeconfigError("context %s names cluster %r, which the kubeconfig does not have" % (name, cluster_name))
    out = _cluster_settings(cluster, "cluster %s" % cluster_name)
    if user_name:
        user = merged["users"].get(user_name)
        if user is None:
            raise KubeconfigError("context %s names user %r, which the kubeconfig does not have" % (name, user_name))
        out.update(_user_settings(user, "user %s" % user_name))
    return out


# what each credential setting sends, in the words of plain_http_refusal
_CREDENTIALS = (("token", "token"), ("token_file", "token (tokenFile)"), ("exec", "exec plugin's credential"),
                ("cert_file", "client certificate"), ("cert_data", "client certificate"),
                ("key_file", "client key"), ("key_data", "client key"))


def _this_machine(hostname) -> bool:
    if hostname == "localhost":
        return True
    try:
        return ipaddress.ip_address(hostname or "").is_loopback
    except ValueError:
        return False


def plain_http_refusal(settings: dict):
    """None, unless credentials would travel unencrypted: a plain http:// server on another machine and a
    token, a client certificate or an exec plugin to send it (a lab's loopback server may use http)."""
    host = settings.get("host") or ""
    if not host.startswith("http://") or _this_machine(urlsplit(host).hostname):
        return None
    sent = [words for key, words in _CREDENTIALS if settings.get(key)]
    if not sent:
        return None
    return ("server %s is plain http: the connection's %s would be sent unencrypted; use the API server's "
            "https:// address" % (host, sent[0]))


def exec_credential(spec: dict, answer: str) -> dict:
    """The token or client certificate an exec plugin printed (its ExecCredential), as select() names them."""
    try:
        doc = json.loads(answer)
    except ValueError:
        raise KubeconfigError("exec plugin %s did not print an ExecCredential (JSON)" % spec["command"])
    status = doc.get("status") if isinstance(doc, dict) else None
    if not isinstance(status, dict):
        raise KubeconfigError("exec plugin %s printed an ExecCredential without status" % spec["command"])
    if status.get("token"):
        return {"token": status["token"]}
    if status.get("clientCertificateData") and status.get("clientKeyData"):
        return {"cert_pem": status["clientCertificateData"], "key_pem": status["clientKeyData"]}
    raise KubeconfigError("exec plugin %s printed neither a token nor a client certificate and key" % spec["command"])
