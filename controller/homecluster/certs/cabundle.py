"""The caBundle patch of our ValidatingWebhookConfiguration (pure).

Only the webhooks this operator serves are touched: those whose clientConfig.service is our webhook
Service in our namespace. Another entry in the same configuration (a user's addition), or a
configuration that names no such webhook, is left alone -- the latter with a complaint, since then the
API server cannot reach us with the CA we made.
"""
from __future__ import annotations

import base64
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class BundlePatch:
    body: dict | None          # a strategic merge patch (webhooks merge by name), or None: nothing to do
    owned: tuple[str, ...]     # the webhooks that point at our Service
    complaint: str | None = None


def _ours(webhook: Mapping[str, Any], service: str, namespace: str) -> bool:
    ref = (webhook.get("clientConfig") or {}).get("service") or {}
    return isinstance(ref, Mapping) and ref.get("name") == service and ref.get("namespace") == namespace


def bundle_patch(configuration: Mapping[str, Any], ca_pem: bytes, service: str, namespace: str) -> BundlePatch:
    """The patch that makes every webhook of ours trust `ca_pem`, conditional on the resourceVersion read."""
    name = str((configuration.get("metadata") or {}).get("name", ""))[:253]
    webhooks = [w for w in (configuration.get("webhooks") or []) if isinstance(w, Mapping)]
    owned = tuple(str(w.get("name", ""))[:253] for w in webhooks if _ours(w, service, namespace))
    if not owned:
        return BundlePatch(None, (), f"ValidatingWebhookConfiguration {name}: no webhook calls Service "
                                     f"{namespace}/{service}; its caBundle is left alone")
    bundle = base64.b64encode(ca_pem).decode()
    stale = [w["name"] for w in webhooks if _ours(w, service, namespace)
             and (w.get("clientConfig") or {}).get("caBundle") != bundle]
    if not stale:
        return BundlePatch(None, owned)
    body = {"metadata": {"resourceVersion": (configuration.get("metadata") or {}).get("resourceVersion")},
            "webhooks": [{"name": n, "clientConfig": {"caBundle": bundle}} for n in stale]}
    return BundlePatch(body, owned)
