# -*- coding: utf-8 -*-
# Copyright: homecluster maintainers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Build a kubernetes CoreV1Api from the connection options kubernetes.core's modules offer (doc fragment
homecluster.infra.kube): a kubeconfig, a pod's in-cluster credentials, or host/api_key/certificates given
directly, each also read from its K8S_AUTH_* environment variable."""
from __future__ import annotations

import os
import traceback

from ansible.module_utils.basic import env_fallback

try:
    from kubernetes import client as k8s_client
    from kubernetes import config as k8s_config
    # re-exported for the modules and kube_drain
    from kubernetes.client.rest import ApiException  # pylint: disable=unused-import
    from kubernetes.config.config_exception import ConfigException
    HAS_KUBERNETES = True
    KUBERNETES_IMPORT_ERROR = None
except ImportError:
    HAS_KUBERNETES = False
    KUBERNETES_IMPORT_ERROR = traceback.format_exc()

    class ApiException(Exception):  # lets `except ApiException` parse without the client
        status = 0


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
_IN_CLUSTER_TOKEN = "/var/run/secrets/kubernetes.io/serviceaccount/token"


class KubeError(Exception):
    """Loading credentials or talking to the API server failed; the message says which."""


def overrides(params: dict) -> dict:
    """The kubernetes Configuration attributes the explicit options set (pure); the rest come from the
    kubeconfig or the in-cluster credentials."""
    out = {}
    if params.get("host"):
        out["host"] = params["host"]
    if params.get("api_key"):
        out["api_key"] = {"authorization": "Bearer %s" % params["api_key"]}
    for option, attribute in (("ca_cert", "ssl_ca_cert"), ("client_cert", "cert_file"), ("client_key", "key_file")):
        if params.get(option):
            out[attribute] = params[option]
    if params.get("validate_certs") is not None:
        out["verify_ssl"] = bool(params["validate_certs"])
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


def core_api(params: dict):
    """Return a CoreV1Api for the module's connection options (KUBE_ARGS). A kubeconfig given explicitly
    wins; then O(host) (no file needed); then a pod's in-cluster credentials (service host variable and
    token file both present); then KUBECONFIG or ~/.kube/config (the lab's pods). The explicit options
    override what the file or the service account says."""
    kubeconfig, context = params.get("kubeconfig"), params.get("context")
    source = base_source(params)
    configuration = k8s_client.Configuration()
    try:
        if source == "kubeconfig":
            k8s_config.load_kube_config(config_file=kubeconfig, context=context, client_configuration=configuration)
        elif source == "in-cluster":
            k8s_config.load_incluster_config(client_configuration=configuration)
    except (ConfigException, OSError, TypeError) as exc:
        where = "kubeconfig %s" % kubeconfig if kubeconfig else "the default credentials (in-cluster, KUBECONFIG or ~/.kube/config)"
        raise KubeError("cannot load Kubernetes credentials from %s: %s (or set host)" % (where, exc))
    for attribute, value in overrides(params).items():
        setattr(configuration, attribute, value)
    for option in ("ca_cert", "client_cert", "client_key"):
        if params.get(option) and not os.path.isfile(params[option]):
            raise KubeError("%s %s is not a file" % (option, params[option]))
    return k8s_client.CoreV1Api(k8s_client.ApiClient(configuration))


def api_error(exc, doing: str) -> str:
    """A one-line message for an ApiException: what we did, the HTTP status and the server's reason."""
    reason = getattr(exc, "reason", "") or ""
    body = getattr(exc, "body", "") or ""
    if isinstance(body, bytes):
        body = body.decode("utf-8", "replace")
    detail = body[:300] if body else reason
    return "%s: HTTP %s %s" % (doing, getattr(exc, "status", "?"), detail)


CONTROL_PLANE_LABELS = ("node-role.kubernetes.io/control-plane", "node-role.kubernetes.io/master")


def control_plane_refusal(node, name: str):
    """None unless the Node carries a control-plane role label; then why it is left alone.

    The collection powers pool machines on and off: it never cordons or drains a control-plane Node,
    whoever asks and whatever providerID they pass (docs/security.md, "What a slot author can do").
    """
    labels = getattr(getattr(node, "metadata", None), "labels", None) or {}
    role = next((label for label in CONTROL_PLANE_LABELS if label in labels), None)
    if role is None:
        return None
    return ("node %s carries the label %s: a control-plane Node is never cordoned or drained by this "
            "collection (fix the slot's spec.nodeName or spec.providerID)" % (name, role))


def boundary_refusal(node, name: str, provider_id):
    """Why this module must leave the Node alone (a control-plane Node, another machine's), or None."""
    return control_plane_refusal(node, name) or provider_id_refusal(node, name, provider_id)


def provider_id_refusal(node, name: str, provider_id):
    """None when the Node is the expected machine's (or no providerID is expected), else why not.

    A lifecycle Job acts for one slot: it passes the providerID that slot's machine registers with, so
    a slot that names another Node (the control plane's, say) cannot have that Node cordoned or drained.
    """
    if not provider_id:
        return None
    actual = getattr(getattr(node, "spec", None), "provider_id", None) or ""
    if actual == provider_id:
        return None
    return ("node %s has providerID %r, not %r: it is not this slot's machine, so it is neither cordoned nor "
            "drained (fix the slot's spec.nodeName or spec.providerID)" % (name, actual, provider_id))
