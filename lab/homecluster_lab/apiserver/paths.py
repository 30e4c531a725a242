"""Parse a Kubernetes REST path into what it addresses. Pure.

/api/v1/[namespaces/{ns}/]{plural}[/{name}[/{subresource}]]
/apis/{group}/{version}/[namespaces/{ns}/]{plural}[/{name}[/{subresource}]]
`/api/v1/namespaces/{name}[/status]` addresses the Namespace itself, so `namespaces/{x}/{y}` is read as
namespaced only when {y} is a namespaced resource of that group-version.
"""
from __future__ import annotations

from dataclasses import dataclass

from .resources import Registry, ResourceType


@dataclass(frozen=True)
class Target:
    group: str
    version: str
    rt: ResourceType | None
    plural: str
    namespace: str | None  # None: cluster-scoped, or all namespaces for a namespaced list
    name: str
    subresource: str


def parse(path: str, registry: Registry) -> Target | None:
    """None when the path is not a resource path (discovery and the like are handled elsewhere)."""
    segs = [s for s in path.split("/") if s]
    if len(segs) >= 2 and segs[0] == "api":
        group, version, rest = "", segs[1], segs[2:]
    elif len(segs) >= 3 and segs[0] == "apis":
        group, version, rest = segs[1], segs[2], segs[3:]
    else:
        return None
    if not rest:
        return None
    namespace = None
    if rest[0] == "namespaces" and len(rest) >= 3:
        candidate = registry.lookup(group, version, rest[2])
        if candidate is not None and candidate.namespaced:
            namespace, rest = rest[1], rest[2:]
    plural = rest[0]
    name = rest[1] if len(rest) > 1 else ""
    sub = "/".join(rest[2:]) if len(rest) > 2 else ""
    return Target(group, version, registry.lookup(group, version, plural), plural, namespace, name, sub)
