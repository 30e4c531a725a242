"""Defaults the real API server fills in for built-in kinds, where clients read them back. Pure.

Only the fields our components and kubectl look at: a Secret's type, replicas of workload controllers, a
Job's completions/parallelism/backoffLimit, a Pod's restartPolicy and a Service's type.
"""
from __future__ import annotations

from typing import Any


def apply(group: str, plural: str, obj: dict[str, Any]) -> None:
    if (group, plural) == ("", "secrets"):
        if not obj.get("type"):
            obj["type"] = "Opaque"
        return
    spec = obj.get("spec")
    if not isinstance(spec, dict):
        return
    if (group, plural) in (("apps", "deployments"), ("apps", "replicasets"), ("apps", "statefulsets")):
        spec.setdefault("replicas", 1)
    elif (group, plural) == ("batch", "jobs"):
        if spec.get("completions") is None and spec.get("parallelism") is None:
            spec["completions"] = 1
        spec.setdefault("parallelism", 1)
        spec.setdefault("backoffLimit", 6)
        spec.setdefault("suspend", False)
    elif (group, plural) == ("", "pods"):
        spec.setdefault("restartPolicy", "Always")
    elif (group, plural) == ("", "services"):
        spec.setdefault("type", "ClusterIP")
