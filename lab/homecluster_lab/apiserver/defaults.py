"""Defaults the real API server fills in for built-in kinds, where clients read them back. Pure.

Only the fields our components and kubectl look at: a Secret's type, replicas of workload controllers, a
Job's completions/parallelism/backoffLimit, a Pod's restartPolicy and a Service's type. And the reverse: a
built-in field whose Go type omits its zero value (`omitempty`) is not stored when a write sets it to zero.
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


# (group, plural) -> spec fields a write leaves out when false (Go's omitempty): the cordon is lifted by a patch
# setting `unschedulable: false`, which kube-apiserver does not store
OMIT_FALSE: dict[tuple[str, str], tuple[str, ...]] = {("", "nodes"): ("unschedulable",)}


def omit_empty(group: str, plural: str, obj: dict[str, Any]) -> None:
    spec = obj.get("spec")
    if not isinstance(spec, dict):
        return
    for name in OMIT_FALSE.get((group, plural), ()):
        if spec.get(name) is False:
            del spec[name]
