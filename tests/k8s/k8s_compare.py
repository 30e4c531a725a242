"""Send one request to kube-apiserver and to the lab's in-memory API server and compare the answers, for the
differential suite's modules (tests/k8s/test_k8s_differential_*.py). (Imported by name, as k8s_rest is.)

Compared: HTTP status, reason, and for a refusal the message and causes, after normalising what differs by
nature between two servers: uids always, and numbers (resourceVersions) where a step says so.
"""
from __future__ import annotations

import re
from typing import Any

from k8s_rest import Rest

JSON = "application/json"
MERGE = "application/merge-patch+json"
JSON_PATCH = "application/json-patch+json"
STRATEGIC = "application/strategic-merge-patch+json"
APPLY = "application/apply-patch+yaml"

_UID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
_NUMBER = re.compile(r"\b\d+\b")


def normalise(text: Any, numbers: bool = False) -> Any:
    """`text` with uids (and, when `numbers`, every number: resourceVersions) replaced by placeholders."""
    if not isinstance(text, str):
        return text
    text = _UID.sub("<uid>", text)
    return _NUMBER.sub("<n>", text) if numbers else text


def answer(status: int, body: dict[str, Any], numbers: bool = False) -> tuple:
    """What is compared of one answer: (status, reason, message of a refusal, sorted causes)."""
    causes = sorted(tuple(sorted((k, normalise(v, numbers)) for k, v in c.items()))
                    for c in (body.get("details") or {}).get("causes") or [])
    message = normalise(body.get("message"), numbers) if status >= 400 else None
    return status, body.get("reason"), message, causes


async def step(servers: dict[str, Rest], name: str, method: str, path: str, body: Any = None,
               content_type: str = JSON, *, expect: int | None = None, numbers: bool = False,
               known: dict[str, tuple] | None = None) -> dict[str, dict[str, Any]]:
    """Send the request to both (the real one first); the answers must agree, or, for a step in `known`,
    kube-apiserver must answer what the test says it does and the in-memory server what its listed
    difference says (known[name] = the lab's (status, reason)). Returns both bodies."""
    answers, bodies = {}, {}
    for server, rest in servers.items():
        status, out = await rest.request(method, path, body, content_type=content_type)
        answers[server], bodies[server] = answer(status, out, numbers), out
    real, lab = answers["real"], answers["lab"]
    if expect is not None:
        assert real[0] == expect, f"{name}: kube-apiserver said {real}"
    if known and name in known:
        assert lab[:2] == known[name], f"{name}: not the listed difference\n real: {real}\n  lab: {lab}"
    else:
        assert lab == real, f"{name}: the in-memory server differs\n real: {real}\n  lab: {lab}"
    return bodies


def managers(obj: dict[str, Any]) -> list[tuple[str, str, str]]:
    """metadata.managedFields as sorted (manager, operation, subresource)."""
    return sorted((m.get("manager", ""), m.get("operation", ""), m.get("subresource", ""))
                  for m in obj.get("metadata", {}).get("managedFields") or [])
