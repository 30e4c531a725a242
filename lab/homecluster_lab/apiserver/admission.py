"""Validating admission webhooks: which configurations match a request, and calling them.

A webhook gets an AdmissionReview v1 over HTTPS, verified against its caBundle. There is no cluster network,
so a `service` clientConfig is resolved through `service_addresses` ("namespace/name:port" -> "host:port"),
while TLS still checks the certificate against `<name>.<namespace>.svc` as a real API server would.
Answers follow the real server: a denial becomes `admission webhook "<name>" denied the request: <message>`
with the webhook's code (at least 400); an unreachable webhook with failurePolicy Fail becomes a 500
`Internal error occurred: failed calling webhook "<name>": failed to call webhook: ...`; Ignore lets it pass.
The server's fault knobs (faults.webhook_down) make a webhook unreachable without stopping its server.
"""
from __future__ import annotations

import asyncio
import base64
import functools
import ssl
import uuid
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import aiohttp

from . import errors
from .faults import Faults
from .resources import ResourceType
from .selectors import selector_object_matches


@dataclass
class AdmissionRequest:
    rt: ResourceType
    version: str
    subresource: str
    operation: str  # CREATE UPDATE DELETE CONNECT
    namespace: str
    name: str
    obj: dict[str, Any] | None
    old: dict[str, Any] | None
    dry_run: bool
    user: str
    namespace_labels: dict[str, str]
    options: dict[str, Any] | None = None


def _matches_list(values: list[str], actual: str) -> bool:
    return "*" in values or actual in values


def _resource_matches(patterns: list[str], plural: str, sub: str) -> bool:
    full = f"{plural}/{sub}" if sub else plural
    for p in patterns:
        if p == "*/*" or p == full:
            return True
        if p == "*" and not sub:
            return True
        if p.endswith("/*") and p[:-2] == plural and sub:
            return True
        if p.startswith("*/") and sub and p[2:] == sub:
            return True
    return False


def rule_matches(rule: dict[str, Any], req: AdmissionRequest) -> bool:
    scope = rule.get("scope", "*")
    if scope == "Cluster" and req.rt.namespaced or scope == "Namespaced" and not req.rt.namespaced:
        return False
    return (_matches_list(rule.get("operations") or [], req.operation)
            and _matches_list(rule.get("apiGroups") or [], req.rt.group)
            and _matches_list(rule.get("apiVersions") or [], req.version)
            and _resource_matches(rule.get("resources") or [], req.rt.plural, req.subresource))


def webhook_matches(hook: dict[str, Any], req: AdmissionRequest) -> bool:
    if not any(rule_matches(r, req) for r in hook.get("rules") or []):
        return False
    target = req.obj if req.obj is not None else req.old or {}
    labels = (target.get("metadata") or {}).get("labels") or {}
    if not selector_object_matches(hook.get("objectSelector"), labels):
        return False
    if req.rt.namespaced and not selector_object_matches(hook.get("namespaceSelector"), req.namespace_labels):
        return False
    return True


def review(req: AdmissionRequest) -> dict[str, Any]:
    gvk = {"group": req.rt.group, "version": req.version, "kind": req.rt.kind}
    gvr = {"group": req.rt.group, "version": req.version, "resource": req.rt.plural}
    body: dict[str, Any] = {
        "uid": str(uuid.uuid4()), "kind": gvk, "resource": gvr, "requestKind": gvk, "requestResource": gvr,
        "name": req.name, "operation": req.operation,
        "userInfo": {"username": req.user, "groups": ["system:masters", "system:authenticated"]},
        "object": req.obj, "oldObject": req.old, "dryRun": req.dry_run, "options": req.options,
    }
    if req.subresource:
        body["subResource"] = req.subresource
    if req.rt.namespaced:
        body["namespace"] = req.namespace
    return {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": body}


class WebhookCaller:
    """Calls webhooks; `service_addresses` maps "namespace/name:port" to the "host:port" that serves it."""

    def __init__(self, faults: Faults | None = None) -> None:
        self.service_addresses: dict[str, str] = {}
        self.faults = faults
        self._session: aiohttp.ClientSession | None = None

    async def close(self) -> None:
        if self._session is not None:
            await self._session.close()
            self._session = None

    def _target(self, cfg: dict[str, Any], timeout: int) -> tuple[str, str, str]:
        """(URL shown in errors, URL actually dialled, TLS server name)."""
        if cfg.get("url"):
            shown = cfg["url"]
            parts = urlsplit(shown)
            return shown, shown, parts.hostname or ""
        svc = cfg.get("service") or {}
        port = int(svc.get("port", 443))
        host = f"{svc.get('name')}.{svc.get('namespace')}.svc"
        path = svc.get("path", "")
        shown = f"https://{host}:{port}{path}"
        dial = self.service_addresses.get(f"{svc.get('namespace')}/{svc.get('name')}:{port}")
        if dial is None:
            return shown, "", host
        return shown, f"https://{dial}{path}", host

    async def call(self, config_name: str, hook: dict[str, Any], req: AdmissionRequest) -> None:
        """Raise the APIError the client must see, or return when the request may proceed."""
        name = hook["name"]
        timeout = int(hook.get("timeoutSeconds", 10))
        shown, dial, server_name = self._target(hook.get("clientConfig") or {}, timeout)
        shown_q = f"{shown}?timeout={timeout}s"
        try:
            if not dial:
                host = urlsplit(shown).hostname
                raise ConnectionError(f"dial tcp: lookup {host}: no such host")
            await self._injected_fault(name, dial, timeout)
            result = await self._post(hook, dial, server_name, timeout, review(req))
        except Exception as exc:  # noqa: BLE001 - every transport failure is the webhook's failure
            if hook.get("failurePolicy", "Fail") == "Ignore":
                return
            why = _describe(exc, timeout)
            raise errors.internal(f'failed calling webhook "{name}": failed to call webhook: '
                                  f'Post "{shown_q}": {why}') from exc
        response = (result or {}).get("response") or {}
        if response.get("allowed"):
            return
        status = dict(response.get("status") or {})
        code = int(status.get("code") or 0)
        if code < 400:
            code = 400
        denied = f'admission webhook "{name}" denied the request'
        if status.get("message"):
            message = f"{denied}: {status['message']}"
        elif status.get("reason"):
            message = f"{denied}: {status['reason']}"
        else:
            message = f"{denied} without explanation"
        raise errors.APIError(code, status.get("reason", ""), message, status.get("details"))

    async def _injected_fault(self, name: str, dial: str, timeout: int) -> None:
        """Fail as an unreachable webhook does when the fault knobs say it is down (see faults.webhook_down)."""
        mode = self.faults.webhook_fault(name) if self.faults is not None else None
        if mode == "timeout":
            await asyncio.sleep(timeout)
            raise asyncio.TimeoutError()
        if mode == "refused":
            parts = urlsplit(dial)
            port = parts.port or (443 if parts.scheme == "https" else 80)
            raise ConnectionRefusedError(f"dial tcp {parts.hostname}:{port}: connect: connection refused")

    async def _post(self, hook: dict[str, Any], url: str, server_name: str, timeout: int,
                    body: dict[str, Any]) -> dict[str, Any]:
        cfg = hook.get("clientConfig") or {}
        ctx = _tls_context(cfg.get("caBundle") or "")
        if self._session is None:
            self._session = aiohttp.ClientSession()
        parts = urlsplit(url)
        url = urlunsplit(parts._replace(query=f"timeout={timeout}s"))
        async with self._session.post(url, json=body, ssl=ctx, server_hostname=server_name or None,
                                      timeout=aiohttp.ClientTimeout(total=timeout)) as resp:
            if resp.status != 200:
                raise ConnectionError(f"expected webhook response of 200, got {resp.status}")
            return await resp.json(content_type=None)


@functools.lru_cache(maxsize=32)
def _tls_context(ca_bundle: str) -> ssl.SSLContext:
    """The client TLS context for a webhook's caBundle (base64 PEM; "" = the system's CAs).

    Cached: building one costs ~20 ms of CPU (the system CA store is read), which every NodeClaim create
    paid twice on the server's event loop; and one context per bundle lets aiohttp reuse its connections."""
    if ca_bundle:
        return ssl.create_default_context(cadata=base64.b64decode(ca_bundle).decode())
    return ssl.create_default_context()


def _describe(exc: BaseException, timeout: int) -> str:
    if isinstance(exc, asyncio.TimeoutError):
        return "context deadline exceeded"
    if isinstance(exc, aiohttp.ClientConnectorCertificateError) or isinstance(exc, ssl.SSLError):
        return "tls: failed to verify certificate: x509: certificate signed by unknown authority"
    if isinstance(exc, aiohttp.ClientConnectorError):
        return f"dial tcp {exc.host}:{exc.port}: connect: connection refused"
    return str(exc) or type(exc).__name__
