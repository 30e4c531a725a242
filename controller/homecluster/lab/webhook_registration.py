"""The lab's registration of the operator's NodeClaim admission webhook.

config/webhook/manifests.yaml registers it in a cluster (through a Service and cert-manager); the lab
registers the same check by URL with the CA it generated, so the API server calls the operator directly.
"""
from __future__ import annotations

import base64
from typing import Any

from homecluster import names

WEBHOOK_NAME = "nodeclaim-v2alpha1.kb.io"  # the name the seed's refusal message shows
WEBHOOK_CONFIG = "homecluster-lab"
DEFAULT_WEBHOOK_PATH = "/validate-infra-homecluster-dev-v2alpha1-nodeclaim"


def webhook_configuration(url: str, ca_pem: bytes) -> dict[str, Any]:
    """The ValidatingWebhookConfiguration that sends NodeClaim creates to the operator's webhook."""
    return {
        "apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingWebhookConfiguration",
        "metadata": {"name": WEBHOOK_CONFIG, "labels": {names.LABEL_MANAGED_BY: "homecluster-lab"}},
        "webhooks": [{
            "name": WEBHOOK_NAME,
            "clientConfig": {"url": url, "caBundle": base64.b64encode(ca_pem).decode()},
            "rules": [{"apiGroups": [names.API_GROUP], "apiVersions": [names.API_VERSION],
                       "operations": ["CREATE"], "resources": [names.CLAIM_PLURAL], "scope": "Cluster"}],
            "failurePolicy": "Fail", "sideEffects": "None", "admissionReviewVersions": ["v1"],
            "timeoutSeconds": 5,
        }],
    }


def webhook_path() -> str:
    """The path the operator serves its NodeClaim check on (its module may say; else the kubebuilder one)."""
    try:
        import importlib
        module = importlib.import_module("homecluster.operator.main")
        return str(getattr(module, "WEBHOOK_PATH", DEFAULT_WEBHOOK_PATH))
    except Exception:  # noqa: BLE001
        return DEFAULT_WEBHOOK_PATH
