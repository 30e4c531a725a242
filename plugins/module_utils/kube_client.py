# -*- coding: utf-8 -*-
# Copyright: homecluster maintainers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Build a kubernetes CoreV1Api from a kubeconfig or from a pod's in-cluster credentials."""
from __future__ import annotations

import os
import traceback

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

KUBE_ARGS = dict(kubeconfig=dict(type="path"), context=dict(type="str"))
_IN_CLUSTER_HOST = "KUBERNETES_SERVICE_HOST"
_IN_CLUSTER_TOKEN = "/var/run/secrets/kubernetes.io/serviceaccount/token"


class KubeError(Exception):
    """Loading credentials or talking to the API server failed; the message says which."""


def core_api(kubeconfig=None, context=None):
    """Return a CoreV1Api. A kubeconfig given explicitly wins; then a pod's in-cluster credentials (service
    host variable and token file both present); then KUBECONFIG or ~/.kube/config (the lab's pods)."""
    try:
        if kubeconfig:
            api_client = k8s_config.new_client_from_config(config_file=kubeconfig, context=context)
        elif os.environ.get(_IN_CLUSTER_HOST) and os.path.exists(_IN_CLUSTER_TOKEN):
            configuration = k8s_client.Configuration()
            k8s_config.load_incluster_config(client_configuration=configuration)
            api_client = k8s_client.ApiClient(configuration)
        else:
            api_client = k8s_config.new_client_from_config(context=context)
    except (ConfigException, OSError, TypeError) as exc:
        source = "kubeconfig %s" % kubeconfig if kubeconfig else "the default credentials (in-cluster, KUBECONFIG or ~/.kube/config)"
        raise KubeError("cannot load Kubernetes credentials from %s: %s" % (source, exc))
    return k8s_client.CoreV1Api(api_client)


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
