"""The lab's registration of the operator's NodeClaim admission webhook.

config/webhook/manifests.yaml registers it in a cluster (through a Service and cert-manager); the lab
registers the same check by URL with the CA it generated, so the API server calls the operator directly.
"""
from __future__ import annotations

import base64
from typing import Any

from homecluster import names

WEBHOOK_NAME = "nodeclaim-v2alpha1.kb.io"  # the name the seed's refusal message shows
GROUP_WEBHOOK_NAME = "group-v2alpha1.kb.io"  # a Group's spec.jobs against the operator's allow-lists
SLOT_WEBHOOK_NAME = "node-v2alpha1.kb.io"  # one machine, one slot (model.identity)
WEBHOOK_CONFIG = "homecluster-lab"


def webhook_configuration(url: str, ca_pem: bytes, group_url: str | None = None,
                          slot_url: str | None = None) -> dict[str, Any]:
    """The ValidatingWebhookConfiguration that sends NodeClaim creates (and, given group_url, Group creates
    and updates; given slot_url, slot creates and updates) to the operator's webhook."""
    config = {
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
    if group_url:
        config["webhooks"].append({
            "name": GROUP_WEBHOOK_NAME,
            "clientConfig": {"url": group_url, "caBundle": base64.b64encode(ca_pem).decode()},
            "rules": [{"apiGroups": [names.API_GROUP], "apiVersions": [names.API_VERSION],
                       "operations": ["CREATE", "UPDATE"], "resources": ["groups"], "scope": "Cluster"}],
            "failurePolicy": "Fail", "sideEffects": "None", "admissionReviewVersions": ["v1"],
            "timeoutSeconds": 5,
        })
    if slot_url:
        config["webhooks"].append({
            "name": SLOT_WEBHOOK_NAME,
            "clientConfig": {"url": slot_url, "caBundle": base64.b64encode(ca_pem).decode()},
            "rules": [{"apiGroups": [names.API_GROUP], "apiVersions": [names.API_VERSION],
                       "operations": ["CREATE", "UPDATE"], "resources": [names.SLOT_PLURAL], "scope": "Cluster"}],
            "failurePolicy": "Fail", "sideEffects": "None", "admissionReviewVersions": ["v1"],
            "timeoutSeconds": 5,
        })
    return config
