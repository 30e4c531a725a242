# -*- coding: utf-8 -*-
# Copyright: homecluster maintainers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The node modules' Kubernetes client: the connection options kubernetes.core's modules offer (doc fragment
homecluster.infra.kube) -- a kubeconfig, a pod's in-cluster credentials, or host/api_key/certificates given
directly, each also read from its K8S_AUTH_* environment variable -- and the six calls the modules make, over
ansible-core's own HTTP client (ansible.module_utils.urls). Objects are the API's JSON, as dicts.

No Kubernetes library is needed: importing the official `kubernetes` package alone took longer than the rest
of a node module's run. A kubeconfig needs PyYAML (ansible-core's own dependency). What a kubeconfig may say
and what is refused: module_utils/kube_config.py.
"""
from __future__ import annotations

import atexit
import base64
import json
import os
import shutil
import subprocess
import tempfile
from urllib.error import HTTPError, URLError
from urllib.parse import quote, urlencode

from ansible.module_utils.basic import env_fallback
from ansible.module_utils.urls import open_url

from ansible_collections.homecluster.infra.plugins.module_utils.kube_config import (
    KubeconfigError, exec_credential, merge, plain_http_refusal, select,
)


def _env(name):
    return (env_fallback, ["K8S_AUTH_" + name])


# The names, aliases and environment variables of kubernetes.core's connection options, so that a play
# written for kubernetes.core (or its module_defaults) works here unchanged.
KUBE_ARGS = dict(
    kubeconfig=dict(type="path", fallback=_env("KUBECONFIG")),
    context=dict(type="str", fallback=_env("CONTEXT")),
    host=dict(type="str", fallback=_env("HOST")),
    api_key=dict(type="str", no_log=True, fallback=_env("API_KEY")),
    ca_cert=dict(type="path", aliases=["ssl_ca_cert"], fallback=_env("SSL_CA_CERT")),
    client_cert=dict(type="path", aliases=["cert_file"], fallback=_env("CERT_FILE")),
    client_key=dict(type="path", aliases=["key_file"], no_log=False, fallback=_env("KEY_FILE")),
    validate_certs=dict(type="bool", aliases=["verify_ssl"], fallback=_env("VERIFY_SSL")),
)
_IN_CLUSTER_HOST = "KUBERNETES_SERVICE_HOST"
_IN_CLUSTER_PORT = "KUBERNETES_SERVICE_PORT"
_SERVICE_ACCOUNT = "/var/run/secrets/kubernetes.io/serviceaccount"
_IN_CLUSTER_TOKEN = _SERVICE_ACCOUNT + "/token"
# the Job's requests in the API server's log (tests/install/rbac_audit.py tells them from the lab's own)
USER_AGENT = "homecluster.infra-node-modules"
TIMEOUT = 30  # seconds for one request
_EXEC_TIMEOUT = 60  # seconds for an exec credential plugin
_MAX_ANSWER = 64 * 1024 * 1024  # bytes of one answer (a list of every pod of a node stays far below)


# the kubeconfig's names of the inline data kube_config.select() reads
_DATA_FIELD_NAMES = {"ca_data": "certificate-authority-data", "cert_data": "client-certificate-data",
                     "key_data": "client-key-data"}


class KubeError(Exception):
    """Loading credentials failed; the message says which and the fix."""


class ApiException(Exception):
    """The API server answered with an error (status), or did not answer (status 0, reason says why)."""

    def __init__(self, status: int, reason: str, body=b""):
        super().__init__("HTTP %s %s" % (status, reason))
        self.status = status
        self.reason = reason
        self.body = body


def overrides(params: dict) -> dict:
    """The connection settings the explicit options set (pure); the rest come from the kubeconfig or the
    in-cluster credentials. A file option replaces the kubeconfig's inline data of the same kind."""
    out = {}
    if params.get("host"):
        out["host"] = params["host"]
    if params.get("api_key"):
        out["token"] = params["api_key"]
    for option, key in (("ca_cert", "ca_file"), ("client_cert", "cert_file"), ("client_key", "key_file")):
        if params.get(option):
            out[key] = params[option]
    if params.get("validate_certs") is not None:
        out["verify"] = bool(params["validate_certs"])
    return out


def base_source(params: dict) -> str:
    """Where the settings not given explicitly come from (pure): "kubeconfig" (the file named, else KUBECONFIG
    or ~/.kube/config), "in-cluster" (a pod's service account) or "none" (O(host) given without a kubeconfig:
    the options alone describe the server)."""
    if params.get("kubeconfig"):
        return "kubeconfig"
    if params.get("host"):
        return "none"
    if os.environ.get(_IN_CLUSTER_HOST) and os.path.exists(_IN_CLUSTER_TOKEN):
        return "in-cluster"
    return "kubeconfig"


def combine(base: dict, explicit: dict) -> dict:
    """The settings of the base source with the explicit options laid over them (pure): a token given replaces
    the base's token and exec plugin; a file replaces the base's inline data of that kind."""
    out = dict(base)
    replaced = {"token": ("token", "token_file", "exec"), "ca_file": ("ca_data",), "cert_file": ("cert_data",),
                "key_file": ("key_data",)}
    for key, value in explicit.items():
        for old in replaced.get(key, ()):
            out.pop(old, None)
        out[key] = value
    return out


def in_cluster() -> dict:
    """A pod's service account: the Service's address from the environment, its token and CA files."""
    host = os.environ[_IN_CLUSTER_HOST]
    if ":" in host:
        host = "[%s]" % host  # an IPv6 address
    return {"host": "https://%s:%s" % (host, os.environ.get(_IN_CLUSTER_PORT, "443")), "verify": True,
            "token_file": _IN_CLUSTER_TOKEN, "ca_file": _SERVICE_ACCOUNT + "/ca.crt"}


def kubeconfig_paths(explicit) -> list:
    """The kubeconfig files to read: the one named, else KUBECONFIG's list, else ~/.kube/config."""
    if explicit:
        return [explicit]
    listed = [p for p in os.environ.get("KUBECONFIG", "").split(os.pathsep) if p]
    return listed or [os.path.expanduser("~/.kube/config")]


def _read_kubeconfigs(paths: list, explicit: bool) -> list:
    try:
        import yaml
    except ImportError:
        raise KubeError("reading a kubeconfig needs PyYAML (python3 -m pip install pyyaml), or set host")
    documents = []
    for path in paths:
        if not os.path.exists(path):
            if explicit:
                raise KubeError("kubeconfig %s does not exist" % path)
            continue
        try:
            with open(path, "rb") as handle:
                documents.append((path, yaml.safe_load(handle)))
        except (OSError, yaml.YAMLError) as exc:
            raise KubeError("cannot read kubeconfig %s: %s" % (path, exc))
    if not documents:
        raise KubeError("no kubeconfig found at %s, and not in a pod: set kubeconfig or host" % os.pathsep.join(paths))
    return documents


def settings(params: dict) -> dict:
    """The server and credentials for the module's connection options (KUBE_ARGS). A kubeconfig given
    explicitly wins; then O(host) (no file needed); then a pod's in-cluster credentials (service host variable
    and token file both present); then KUBECONFIG or ~/.kube/config. The explicit options override what the
    file or the service account says."""
    source = base_source(params)
    base = {}
    if source == "in-cluster":
        base = in_cluster()
    elif source == "kubeconfig":
        paths = kubeconfig_paths(params.get("kubeconfig"))
        try:
            base = select(merge(_read_kubeconfigs(paths, bool(params.get("kubeconfig")))), params.get("context"))
        except KubeconfigError as exc:
            raise KubeError("kubeconfig %s: %s" % (os.pathsep.join(paths), exc))
    out = combine(base, overrides(params))
    for option in ("ca_cert", "client_cert", "client_key"):
        if params.get(option) and not os.path.isfile(params[option]):
            raise KubeError("%s %s is not a file" % (option, params[option]))
    if not out.get("host"):
        raise KubeError("no API server: set host, or kubeconfig")
    refusal = plain_http_refusal(out)
    if refusal:
        raise KubeError(refusal)
    return out


def _run_exec(spec: dict) -> dict:
    """Run a kubeconfig's exec credential plugin (a program the kubeconfig's owner named) for its credential."""
    env = dict(os.environ, **spec["env"])
    env["KUBERNETES_EXEC_INFO"] = json.dumps({"apiVersion": spec["apiVersion"], "kind": "ExecCredential",
                                              "spec": {"interactive": False}})
    try:
        done = subprocess.run([spec["command"]] + spec["args"], env=env, stdin=subprocess.DEVNULL,
                              capture_output=True, timeout=_EXEC_TIMEOUT, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise KubeError("exec credential plugin %s: %s" % (spec["command"], exc))
    if done.returncode != 0:
        raise KubeError("exec credential plugin %s exited %d" % (spec["command"], done.returncode))
    try:
        return exec_credential(spec, done.stdout.decode("utf-8", "replace"))
    except KubeconfigError as exc:
        raise KubeError(str(exc))


class CoreApi:
    """The calls the node modules make, on one connection; each returns the API's JSON as a dict."""

    def __init__(self, config: dict):
        self.host = config["host"].rstrip("/")
        self.verify = config.get("verify", True)
        self._folder = None
        self.ca_path = self._material(config, "ca.crt", "ca_file", "ca_data")
        if config.get("exec"):
            config = dict(config, **_run_exec(config["exec"]))
        self.client_cert = self._material(config, "client.crt", "cert_file", "cert_data", "cert_pem")
        self.client_key = self._material(config, "client.key", "key_file", "key_data", "key_pem")
        self.token = config.get("token")
        if not self.token and config.get("token_file"):
            try:
                with open(config["token_file"]) as handle:  # read at each run: a projected token rotates
                    self.token = handle.read().strip()
            except OSError as exc:
                raise KubeError("cannot read token file %s: %s" % (config["token_file"], exc))

    def _private(self, name: str, content: bytes) -> str:
        """A file only this process may read, removed when the module exits."""
        if self._folder is None:
            self._folder = tempfile.mkdtemp(prefix="homecluster-kube-")
            atexit.register(shutil.rmtree, self._folder, True)
        path = os.path.join(self._folder, name)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "wb") as handle:
            handle.write(content)
        return path

    def _material(self, config: dict, name: str, file_key: str, data_key: str, pem_key=None):
        """A path to the CA, client certificate or key: the file named, else the exec plugin's PEM or the
        kubeconfig's base64 data written to a private file; None when there is none."""
        if config.get(file_key):
            return config[file_key]
        if pem_key and config.get(pem_key):
            return self._private(name, config[pem_key].encode())
        if config.get(data_key):
            return self._private(name, self._decoded(config[data_key], data_key))
        return None

    @staticmethod
    def _decoded(value: str, what: str) -> bytes:
        try:
            return base64.b64decode(value, validate=True)
        except (ValueError, TypeError):
            raise KubeError("the kubeconfig's %s is not base64: paste the file's base64 (base64 -w0 FILE)"
                            % _DATA_FIELD_NAMES[what])

    def request(self, method: str, path: str, body=None, query=None, content_type="application/json") -> dict:
        url = self.host + path + ("?" + urlencode(query) if query else "")
        headers = {"Accept": "application/json"}
        if body is not None:
            headers["Content-Type"] = content_type
        if self.token:
            headers["Authorization"] = "Bearer " + self.token
        data = json.dumps(body).encode() if body is not None else None
        try:
            answer = open_url(url, data=data, headers=headers, method=method, use_proxy=False, timeout=TIMEOUT,
                              validate_certs=self.verify, client_cert=self.client_cert, client_key=self.client_key,
                              ca_path=self.ca_path, follow_redirects="none", use_netrc=False, http_agent=USER_AGENT)
            raw = answer.read(_MAX_ANSWER + 1)
        except HTTPError as exc:
            raise ApiException(exc.code, str(exc.reason), exc.read(64 * 1024))
        except (URLError, OSError) as exc:  # no answer: refused, TLS not trusted, timed out
            raise ApiException(0, str(getattr(exc, "reason", exc)))
        if len(raw) > _MAX_ANSWER:
            raise ApiException(0, "the answer to %s %s is over %d bytes" % (method, path, _MAX_ANSWER))
        try:
            return json.loads(raw) if raw else {}
        except ValueError:
            raise ApiException(0, "the answer to %s %s is not JSON" % (method, path))

    def read_node(self, name: str) -> dict:
        return self.request("GET", "/api/v1/nodes/" + quote(name, safe=""))

    def patch_node(self, name: str, patch: dict, content_type: str) -> dict:
        return self.request("PATCH", "/api/v1/nodes/" + quote(name, safe=""), patch, content_type=content_type)

    def list_pods(self, field_selector: str, label_selector=None) -> list:
        query = {"fieldSelector": field_selector}
        if label_selector:
            query["labelSelector"] = label_selector
        return self.request("GET", "/api/v1/pods", query=query).get("items") or []

    def _pod(self, namespace: str, name: str) -> str:
        return "/api/v1/namespaces/%s/pods/%s" % (quote(namespace, safe=""), quote(name, safe=""))

    def read_pod(self, namespace: str, name: str) -> dict:
        return self.request("GET", self._pod(namespace, name))

    def delete_pod(self, namespace: str, name: str, grace_period=None) -> dict:
        options = {} if grace_period is None else {"gracePeriodSeconds": grace_period}
        return self.request("DELETE", self._pod(namespace, name), options)

    def evict_pod(self, namespace: str, name: str, grace_period=None) -> dict:
        eviction = {"apiVersion": "policy/v1", "kind": "Eviction",
                    "metadata": {"name": name, "namespace": namespace}}
        if grace_period is not None:
            eviction["deleteOptions"] = {"gracePeriodSeconds": grace_period}
        return self.request("POST", self._pod(namespace, name) + "/eviction", eviction)


def core_api(params: dict) -> CoreApi:
    """The client for the module's connection options (KUBE_ARGS); KubeError says what is missing."""
    return CoreApi(settings(params))


def api_error(exc, doing: str) -> str:
    """A one-line message for an ApiException: what we did, the HTTP status and the server's reason."""
    body = getattr(exc, "body", b"") or b""
    if isinstance(body, bytes):
        body = body.decode("utf-8", "replace")
    if not getattr(exc, "status", 0):
        return "%s: no answer from the API server: %s" % (doing, exc.reason)
    detail = body[:300] if body else exc.reason
    return "%s: HTTP %s %s" % (doing, exc.status, detail)


CONTROL_PLANE_LABELS = ("node-role.kubernetes.io/control-plane", "node-role.kubernetes.io/master")


def control_plane_refusal(node: dict, name: str):
    """None unless the Node carries a control-plane role label; then why it is left alone.

    The collection powers pool machines on and off: it never cordons or drains a control-plane Node,
    whoever asks and whatever providerID they pass (docs/security.md, "What a slot author can do").
    """
    labels = (node.get("metadata") or {}).get("labels") or {}
    role = next((label for label in CONTROL_PLANE_LABELS if label in labels), None)
    if role is None:
        return None
    return ("node %s carries the label %s: a control-plane Node is never cordoned or drained by this "
            "collection (fix the slot's spec.nodeName or spec.providerID)" % (name, role))


def boundary_refusal(node: dict, name: str, provider_id):
    """Why this module must leave the Node alone (a control-plane Node, another machine's), or None."""
    return control_plane_refusal(node, name) or provider_id_refusal(node, name, provider_id)


def provider_id_refusal(node: dict, name: str, provider_id):
    """None when the Node is the expected machine's (or no providerID is expected), else why not.

    A lifecycle Job acts for one slot: it passes the providerID that slot's machine registers with, so
    a slot that names another Node (the control plane's, say) cannot have that Node cordoned or drained.
    """
    if not provider_id:
        return None
    actual = (node.get("spec") or {}).get("providerID") or ""
    if actual == provider_id:
        return None
    return ("node %s has providerID %r, not %r: it is not this slot's machine, so it is neither cordoned nor "
            "drained (fix the slot's spec.nodeName or spec.providerID)" % (name, actual, provider_id))
